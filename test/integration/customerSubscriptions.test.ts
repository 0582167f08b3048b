import { createTestMerchant, startPaymentStack, type PaymentStack, type TestMerchant } from '../helpers/stack';
import { call, eventually } from '../helpers/http';
import { startCallbackReceiver } from '../helpers/callbackReceiver';
import { sleep, subscriptionClient } from '../helpers/subscriptions';

/**
 * PRODUCT.md, "Customers and payment methods": a subscription naming `customerId` (decision 0087).
 * Its first charge is the named card or the customer's default (the hosted authorization when it
 * has none); each later charge uses the customer's default at that moment.
 */
describe('subscriptions by customerId (sandbox, Temporal, PostgreSQL, 1 s billing day)', () => {
  const DAY_MS = 1000;
  let stack: PaymentStack;
  let merchant: TestMerchant;
  let other: TestMerchant;
  let subs: ReturnType<typeof subscriptionClient>;
  let seq = 0;
  const ext = (what: string) => `${what}-${Date.now()}-${++seq}`;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  type Body = Record<string, any>;
  const api = (method: string, path: string, body?: unknown, auth = merchant.auth) =>
    call<Body>(stack.api.baseUrl, method, path, auth, body);
  const newCustomer = async (auth = merchant.auth) => {
    const res = await api(
      'POST',
      '/customers',
      { externalId: ext('cust'), email: 'ada@example.com', name: 'Ada' },
      auth,
    );
    expect(res.status).toBe(200);
    return res.body as { id: string; externalId: string };
  };
  const attach = async (customerId: string, cardToken: string) => {
    const res = await api('POST', `/customers/${customerId}/payment-methods`, { cardToken });
    expect(res.status).toBe(200);
    return res.body.id as string;
  };
  /** A create by customerId: no `customer` in the body. */
  const create = (body: Record<string, unknown>) => subs.create({ customer: undefined, ...body });

  beforeAll(async () => {
    stack = await startPaymentStack('customer-subscriptions', { billingDaySeconds: DAY_MS / 1000 });
    merchant = await createTestMerchant(stack.orm, 'Customer subscriptions merchant');
    other = await createTestMerchant(stack.orm, 'Other customer subscriptions merchant');
    subs = subscriptionClient(stack, merchant);
  });
  afterAll(() => stack.close());

  it('refuses customer with customerId, paymentMethodId without customerId or with cardToken; 404 across merchants', async () => {
    const customer = await newCustomer();
    const pm = await attach(customer.id, 'tok_success');
    const both = await subs.create({ customerId: customer.id });
    expect(both.status).toBe(400);
    expect(both.body).toMatchObject({ code: 'validation_error' });
    expect(JSON.stringify(both.body.details)).toContain('customerId');
    const pmAlone = await subs.create({ paymentMethodId: pm });
    expect(pmAlone).toMatchObject({ status: 400, body: { code: 'validation_error' } });
    const pmAndToken = await create({ customerId: customer.id, paymentMethodId: pm, cardToken: 'tok_success' });
    expect(pmAndToken).toMatchObject({ status: 400, body: { code: 'validation_error' } });

    const theirs = await newCustomer(other.auth);
    expect(await create({ customerId: theirs.id })).toMatchObject({ status: 404, body: { code: 'not_found' } });
    expect(await create({ customerId: 'cus_nope' })).toMatchObject({ status: 404, body: { code: 'not_found' } });
    const stranger = await newCustomer();
    expect(await create({ customerId: stranger.id, paymentMethodId: pm })).toMatchObject({
      status: 404,
      body: { code: 'not_found' },
    });
    // Nothing was charged by any of these.
    expect(await stack.ledger('capture', pm, 'paymentMethodId')).toEqual([]);
  });

  it("charges the customer's default at once (token flow); the ledger names the method; customer repeats the customer", async () => {
    const customer = await newCustomer();
    const pm = await attach(customer.id, 'tok_success');
    const res = await create({ customerId: customer.id, billingIntervalDays: 30 });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      status: 'active',
      redirectUrl: null,
      customer: { email: 'ada@example.com', name: 'Ada', externalId: customer.externalId },
      customerId: customer.id,
    });
    expect((await subs.get(res.body.id as string)).body).toMatchObject({ customerId: customer.id });
    const captures = await subs.captures(res.body.id as string);
    expect(captures).toEqual([
      expect.objectContaining({
        status: 'succeeded',
        metadata: expect.objectContaining({ paymentMethodId: pm, subscriptionId: res.body.id }),
      }),
    ]);

    // A named method (not the default) is the first charge's card.
    const second = await attach(customer.id, 'tok_success');
    const named = await create({ customerId: customer.id, paymentMethodId: second, billingIntervalDays: 30 });
    expect(named.body).toMatchObject({ status: 'active' });
    expect((await subs.captures(named.body.id as string)).map((c) => c.metadata.paymentMethodId)).toEqual([second]);
  });

  it("without a default: the hosted authorization; the authorized card becomes the customer's default", async () => {
    const customer = await newCustomer();
    const res = await create({ customerId: customer.id, billingIntervalDays: 2 });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      status: 'pending',
      redirectUrl: expect.stringMatching(/^https?:\/\//),
      customer: { email: 'ada@example.com', externalId: customer.externalId },
    });
    const id = res.body.id as string;
    expect(await subs.captures(id)).toEqual([]);

    // The customer authorizes a card on the page: kept once, as the customer's default.
    expect((await fetch(`${res.body.redirectUrl as string}/pay`, { method: 'POST' })).status).toBeLessThan(400);
    await subs.until(id, (s) => s.status === 'active', 10_000);
    const methods = (await api('GET', `/customers/${customer.id}/payment-methods`)).body.paymentMethods as Body[];
    expect(methods).toHaveLength(1);
    const pm = methods[0]!.id as string;
    expect(methods[0]).toMatchObject({ customerId: customer.id, processor: 'sandbox' });
    expect((await api('GET', `/customers/${customer.id}`)).body).toMatchObject({ defaultPaymentMethodId: pm });
    // Its charges name the method: the first, and the renewal that follows the default.
    await subs.untilPaid(id, 2, 10_000);
    expect(await stack.ledger('capture', pm, 'paymentMethodId')).toHaveLength(2);
    await subs.cancel(id);
    expect((await api('GET', `/customers/${customer.id}/payment-methods`)).body.paymentMethods).toHaveLength(1);
  });

  it("each renewal charges the customer's default at that moment", async () => {
    const customer = await newCustomer();
    const first = await attach(customer.id, 'tok_success');
    const second = await attach(customer.id, 'tok_success');
    const res = await create({ customerId: customer.id, billingIntervalDays: 2 });
    expect(res.body).toMatchObject({ status: 'active' });
    const id = res.body.id as string;
    await subs.untilPaid(id, 2);
    const patched = await api('PATCH', `/customers/${customer.id}`, { defaultPaymentMethodId: second });
    expect(patched).toMatchObject({ status: 200, body: { defaultPaymentMethodId: second } });
    const paidBefore = (await subs.invoices(id)).filter((i) => i.status === 'paid').length;
    await subs.untilPaid(id, paidBefore + 3, 20_000);
    await subs.cancel(id);
    await sleep(200);

    const invoices = await subs.invoices(id);
    const byInvoice = new Map(
      (await subs.captures(id))
        .filter((c) => c.status === 'succeeded')
        .map((c) => [c.metadata.invoiceId, c.metadata.paymentMethodId]),
    );
    const methods = invoices.filter((i) => i.status === 'paid').map((i) => byInvoice.get(i.id));
    // The first two on the first default; the last two (after the PATCH) on the new one.
    expect(methods.slice(0, 2)).toEqual([first, first]);
    expect(methods.slice(-2)).toEqual([second, second]);
    expect(methods.every((m) => m === first || m === second)).toBe(true);
  });

  /** The ledger's attempts on one invoice as [paymentMethodId, status], in order. */
  const attemptsOn = async (id: string, invoiceId: string) =>
    (await subs.captures(id))
      .filter((c) => c.metadata.invoiceId === invoiceId)
      .map((c) => [c.metadata.paymentMethodId, c.status]);

  it('a hard decline charges the other methods at once, newest first; the first capture becomes the default', async () => {
    const customer = await newCustomer();
    const lost = await attach(customer.id, 'tok_renewal_lost_card'); // the default: the first attached
    const good = await attach(customer.id, 'tok_success');
    const poor = await attach(customer.id, 'tok_renewal_insufficient_funds'); // newest
    const res = await create({ customerId: customer.id, billingIntervalDays: 2 });
    expect(res.body).toMatchObject({ status: 'active' });
    const id = res.body.id as string;
    await subs.untilPaid(id, 3, 20_000);
    await subs.cancel(id);
    const invoices = (await subs.invoices(id)).filter((i) => i.status === 'paid');
    // The first on the default (on session); the renewal: lost (hard), the newest (soft), then good.
    expect(await attemptsOn(id, invoices[0]!.id)).toEqual([[lost, 'succeeded']]);
    expect(await attemptsOn(id, invoices[1]!.id)).toEqual([
      [lost, 'failed'],
      [poor, 'failed'],
      [good, 'succeeded'],
    ]);
    // good is the default now; lost is never charged again.
    expect(await attemptsOn(id, invoices[2]!.id)).toEqual([[good, 'succeeded']]);
    expect((await api('GET', `/customers/${customer.id}`)).body.defaultPaymentMethodId).toBe(good);
    expect(invoices[1]).toMatchObject({ attempts: 1, declineType: null });
    // A captured round sends no payment-failed or new-card email.
    expect(subs.mail(id).filter((e) => /failed|new card/i.test(e.subject))).toHaveLength(0);
  });

  it('a round where every method declines: one charge_failed event and one email; each method charged once', async () => {
    const receiver = await startCallbackReceiver();
    try {
      const customer = await newCustomer();
      const first = await attach(customer.id, 'tok_renewal_lost_card');
      const second = await attach(customer.id, 'tok_renewal_lost_card');
      const res = await create({ customerId: customer.id, billingIntervalDays: 2, callbackUrl: receiver.url });
      const id = res.body.id as string;
      const pastDue = await subs.until(id, (s) => s.status === 'past_due', 15_000);
      const renewal = pastDue.latestInvoice as { id: string };
      expect(pastDue.latestInvoice).toMatchObject({
        declineType: 'hard',
        failureCode: 'lost_card',
        nextAttemptAt: null,
      });
      expect(await attemptsOn(id, renewal.id)).toEqual([
        [first, 'failed'],
        [second, 'failed'],
      ]);
      await eventually(
        async () => subs.mail(id).filter((e) => /A new card is needed/.test(e.subject)),
        (l) => l.length === 1,
      );
      await sleep(1500);
      expect(receiver.received.filter((r) => r.json.type === 'subscription.charge_failed')).toHaveLength(1);
      expect(subs.mail(id).filter((e) => /A new card is needed|Payment failed/.test(e.subject))).toHaveLength(1);
      expect(await attemptsOn(id, renewal.id)).toHaveLength(2);
      await subs.cancel(id);
    } finally {
      await receiver.close();
    }
  });

  it('a customer on a test clock: its subscription takes the clock, another clock is 400, renewals follow the clock', async () => {
    const T = Date.parse('2027-03-01T00:00:00.000Z');
    const clock = await api('POST', '/test-clocks', { frozenTime: new Date(T).toISOString() });
    const otherClock = await api('POST', '/test-clocks', { frozenTime: new Date(T).toISOString() });
    expect([clock.status, otherClock.status]).toEqual([200, 200]);
    const customer = await api('POST', '/customers', {
      externalId: ext('clock-cust'),
      email: 'clock@example.com',
      testClock: clock.body.id,
    });
    expect(customer.body).toMatchObject({ testClock: clock.body.id });
    const pm = await attach(customer.body.id, 'tok_success');

    const refused = await create({ customerId: customer.body.id, testClock: otherClock.body.id });
    expect(refused.status).toBe(400);
    expect(refused.body).toMatchObject({
      code: 'validation_error',
      details: { issues: [expect.objectContaining({ path: 'testClock', code: 'test_clock_mismatch' })] },
    });
    expect(await stack.ledger('capture', pm, 'paymentMethodId')).toEqual([]);

    const res = await create({ customerId: customer.body.id, billingIntervalDays: 30 });
    expect(res.status).toBe(200);
    // Clock time: created at the clock's frozen time, the period 30 clock days.
    expect(res.body).toMatchObject({
      status: 'active',
      testClock: clock.body.id,
      createdAt: new Date(T).toISOString(),
      currentPeriodEnd: new Date(T + 30 * 86_400_000).toISOString(),
    });
    // Naming the same clock is the same thing.
    const same = await create({ customerId: customer.body.id, testClock: clock.body.id, billingIntervalDays: 30 });
    expect(same).toMatchObject({ status: 200, body: { testClock: clock.body.id } });
    const clockNow = await api('GET', `/test-clocks/${clock.body.id}`);
    expect(clockNow.body).toMatchObject({ subscriptionCount: 2 });
    // Real time passes: nothing renews until the clock moves.
    await sleep(2500);
    expect(await stack.ledger('capture', pm, 'paymentMethodId')).toHaveLength(2);
    const advanced = await api('POST', `/test-clocks/${clock.body.id}/advance`, {
      frozenTime: new Date(T + 31 * 86_400_000).toISOString(),
    });
    expect(advanced.status).toBe(200);
    await eventually(
      () => api('GET', `/test-clocks/${clock.body.id}`).then((r) => r.body),
      (c) => c.status === 'ready',
      60_000,
      100,
    );
    const renewed = await subs.get(res.body.id as string);
    expect(renewed.body).toMatchObject({ currentPeriodStart: new Date(T + 30 * 86_400_000).toISOString() });
    expect(await stack.ledger('capture', pm, 'paymentMethodId')).toHaveLength(4);
    await subs.cancel(res.body.id as string);
    await subs.cancel(same.body.id as string);
  });

  it("keeps the customer's last card while a subscription charges it (409 payment_method_in_use)", async () => {
    const customer = await newCustomer();
    const first = await attach(customer.id, 'tok_success');
    const res = await create({ customerId: customer.id, billingIntervalDays: 30 });
    expect(res.body).toMatchObject({ status: 'active' });
    const id = res.body.id as string;

    const refused = await api('DELETE', `/customers/${customer.id}/payment-methods/${first}`);
    expect(refused.status).toBe(409);
    expect(refused.body).toMatchObject({
      code: 'payment_method_in_use',
      details: { paymentMethodId: first, subscriptionIds: [id] },
    });
    const kept = await api('GET', `/customers/${customer.id}/payment-methods`);
    expect(kept.body.paymentMethods.map((m: { id: string }) => m.id)).toEqual([first]);

    // With another card the first may go; the new one is then the last.
    const second = await attach(customer.id, 'tok_success');
    expect((await api('DELETE', `/customers/${customer.id}/payment-methods/${first}`)).status).toBe(200);
    expect(await api('DELETE', `/customers/${customer.id}/payment-methods/${second}`)).toMatchObject({
      status: 409,
      body: { code: 'payment_method_in_use' },
    });
    // Once the subscription is cancelled nothing charges it any more.
    await subs.cancel(id);
    expect((await api('DELETE', `/customers/${customer.id}/payment-methods/${second}`)).status).toBe(200);
    // One capture in all (the first period), nothing by the refused deletes.
    expect(await stack.ledger('capture', first, 'paymentMethodId')).toHaveLength(1);
  });
});
