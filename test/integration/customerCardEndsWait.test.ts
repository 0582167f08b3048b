import { createTestMerchant, startPaymentStack, type PaymentStack, type TestMerchant } from '../helpers/stack';
import { call, eventually } from '../helpers/http';
import { sleep, subscriptionClient } from '../helpers/subscriptions';
import { newId } from '../../src/ids';

/**
 * PRODUCT.md, "Customers and payment methods": a customer's subscription whose fallback round left
 * no card "waits for a new card"; a new card of the customer ends that wait at once (decision
 * 0088): an attach, or a new default. The waiting invoice is charged once with the customer's card
 * at that moment; a subscription not waiting for a card is not charged by it.
 */
describe("a customer's new card ends the wait for a new card (sandbox, Temporal, PostgreSQL, 1 s billing day)", () => {
  let stack: PaymentStack;
  let merchant: TestMerchant;
  let subs: ReturnType<typeof subscriptionClient>;
  let seq = 0;
  const ext = (what: string) => `${what}-${Date.now()}-${++seq}`;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  type Body = Record<string, any>;
  const api = (method: string, path: string, body?: unknown) =>
    call<Body>(stack.api.baseUrl, method, path, merchant.auth, body);
  const newCustomer = async () => {
    const res = await api('POST', '/customers', { externalId: ext('cust'), email: 'ada@example.com', name: 'Ada' });
    expect(res.status).toBe(200);
    return res.body as { id: string };
  };
  const attach = async (customerId: string, cardToken: string) => {
    const res = await api('POST', `/customers/${customerId}/payment-methods`, { cardToken });
    expect(res.status).toBe(200);
    return res.body.id as string;
  };
  const create = (body: Record<string, unknown>) => subs.create({ customer: undefined, ...body });
  /**
   * A plan whose first renewal comes `days` (seconds here) after the start and the next a minute
   * later: a test's charges after the renewal and its cancel never race a second renewal (nor an
   * overdue one caught up after a long wait for a card).
   */
  const renewingOnceAfter = (days: number) => ({
    phases: [{ name: 'first', iterations: 1, amount: 10, billingIntervalDays: days }],
    billingIntervalDays: 60,
    retryScheduleDays: [60],
  });
  /** The ledger's attempts on one invoice as [paymentMethodId, status], in order. */
  const attemptsOn = async (id: string, invoiceId: string) =>
    (await subs.captures(id))
      .filter((c) => c.metadata.invoiceId === invoiceId)
      .map((c) => [c.metadata.paymentMethodId, c.status]);

  /**
   * A customer whose only card hard-declines on renewal, and its subscription waiting for a new
   * card after the renewal's round (the email sent: the workflow is in its wait).
   */
  const waitingForCard = async () => {
    const customer = await newCustomer();
    const lost = await attach(customer.id, 'tok_renewal_lost_card');
    const res = await create({ customerId: customer.id, ...renewingOnceAfter(3) });
    expect(res.body).toMatchObject({ status: 'active' });
    const id = res.body.id as string;
    const pastDue = await subs.until(id, (s) => s.status === 'past_due', 15_000);
    expect(pastDue.latestInvoice).toMatchObject({ declineType: 'hard', failureCode: 'lost_card', nextAttemptAt: null });
    const renewal = (pastDue.latestInvoice as { id: string }).id;
    await eventually(
      async () => subs.mail(id).filter((e) => /A new card is needed/.test(e.subject)),
      (l) => l.length === 1,
    );
    expect(await attemptsOn(id, renewal)).toEqual([[lost, 'failed']]);
    return { customer, lost, id, renewal };
  };

  /** The renewal paid by `card`, once; the lost card charged once on it and never again. */
  const paidOnceWith = async (w: Awaited<ReturnType<typeof waitingForCard>>, card: string) => {
    const active = await subs.until(w.id, (s) => s.status === 'active', 10_000);
    await subs.cancel(w.id);
    expect(active.latestInvoice).toMatchObject({ id: w.renewal, status: 'paid' });
    await sleep(1000);
    expect(await attemptsOn(w.id, w.renewal)).toEqual([
      [w.lost, 'failed'],
      [card, 'succeeded'],
    ]);
    // The lost card: its first charge (on session) and the renewal's decline, nothing since.
    expect((await stack.ledger('capture', w.lost, 'paymentMethodId')).map((c) => c.status)).toEqual([
      'succeeded',
      'failed',
    ]);
    expect(await stack.ledger('capture', card, 'paymentMethodId')).toEqual([
      expect.objectContaining({ status: 'succeeded', metadata: expect.objectContaining({ invoiceId: w.renewal }) }),
    ]);
  };

  beforeAll(async () => {
    stack = await startPaymentStack('customer-card-ends-wait', { billingDaySeconds: 1 });
    merchant = await createTestMerchant(stack.orm, 'Customer card ends wait merchant');
    subs = subscriptionClient(stack, merchant);
  });
  afterAll(() => stack.close());

  it('an attach charges the waiting invoice at once with the new card, once', async () => {
    const w = await waitingForCard();
    const good = await attach(w.customer.id, 'tok_success');
    await paidOnceWith(w, good);
    // The card that recovered the invoice is the default now (the lost one, hard-declined, was).
    expect((await api('GET', `/customers/${w.customer.id}`)).body).toMatchObject({ defaultPaymentMethodId: good });
  });

  it('a card saved from a payment (saveCardEnabled) charges the waiting invoice at once, once', async () => {
    const w = await waitingForCard();
    const pay = await api('POST', '/payments', {
      amount: 25,
      currency: 'usd',
      externalId: ext('pay'),
      customerId: w.customer.id,
      cardToken: 'tok_success',
      saveCardEnabled: true,
    });
    expect(pay.body).toMatchObject({ status: 'succeeded' });
    const list = await eventually(
      () => api('GET', `/customers/${w.customer.id}/payment-methods`),
      (r) => (r.body.paymentMethods as unknown[]).length === 2,
    );
    const saved = (list.body.paymentMethods as Array<{ id: string }>)[0]!.id;
    expect(saved).not.toBe(w.lost);
    await paidOnceWith(w, saved);
  });

  it('a new default (PATCH) charges the waiting invoice at once with it, once', async () => {
    const w = await waitingForCard();
    // A usable card the round never saw and no one told the subscription of: written as an
    // earlier release, which sent no signal, would have left it.
    const quiet = newId('paymentMethod');
    await stack.orm.em.fork().execute(
      `insert into payment_methods (id, merchant_id, environment, customer_id, processor, provider_reference,
         created_at, updated_at)
       select ?, merchant_id, environment, id, 'sandbox', 'tok_success', now(), now() from customers where id = ?`,
      [quiet, w.customer.id],
    );
    await sleep(1500);
    expect((await subs.get(w.id)).body).toMatchObject({ status: 'past_due' });
    const patched = await api('PATCH', `/customers/${w.customer.id}`, { defaultPaymentMethodId: quiet });
    expect(patched).toMatchObject({ status: 200, body: { defaultPaymentMethodId: quiet } });
    await paidOnceWith(w, quiet);
  });

  it("a card added by the setup page's webhook charges the waiting invoice at once, once", async () => {
    const w = await waitingForCard();
    const setup = await api('POST', `/customers/${w.customer.id}/payment-methods/setup`, {});
    expect(setup.status).toBe(200);
    const paid = await fetch(`${setup.body.redirectUrl as string}/pay`, { method: 'POST' });
    expect(paid.status).toBeLessThan(400);
    await paidOnceWith(w, setup.body.paymentMethodId as string);
  });

  it('the first invoice: waiting after its own card hard-declined, an attach charges the new card, never the lost one again', async () => {
    const customer = await newCustomer();
    // The create's own card (no method of the customer's): declined hard on the first charge; the
    // customer has no card for a round, so the invoice waits for a new card.
    const res = await create({
      customerId: customer.id,
      cardToken: 'tok_lost_card',
      billingIntervalDays: 30,
      retryScheduleDays: [60],
    });
    const id = res.body.id as string;
    const pastDue = await subs.until(id, (b) => b.status === 'past_due', 15_000);
    expect(pastDue.latestInvoice).toMatchObject({ declineType: 'hard', nextAttemptAt: null });
    const first = (pastDue.latestInvoice as { id: string }).id;
    await eventually(
      async () => subs.mail(id).filter((e) => /A new card is needed/.test(e.subject)),
      (l) => l.length === 1,
    );
    const good = await attach(customer.id, 'tok_success');
    const active = await subs.until(id, (b) => b.status === 'active', 10_000);
    await subs.cancel(id);
    expect(active.latestInvoice).toMatchObject({ id: first, status: 'paid' });
    await sleep(1000);
    // The lost card once (no method: no paymentMethodId), then the new card once.
    expect(await attemptsOn(id, first)).toEqual([
      [undefined, 'failed'],
      [good, 'succeeded'],
    ]);
  });

  it("a subscription left with no card (the customer's only card hard-declined by another of its subscriptions) waits for a new card: nothing sent, an attach charges it at once", async () => {
    const customer = await newCustomer();
    const lost = await attach(customer.id, 'tok_renewal_lost_card');
    const created = [
      await create({ customerId: customer.id, ...renewingOnceAfter(3) }),
      // Renews well after the first (a loaded machine may delay the first's renewal by seconds).
      await create({ customerId: customer.id, ...renewingOnceAfter(15) }),
    ];
    expect(created.map((r) => r.body.status)).toEqual(['active', 'active']);
    const [first, second] = created.map((r) => r.body.id as string) as [string, string];
    // The first renews first: its round hard-declines the card, the customer's only one.
    const firstPastDue = await subs.until(first, (s) => s.status === 'past_due', 15_000);
    expect(firstPastDue.latestInvoice).toMatchObject({ declineType: 'hard', failureCode: 'lost_card' });
    // The second finds no card to charge: nothing sent, and it waits as a hard decline does.
    const secondPastDue = await subs.until(second, (s) => s.status === 'past_due', 30_000);
    expect(secondPastDue.latestInvoice).toMatchObject({
      status: 'open',
      declineType: 'hard',
      failureCode: 'no_card',
      nextAttemptAt: null,
    });
    const renewals = [firstPastDue, secondPastDue].map((v) => (v.latestInvoice as { id: string }).id);
    await eventually(
      async () => subs.mail(second).filter((e) => /A new card is needed/.test(e.subject)),
      (l) => l.length === 1,
    );
    expect(subs.mail(second).filter((e) => /Payment failed/.test(e.subject))).toEqual([]);
    expect(await attemptsOn(second, renewals[1]!)).toEqual([]);

    const good = await attach(customer.id, 'tok_success');
    for (const id of [first, second]) {
      expect((await subs.until(id, (s) => s.status === 'active', 10_000)).latestInvoice).toMatchObject({
        status: 'paid',
      });
      await subs.cancel(id);
    }
    await sleep(1000);
    expect(await attemptsOn(first, renewals[0]!)).toEqual([
      [lost, 'failed'],
      [good, 'succeeded'],
    ]);
    expect(await attemptsOn(second, renewals[1]!)).toEqual([[good, 'succeeded']]);
    // The lost card: the two first charges and the first renewal's decline, nothing since.
    expect((await stack.ledger('capture', lost, 'paymentMethodId')).map((c) => c.status)).toEqual([
      'succeeded',
      'succeeded',
      'failed',
    ]);
  });

  it('a subscription not waiting for a card is not charged by an attach (active, or retrying a soft decline)', async () => {
    const customer = await newCustomer();
    const good = await attach(customer.id, 'tok_success');
    const active = await create({ customerId: customer.id, billingIntervalDays: 30 });
    expect(active.body).toMatchObject({ status: 'active' });
    const activeId = active.body.id as string;

    const poorCustomer = await newCustomer();
    const poor = await attach(poorCustomer.id, 'tok_renewal_insufficient_funds');
    const retrying = await create({ customerId: poorCustomer.id, ...renewingOnceAfter(3) });
    const retryingId = retrying.body.id as string;
    const pastDue = await subs.until(retryingId, (s) => s.status === 'past_due', 15_000);
    expect(pastDue.latestInvoice).toMatchObject({ declineType: 'soft', nextAttemptAt: expect.any(String) });
    const renewal = (pastDue.latestInvoice as { id: string }).id;

    const another = await attach(customer.id, 'tok_success');
    const rescue = await attach(poorCustomer.id, 'tok_success');
    await sleep(2000);
    expect((await subs.captures(activeId)).map((c) => [c.metadata.paymentMethodId, c.status])).toEqual([
      [good, 'succeeded'],
    ]);
    expect(await stack.ledger('capture', another, 'paymentMethodId')).toEqual([]);
    // The soft decline's retry is due later (its schedule): nothing charged at once.
    expect(await attemptsOn(retryingId, renewal)).toEqual([[poor, 'failed']]);
    expect(await stack.ledger('capture', rescue, 'paymentMethodId')).toEqual([]);
    expect((await subs.get(retryingId)).body).toMatchObject({ status: 'past_due' });
    await subs.cancel(activeId);
    await subs.cancel(retryingId);
  });
});
