import {
  basicAuth,
  createTestMerchant,
  startPaymentStack,
  type PaymentStack,
  type TestMerchant,
} from '../helpers/stack';
import { call, eventually } from '../helpers/http';
import { createKey } from '../../src/domain/merchants';

/**
 * PRODUCT.md, "Customers and payment methods": customers, cards the processor verifies and keeps,
 * the default method, and payments by `customerId` (decision 0087).
 */
describe('customers and payment methods (sandbox, Temporal, PostgreSQL)', () => {
  let stack: PaymentStack;
  let merchant: TestMerchant;
  let other: TestMerchant;
  let liveAuth: string;
  let seq = 0;
  const ext = (what = 'cust') => `${what}-${Date.now()}-${++seq}`;
  const api = (method: string, path: string, body?: unknown, auth = merchant.auth) =>
    call(stack.api.baseUrl, method, path, auth, body);
  const newCustomer = async (fields: Record<string, unknown> = {}) => {
    const res = await api('POST', '/customers', {
      externalId: ext(),
      email: 'ada@example.com',
      name: 'Ada',
      ...fields,
    });
    expect(res.status).toBe(200);
    return res.body as { id: string; externalId: string; defaultPaymentMethodId: string | null };
  };
  const attach = (customerId: string, cardToken: string, auth = merchant.auth) =>
    api('POST', `/customers/${customerId}/payment-methods`, { cardToken }, auth);

  beforeAll(async () => {
    stack = await startPaymentStack('customers');
    merchant = await createTestMerchant(stack.orm, 'Customers merchant');
    other = await createTestMerchant(stack.orm, 'Other customers merchant');
    const live = await createKey(stack.orm.em.fork(), merchant.merchantId, { environment: 'live', role: 'merchant' });
    liveAuth = basicAuth(live.apiKey.publicKey, live.secretKey);
  });
  afterAll(() => stack.close());

  it('creates a customer; a replay answers it; other fields are external_id_conflict', async () => {
    const externalId = ext();
    const body = { externalId, email: 'grace@example.com', name: 'Grace', metadata: { plan: 'gold' } };
    const res = await api('POST', '/customers', body);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      id: expect.stringMatching(/^cus_[0-9A-HJKMNP-TV-Z]{26}$/),
      externalId,
      email: 'grace@example.com',
      name: 'Grace',
      metadata: { plan: 'gold' },
      defaultPaymentMethodId: null,
      testClock: null,
      createdAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
      updatedAt: expect.stringMatching(/Z$/),
    });
    const replay = await api('POST', '/customers', body);
    expect(replay.status).toBe(200);
    expect(replay.body).toEqual(res.body);
    const conflict = await api('POST', '/customers', { ...body, email: 'other@example.com' });
    expect(conflict.status).toBe(400);
    expect(conflict.body).toMatchObject({ code: 'external_id_conflict' });
    // The same externalId in another merchant is another customer.
    const elsewhere = await api('POST', '/customers', body, other.auth);
    expect(elsewhere.status).toBe(200);
    expect(elsewhere.body.id).not.toBe(res.body.id);

    expect((await api('GET', `/customers/${res.body.id as string}`)).body).toEqual(res.body);
  });

  it('concurrent creates of one externalId make one customer', async () => {
    const body = { externalId: ext(), email: 'race@example.com' };
    const answers = await Promise.all(Array.from({ length: 5 }, () => api('POST', '/customers', body)));
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200, 200]);
    expect(new Set(answers.map((a) => a.body.id)).size).toBe(1);
  });

  it('bad input is a clear 400', async () => {
    for (const body of [
      {},
      { externalId: '' },
      { externalId: 'x'.repeat(256) },
      { externalId: ext(), email: 'not-an-email' },
      { externalId: ext(), unknown: 1 },
      { externalId: ext(), metadata: { k: 1 } },
    ]) {
      const res = await api('POST', '/customers', body);
      expect([JSON.stringify(body), res.status, res.body.code]).toEqual([
        JSON.stringify(body),
        400,
        'validation_error',
      ]);
    }
    const customer = await newCustomer();
    const noToken = await api('POST', `/customers/${customer.id}/payment-methods`, {});
    expect([noToken.status, noToken.body.code]).toEqual([400, 'validation_error']);
    const patch = await api('PATCH', `/customers/${customer.id}`, { externalId: 'changed' });
    expect([patch.status, patch.body.code]).toEqual([400, 'validation_error']);
  });

  it('lists customers newest first with cursors, filtered by email and externalId', async () => {
    const email = `${ext('list')}@example.com`;
    const made = [];
    for (let i = 0; i < 3; i++) made.push(await newCustomer({ email }));
    const first = await api('GET', `/customers?email=${encodeURIComponent(email)}&limit=2`);
    expect(first.status).toBe(200);
    expect((first.body.customers as Array<{ id: string }>).map((c) => c.id)).toEqual([made[2]!.id, made[1]!.id]);
    expect(first.body.nextCursor).toEqual(expect.any(String));
    const second = await api(
      'GET',
      `/customers?email=${encodeURIComponent(email)}&limit=2&cursor=${encodeURIComponent(first.body.nextCursor as string)}`,
    );
    expect((second.body.customers as Array<{ id: string }>).map((c) => c.id)).toEqual([made[0]!.id]);
    expect(second.body.nextCursor).toBeNull();

    const byExternalId = await api('GET', `/customers?externalId=${encodeURIComponent(made[1]!.externalId)}`);
    expect(byExternalId.body).toEqual({ customers: [expect.objectContaining({ id: made[1]!.id })], nextCursor: null });

    // A cursor of another filter set, a bad limit or an unknown filter: 400.
    const wrong = await api('GET', `/customers?limit=2&cursor=${encodeURIComponent(first.body.nextCursor as string)}`);
    expect([wrong.status, wrong.body.code]).toEqual([400, 'validation_error']);
    for (const query of ['limit=0', 'limit=101', 'status=active']) {
      const res = await api('GET', `/customers?${query}`);
      expect([query, res.status]).toEqual([query, 400]);
    }
  });

  it('attaches cards: the first becomes the default, each attach is a new method, no ledger entry', async () => {
    const customer = await newCustomer();
    const first = await attach(customer.id, 'tok_success');
    expect(first.status).toBe(200);
    expect(first.body).toEqual({
      id: expect.stringMatching(/^pm_[0-9A-HJKMNP-TV-Z]{26}$/),
      customerId: customer.id,
      processor: 'sandbox',
      card: { brand: 'visa', last4: '4242', expMonth: 12, expYear: expect.any(Number) },
      createdAt: expect.stringMatching(/Z$/),
    });
    const again = await attach(customer.id, 'tok_success');
    expect(again.status).toBe(200);
    expect(again.body.id).not.toBe(first.body.id);
    const renewal = await attach(customer.id, 'tok_renewal_lost_card');
    expect(renewal.status).toBe(200);

    const read = await api('GET', `/customers/${customer.id}`);
    expect(read.body.defaultPaymentMethodId).toBe(first.body.id);
    const list = await api('GET', `/customers/${customer.id}/payment-methods`);
    expect(list.status).toBe(200);
    expect((list.body.paymentMethods as Array<{ id: string }>).map((m) => m.id)).toEqual([
      renewal.body.id,
      again.body.id,
      first.body.id,
    ]);
    const { entries } = (await stack.sandbox('/_admin/ledger')) as { entries: Array<{ metadata: object }> };
    expect(entries.filter((e) => JSON.stringify(e.metadata).includes(customer.id))).toEqual([]);
  });

  it.each([
    ['tok_decline', 'card_declined'],
    ['tok_lost_card', 'lost_card'],
    ['tok_expired_card', 'expired_card'],
  ])('a declined verification of %s is 402 card_declined (%s); nothing is kept', async (cardToken, declineCode) => {
    const customer = await newCustomer();
    const res = await attach(customer.id, cardToken);
    expect(res.status).toBe(402);
    expect(res.body).toMatchObject({ code: 'card_declined', details: { declineCode } });
    expect((await api('GET', `/customers/${customer.id}/payment-methods`)).body).toEqual({ paymentMethods: [] });
    expect((await api('GET', `/customers/${customer.id}`)).body.defaultPaymentMethodId).toBeNull();
  });

  it('an unknown token is 400 invalid_card_token', async () => {
    const customer = await newCustomer();
    const res = await attach(customer.id, 'tok_nonsense');
    expect([res.status, res.body.code]).toEqual([400, 'invalid_card_token']);
  });

  it('PATCH changes fields and the default; DELETE of the default leaves none', async () => {
    const customer = await newCustomer();
    const a = (await attach(customer.id, 'tok_success')).body.id as string;
    const b = (await attach(customer.id, 'tok_success')).body.id as string;
    const patched = await api('PATCH', `/customers/${customer.id}`, {
      name: 'Ada Lovelace',
      metadata: { tier: '2' },
      defaultPaymentMethodId: b,
    });
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({
      name: 'Ada Lovelace',
      email: 'ada@example.com',
      metadata: { tier: '2' },
      defaultPaymentMethodId: b,
    });

    const deleted = await api('DELETE', `/customers/${customer.id}/payment-methods/${b}`);
    expect(deleted.status).toBe(200);
    expect(deleted.body).toMatchObject({ id: b, customerId: customer.id, deleted: true });
    expect((await api('GET', `/customers/${customer.id}`)).body.defaultPaymentMethodId).toBeNull();
    const list = await api('GET', `/customers/${customer.id}/payment-methods`);
    expect((list.body.paymentMethods as Array<{ id: string }>).map((m) => m.id)).toEqual([a]);
    const twice = await api('DELETE', `/customers/${customer.id}/payment-methods/${b}`);
    expect(twice.status).toBe(404);
    const deletedAsDefault = await api('PATCH', `/customers/${customer.id}`, { defaultPaymentMethodId: b });
    expect(deletedAsDefault.status).toBe(404);
    // The next attach of a customer without a default becomes it.
    const c = (await attach(customer.id, 'tok_success')).body.id as string;
    expect((await api('GET', `/customers/${customer.id}`)).body.defaultPaymentMethodId).toBe(c);
  });

  it("another merchant's or environment's customer or payment method is 404", async () => {
    const customer = await newCustomer();
    const pm = (await attach(customer.id, 'tok_success')).body.id as string;
    const theirs = (await api('POST', '/customers', { externalId: ext() }, other.auth)).body.id as string;
    const theirPm = (await attach(theirs, 'tok_success', other.auth)).body.id as string;
    for (const auth of [other.auth, liveAuth]) {
      expect((await api('GET', `/customers/${customer.id}`, undefined, auth)).status).toBe(404);
      expect((await api('PATCH', `/customers/${customer.id}`, { name: 'x' }, auth)).status).toBe(404);
      expect((await api('GET', `/customers/${customer.id}/payment-methods`, undefined, auth)).status).toBe(404);
      expect((await attach(customer.id, 'tok_success', auth)).status).toBe(404);
      expect((await api('DELETE', `/customers/${customer.id}/payment-methods/${pm}`, undefined, auth)).status).toBe(
        404,
      );
    }
    const list = await api(
      'GET',
      `/customers?externalId=${encodeURIComponent(customer.externalId)}`,
      undefined,
      liveAuth,
    );
    expect(list.body).toEqual({ customers: [], nextCursor: null });
    // Another customer's method, named with this customer: 404 everywhere.
    expect((await api('DELETE', `/customers/${customer.id}/payment-methods/${theirPm}`)).status).toBe(404);
    expect((await api('PATCH', `/customers/${customer.id}`, { defaultPaymentMethodId: theirPm })).status).toBe(404);
    for (const id of ['cus_nope', 'pay_01ARZ3NDEKTSV4RRFFQ69G5FAV']) {
      expect((await api('GET', `/customers/${id}`)).status).toBe(404);
    }
    // Nothing was charged by any of it.
    const { entries } = (await stack.sandbox('/_admin/ledger')) as { entries: Array<{ metadata: object }> };
    expect(entries.filter((e) => JSON.stringify(e.metadata).includes(pm))).toEqual([]);
  });

  it("a setup page: the customer enters a card there, the processor's webhook adds it (the default)", async () => {
    const customer = await newCustomer();
    const res = await api('POST', `/customers/${customer.id}/payment-methods/setup`, {});
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      redirectUrl: expect.stringMatching(/\/checkout\/txn_[0-9a-f]+$/),
      paymentMethodId: expect.stringMatching(/^pm_/),
    });
    expect((await api('GET', `/customers/${customer.id}/payment-methods`)).body).toEqual({ paymentMethods: [] });
    const paid = await fetch(`${res.body.redirectUrl as string}/pay`, { method: 'POST' });
    expect(paid.status).toBeLessThan(400);
    const list = await eventually(
      () => api('GET', `/customers/${customer.id}/payment-methods`),
      (r) => (r.body.paymentMethods as unknown[]).length > 0,
    );
    expect(list.body.paymentMethods).toEqual([
      expect.objectContaining({ id: res.body.paymentMethodId, customerId: customer.id, processor: 'sandbox' }),
    ]);
    expect((await api('GET', `/customers/${customer.id}`)).body.defaultPaymentMethodId).toBe(res.body.paymentMethodId);
    // No money moved for it; the card then pays.
    expect(await stack.ledger('capture', customer.id, 'customerId')).toEqual([]);
    const payment = await api('POST', '/payments', {
      amount: 3,
      currency: 'EUR',
      externalId: ext('pay'),
      customerId: customer.id,
    });
    expect(payment.body).toMatchObject({ status: 'succeeded', paymentMethodId: res.body.paymentMethodId });

    const unknown = await api('POST', '/customers/cus_01ARZ3NDEKTSV4RRFFQ69G5FAV/payment-methods/setup', {});
    expect(unknown.status).toBe(404);
    const extra = await api('POST', `/customers/${customer.id}/payment-methods/setup`, { cardToken: 'tok_success' });
    expect([extra.status, extra.body.code]).toEqual([400, 'validation_error']);
  });

  it('a customer on a test clock is dated at the clock’s time; live keys, other merchants’ clocks and a replay elsewhere refused', async () => {
    const frozenTime = '2031-01-15T10:00:00.000Z';
    const clock = await api('POST', '/test-clocks', { frozenTime, name: 'customers' });
    expect(clock.status).toBe(200);
    const clockId = clock.body.id as string;
    const externalId = ext();
    const created = await api('POST', '/customers', { externalId, email: 'clock@example.com', testClock: clockId });
    expect(created.status).toBe(200);
    expect(created.body).toMatchObject({ testClock: clockId, createdAt: frozenTime, updatedAt: frozenTime });
    // Read back and listed the same way; the clock holds subscriptions, not customers.
    expect((await api('GET', `/customers/${created.body.id as string}`)).body).toMatchObject({
      testClock: clockId,
      createdAt: frozenTime,
    });
    expect((await api('GET', `/test-clocks/${clockId}`)).body).toMatchObject({ subscriptionCount: 0 });
    // A replay answers it; the same externalId off the clock is a conflict on testClock.
    const replay = await api('POST', '/customers', { externalId, email: 'clock@example.com', testClock: clockId });
    expect(replay.body.id).toBe(created.body.id);
    const moved = await api('POST', '/customers', { externalId, email: 'clock@example.com' });
    expect(moved).toMatchObject({
      status: 400,
      body: { code: 'external_id_conflict', details: { field: 'testClock' } },
    });

    // Its changes are dated at the clock's time too: a PATCH, an attach after the clock moved.
    const patched = await api('PATCH', `/customers/${created.body.id as string}`, { name: 'Clocked' });
    expect(patched.body).toMatchObject({ name: 'Clocked', updatedAt: frozenTime });
    const later = '2031-02-15T10:00:00.000Z';
    expect((await api('POST', `/test-clocks/${clockId}/advance`, { frozenTime: later })).status).toBe(200);
    await eventually(
      () => api('GET', `/test-clocks/${clockId}`).then((r) => r.body),
      (c) => c.status === 'ready',
    );
    expect((await attach(created.body.id as string, 'tok_success')).status).toBe(200);
    expect((await api('GET', `/customers/${created.body.id as string}`)).body).toMatchObject({
      createdAt: frozenTime,
      updatedAt: later,
    });

    const live = await api('POST', '/customers', { externalId: ext(), testClock: clockId }, liveAuth);
    expect(live).toMatchObject({ status: 400, body: { code: 'validation_error' } });
    const foreign = await api('POST', '/customers', { externalId: ext(), testClock: clockId }, other.auth);
    expect(foreign).toMatchObject({ status: 404, body: { code: 'not_found' } });
    const malformed = await api('POST', '/customers', { externalId: ext(), testClock: 'nope' });
    expect(malformed).toMatchObject({ status: 404, body: { code: 'not_found' } });
  });

  describe('payments by customerId', () => {
    const amount = { amount: 25, currency: 'usd' };
    const pay = (body: Record<string, unknown>) =>
      api('POST', '/payments', { ...amount, externalId: ext('pay'), ...body });

    it('charges the default method (token flow); the ledger names it; customer repeats the customer', async () => {
      const customer = await newCustomer({ name: 'Ada', email: 'ada@example.com' });
      const pm = (await attach(customer.id, 'tok_success')).body.id as string;
      const res = await pay({ customerId: customer.id });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({
        status: 'succeeded',
        customerId: customer.id,
        paymentMethodId: pm,
        customer: { email: 'ada@example.com', name: 'Ada', externalId: customer.externalId },
      });
      const captures = await stack.ledger('capture', res.body.id as string);
      expect(captures).toEqual([
        expect.objectContaining({ status: 'succeeded', metadata: expect.objectContaining({ paymentMethodId: pm }) }),
      ]);

      // A repeat answers the payment, even after its method was deleted; nothing is charged again.
      expect((await api('DELETE', `/customers/${customer.id}/payment-methods/${pm}`)).status).toBe(200);
      const repeat = await api('POST', '/payments', {
        ...amount,
        externalId: res.body.externalId,
        customerId: customer.id,
      });
      expect(repeat.status).toBe(200);
      expect(repeat.body).toEqual(res.body);
      expect(await stack.ledger('capture', res.body.id as string)).toHaveLength(1);
      // A new payment now has no default: the hosted flow.
      expect((await pay({ customerId: customer.id })).body).toMatchObject({ status: 'created', paymentMethodId: null });
    });

    it('charges a named method; another customer’s method is 404, nothing charged', async () => {
      const customer = await newCustomer();
      await attach(customer.id, 'tok_success');
      const second = (await attach(customer.id, 'tok_insufficient_funds')).body.id as string;
      const res = await pay({ customerId: customer.id, paymentMethodId: second });
      expect(res.body).toMatchObject({ status: 'failed', failureCode: 'insufficient_funds', paymentMethodId: second });
      expect(await stack.ledger('capture', second, 'paymentMethodId')).toHaveLength(1);

      const stranger = await newCustomer();
      const externalId = ext('pay');
      const refused = await api('POST', '/payments', {
        ...amount,
        externalId,
        customerId: stranger.id,
        paymentMethodId: second,
      });
      expect([refused.status, refused.body.code]).toEqual([404, 'not_found']);
      expect((await api('GET', `/payments?externalId=${externalId}`)).body.payments).toEqual([]);
      expect(await stack.ledger('capture', second, 'paymentMethodId')).toHaveLength(1);
    });

    it('customer and customerId together, or neither, or a method without a customer: 400', async () => {
      const customer = await newCustomer();
      for (const body of [
        { customerId: customer.id, customer: { email: 'a@example.com' } },
        {},
        { customer: { email: 'a@example.com' }, paymentMethodId: 'pm_01ARZ3NDEKTSV4RRFFQ69G5FAV' },
        { customerId: customer.id, paymentMethodId: 'pm_01ARZ3NDEKTSV4RRFFQ69G5FAV', cardToken: 'tok_success' },
      ]) {
        const res = await pay(body);
        expect([JSON.stringify(body), res.status, res.body.code]).toEqual([
          JSON.stringify(body),
          400,
          'validation_error',
        ]);
      }
      const elsewhere = await api(
        'POST',
        '/payments',
        { ...amount, externalId: ext('pay'), customerId: customer.id },
        other.auth,
      );
      expect(elsewhere.status).toBe(404);
    });

    it('with a cardToken: the token flow with that card', async () => {
      const customer = await newCustomer();
      await attach(customer.id, 'tok_success');
      const res = await pay({ customerId: customer.id, cardToken: 'tok_decline' });
      expect(res.body).toMatchObject({ status: 'failed', failureCode: 'card_declined', paymentMethodId: null });
    });

    it('a new card token with saveCardEnabled is kept for the customer once it captures', async () => {
      const customer = await newCustomer();
      const res = await pay({ customerId: customer.id, cardToken: 'tok_success', saveCardEnabled: true });
      expect(res.body).toMatchObject({ status: 'succeeded', paymentMethodId: null, customerId: customer.id });
      const list = await eventually(
        () => api('GET', `/customers/${customer.id}/payment-methods`),
        (r) => (r.body.paymentMethods as unknown[]).length > 0,
      );
      expect(list.body.paymentMethods).toEqual([
        expect.objectContaining({ customerId: customer.id, card: expect.objectContaining({ last4: '4242' }) }),
      ]);
      const saved = (list.body.paymentMethods as Array<{ id: string }>)[0]!.id;
      expect((await api('GET', `/customers/${customer.id}`)).body.defaultPaymentMethodId).toBe(saved);
      // A declined one is not.
      const declined = await pay({ customerId: customer.id, cardToken: 'tok_decline', saveCardEnabled: true });
      expect(declined.body).toMatchObject({ status: 'failed' });
      expect((await api('GET', `/customers/${customer.id}/payment-methods`)).body.paymentMethods).toHaveLength(1);
    });

    it('without a default: the hosted flow', async () => {
      const customer = await newCustomer();
      const res = await pay({ customerId: customer.id });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ status: 'created', redirectUrl: expect.any(String), customerId: customer.id });
    });

    it('hosted with saveCardEnabled adds the card to the customer (the default when none)', async () => {
      const customer = await newCustomer();
      const res = await pay({ customerId: customer.id, saveCardEnabled: true });
      expect(res.body).toMatchObject({ status: 'created', redirectUrl: expect.any(String) });
      const paid = await fetch(`${res.body.redirectUrl as string}/pay`, { method: 'POST' });
      expect(paid.status).toBeLessThan(400);
      const list = await eventually(
        () => api('GET', `/customers/${customer.id}/payment-methods`),
        (r) => (r.body.paymentMethods as unknown[]).length > 0,
      );
      const [saved] = list.body.paymentMethods as Array<{ id: string }>;
      expect(list.body.paymentMethods).toEqual([
        expect.objectContaining({
          customerId: customer.id,
          processor: 'sandbox',
          card: expect.objectContaining({ last4: '4242' }),
        }),
      ]);
      expect((await api('GET', `/customers/${customer.id}`)).body.defaultPaymentMethodId).toBe(saved!.id);
      expect((await api('GET', `/payments/${res.body.id as string}`)).body.status).toBe('succeeded');

      // The saved card is then charged by default, off the page.
      const next = await pay({ customerId: customer.id });
      expect(next.body).toMatchObject({ status: 'succeeded', paymentMethodId: saved!.id });

      // With a default, saveCardEnabled still asks for the hosted page.
      const hosted = await pay({ customerId: customer.id, saveCardEnabled: true });
      expect(hosted.body).toMatchObject({ status: 'created', paymentMethodId: null });
    });
  });
});
