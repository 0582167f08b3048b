import {
  createTestMerchant,
  startPaymentStack,
  startTestApi,
  type PaymentStack,
  type TestApi,
  type TestMerchant,
} from '../helpers/stack';
import { call, eventually, type ErrorBody } from '../helpers/http';
import { subscriptionClient } from '../helpers/subscriptions';

/**
 * Per-merchant quotas on long-lived work (issue 44 item 10, decision 0079): open hosted payments,
 * live test subscriptions, refunds per payment. Over one: 429 `quota_exceeded`; a repeat of a
 * request that created its record answers that record; a record that finishes frees its slot.
 * Small limits through the API's settings, on the real stack (PostgreSQL, Temporal, sandbox).
 */
describe('per-merchant quotas', () => {
  let stack: PaymentStack;
  /** A second API with its own connection pool and Temporal client: another API process. */
  let second: TestApi;
  const quotas = { openHostedPayments: 5, liveTestSubscriptions: 3, refundsPerPayment: 3 };
  let seq = 0;
  const ext = (what: string) => `${what}-${Date.now()}-${++seq}`;
  const base = { amount: 10, currency: 'usd', customer: { email: 'buyer@example.com', name: 'Buyer' } };
  const createPayment = (merchant: TestMerchant, body: Record<string, unknown>, api = stack.api) =>
    call(api.baseUrl, 'POST', '/payments', merchant.auth, { ...base, ...body });

  beforeAll(async () => {
    stack = await startPaymentStack('quotas', { quotas });
    second = await startTestApi({ providers: stack.providers, settings: { taskQueue: stack.taskQueue, quotas } });
  });
  afterAll(async () => {
    await second.close();
    await stack.close();
  });

  it('open hosted payments: of 20 concurrent creates on two API processes exactly the limit succeed; a repeat answers its payment; a paid one frees a slot', async () => {
    const merchant = await createTestMerchant(stack.orm, 'Hosted quota merchant');
    const ids = Array.from({ length: 20 }, () => ext('hosted'));
    const results = await Promise.all(
      ids.map((externalId, i) => createPayment(merchant, { externalId }, i % 2 === 0 ? stack.api : second)),
    );
    expect(results.map((r) => r.status).sort()).toEqual([...Array(5).fill(200), ...Array(15).fill(429)]);
    for (const refused of results.filter((r) => r.status === 429)) {
      expect(refused.body as unknown as ErrorBody).toEqual({
        code: 'quota_exceeded',
        message: expect.any(String),
        details: { quota: 'open_hosted_payments', limit: 5, current: 5 },
      });
    }
    // Written as every payment is (the quota's insert is a statement of its own).
    const kept = results.find((r) => r.status === 200)!.body;
    expect(kept).toMatchObject({ status: 'created', amount: 10, currency: 'USD', metadata: null });
    expect(Math.abs(Date.parse(kept.createdAt as string) - Date.now())).toBeLessThan(60_000);
    expect(Date.parse(kept.expiresAt as string) - Date.parse(kept.createdAt as string)).toBe(86_400_000);
    // Token payments are not hosted: never counted.
    expect((await createPayment(merchant, { externalId: ext('token'), cardToken: 'tok_success' })).body).toMatchObject({
      status: 'succeeded',
    });
    // A repeat of a created one (same externalId) answers it, never 429.
    const okIndex = results.findIndex((r) => r.status === 200);
    const repeat = await createPayment(merchant, { externalId: ids[okIndex] });
    expect(repeat.status).toBe(200);
    expect(repeat.body.id).toBe(results[okIndex]!.body.id);
    // Another merchant has its own quota.
    const other = await createTestMerchant(stack.orm, 'Hosted quota other merchant');
    const odd = { note: `it's ? $1 "quoted" \\ ü` };
    const otherPayment = await createPayment(other, {
      externalId: ext('other'),
      metadata: odd,
      description: "O'Brien?",
    });
    expect([otherPayment.status, otherPayment.body.metadata, otherPayment.body.description]).toEqual([
      200,
      odd,
      "O'Brien?",
    ]);

    // The customer pays one: its slot frees.
    const paid = results[okIndex]!.body;
    expect((await fetch(`${paid.redirectUrl as string}/pay`, { method: 'POST' })).status).toBeLessThan(400);
    await eventually(
      () => call(stack.api.baseUrl, 'GET', `/payments/${paid.id as string}`, merchant.auth),
      (r) => r.body.status === 'succeeded',
    );
    expect((await createPayment(merchant, { externalId: ext('after') })).status).toBe(200);
    expect((await createPayment(merchant, { externalId: ext('full') })).status).toBe(429);
  });

  it('live test subscriptions: of 6 concurrent creates exactly the limit succeed; a cancelled one frees a slot', async () => {
    const merchant = await createTestMerchant(stack.orm, 'Subscription quota merchant');
    const subs = subscriptionClient(stack, merchant);
    const results = await Promise.all(Array.from({ length: 6 }, () => subs.create({ cardToken: 'tok_success' })));
    expect(results.map((r) => r.status).sort()).toEqual([200, 200, 200, 429, 429, 429]);
    expect(results.find((r) => r.status === 429)!.body).toMatchObject({
      code: 'quota_exceeded',
      details: { quota: 'live_test_subscriptions', limit: 3, current: 3 },
    });
    const first = results.find((r) => r.status === 200)!.body;
    const again = await subs.create({ cardToken: 'tok_success', externalId: first.externalId });
    expect([again.status, again.body.id]).toEqual([200, first.id]);
    expect((await subs.cancel(first.id as string)).body).toMatchObject({ status: 'cancelled' });
    expect((await subs.create({ cardToken: 'tok_success' })).status).toBe(200);
    expect((await subs.create({ cardToken: 'tok_success' })).status).toBe(429);
  });

  it('refunds per payment: the one over the limit is 429 quota_exceeded; a replay still answers; the list stays bounded', async () => {
    const merchant = await createTestMerchant(stack.orm, 'Refund quota merchant');
    const payment = await createPayment(merchant, { externalId: ext('refunded'), cardToken: 'tok_success' });
    expect(payment.body).toMatchObject({ status: 'succeeded' });
    const id = payment.body.id as string;
    const refund = (externalId: string) =>
      call(stack.api.baseUrl, 'POST', `/payments/${id}/refund`, merchant.auth, { externalId, amount: 1 });
    const refundIds = [ext('r'), ext('r'), ext('r')];
    for (const externalId of refundIds) {
      expect((await refund(externalId)).body).toMatchObject({ status: 'succeeded' });
    }
    const over = await refund(ext('r'));
    expect([over.status, over.body]).toEqual([
      429,
      {
        code: 'quota_exceeded',
        message: expect.any(String),
        details: { quota: 'refunds_per_payment', limit: 3, current: 3 },
      },
    ]);
    const replay = await refund(refundIds[0]!);
    expect(replay.status).toBe(200);
    const list = await call(stack.api.baseUrl, 'GET', `/payments/${id}/refunds`, merchant.auth);
    expect((list.body.refunds as unknown[]).length).toBe(3);
    expect((await call(stack.api.baseUrl, 'GET', `/payments/${id}`, merchant.auth)).body).toMatchObject({
      amountRefunded: 3,
      status: 'partially_refunded',
    });
  });
});
