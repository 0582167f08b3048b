import { createTestMerchant, startPaymentStack, type PaymentStack, type TestMerchant } from '../helpers/stack';
import { call, eventually } from '../helpers/http';

describe('payments end to end (sandbox, Temporal, PostgreSQL)', () => {
  let stack: PaymentStack;
  let merchant: TestMerchant;
  let seq = 0;
  const ext = () => `order-${Date.now()}-${++seq}`;
  const create = (body: Record<string, unknown>, auth = merchant.auth) =>
    call(stack.api.baseUrl, 'POST', '/payments', auth, body);
  const get = (id: string, auth = merchant.auth) => call(stack.api.baseUrl, 'GET', `/payments/${id}`, auth);
  const capturesOf = (paymentId: string) => stack.ledger('capture', paymentId);
  const base = { amount: 12.34, currency: 'usd', customer: { email: 'buyer@example.com', name: 'Buyer' } };

  beforeAll(async () => {
    stack = await startPaymentStack('payments');
    merchant = await createTestMerchant(stack.orm, 'Payments merchant');
  });
  afterAll(() => stack.close());

  it('token flow: tok_success answers succeeded with the provider transaction, captured once', async () => {
    const res = await create({ ...base, externalId: ext(), cardToken: 'tok_success' });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      id: expect.stringMatching(/^pay_/),
      amount: 12.34,
      amountRefunded: 0,
      amountRefundable: 12.34,
      currency: 'USD',
      status: 'succeeded',
      processor: 'sandbox',
      providerTransactionId: expect.stringMatching(/^txn_/),
      redirectUrl: null,
    });
    const captures = await capturesOf(res.body.id as string);
    expect(captures).toEqual([
      expect.objectContaining({ status: 'succeeded', amount: 12.34, currency: 'USD', idempotencyKey: res.body.id }),
    ]);
    expect((await get(res.body.id as string)).body).toEqual(res.body);

    // Operators find it in the Temporal UI by merchant and externalId.
    const described = await stack.api.client.workflow.getHandle(`payment-${res.body.id as string}`).describe();
    expect(described.searchAttributes).toMatchObject({
      MerchantId: [merchant.merchantId],
      ExternalId: [res.body.externalId],
    });
  });

  it.each([
    ['tok_decline', 'card_declined'],
    ['tok_insufficient_funds', 'insufficient_funds'],
  ])('token flow: %s answers failed with %s', async (cardToken, failureCode) => {
    const res = await create({ ...base, externalId: ext(), cardToken });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ status: 'failed', failureCode, amountRefundable: 0 });
  });

  it('a bad token is 400 invalid_card_token and leaves no payment behind', async () => {
    const externalId = ext();
    const res = await create({ ...base, externalId, cardToken: 'tok_nonsense' });
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ code: 'invalid_card_token' });
    // The externalId is still free: a corrected request with another amount is not a conflict.
    const again = await create({ ...base, amount: 5, externalId, cardToken: 'tok_success' });
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ status: 'succeeded', amount: 5 });
  });

  it('hosted flow: created with redirectUrl, then succeeded when the customer pays', async () => {
    const res = await create({ ...base, externalId: ext() });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      status: 'created',
      redirectUrl: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+\/checkout\/txn_[0-9a-f]+$/),
    });
    const pay = await fetch(`${res.body.redirectUrl}/pay`, { method: 'POST' });
    expect(pay.status).toBeLessThan(400);
    const paid = await eventually(
      () => get(res.body.id as string),
      (r) => r.body.status !== 'created',
    );
    expect(paid.body).toMatchObject({ status: 'succeeded', providerTransactionId: expect.stringMatching(/^txn_/) });
    expect(await capturesOf(res.body.id as string)).toHaveLength(1);
  });

  it('hosted flow: failed when the customer declines', async () => {
    const res = await create({ ...base, externalId: ext() });
    await fetch(`${res.body.redirectUrl}/decline`, { method: 'POST' });
    const done = await eventually(
      () => get(res.body.id as string),
      (r) => r.body.status !== 'created',
    );
    expect(done.body).toMatchObject({ status: 'failed', failureCode: 'card_declined' });
  });
});
