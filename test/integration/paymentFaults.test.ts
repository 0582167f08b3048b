import { createTestMerchant, startPaymentStack, type PaymentStack, type TestMerchant } from '../helpers/stack';
import { call, eventually } from '../helpers/http';

/**
 * Provider trouble (PRODUCT.md, Payments): what the merchant is told, and what is left behind,
 * checked against the sandbox's own ledger.
 */
describe('payments under provider faults', () => {
  let stack: PaymentStack;
  let merchant: TestMerchant;
  let seq = 0;
  const ext = () => `fault-${Date.now()}-${++seq}`;
  const body = (externalId: string) => ({
    amount: 20,
    currency: 'EUR',
    externalId,
    customer: { email: 'c@example.com' },
    cardToken: 'tok_success',
  });
  const create = (externalId: string) => call(stack.api.baseUrl, 'POST', '/payments', merchant.auth, body(externalId));
  const get = (id: string) => call(stack.api.baseUrl, 'GET', `/payments/${id}`, merchant.auth);
  const faults = (f: Record<string, unknown>) => stack.sandbox('/_admin/faults', f);
  const captures = (paymentId: string) => stack.ledger('capture', paymentId);

  beforeAll(async () => {
    stack = await startPaymentStack('faults');
    merchant = await createTestMerchant(stack.orm, 'Faults merchant');
  });
  afterEach(() => faults({}));
  afterAll(() => stack.close());

  it('unavailable on every try: 503, payment stays created, nothing captured; a repeat captures once', async () => {
    await faults({ payments: 'unavailable' });
    const externalId = ext();
    const res = await create(externalId);
    expect(res.status).toBe(503);
    expect(res.body).toMatchObject({
      code: 'provider_unavailable',
      details: { payment: { status: 'created', externalId } },
    });
    const paymentId = (res.body.details as { payment: { id: string } }).payment.id;
    expect(await captures(paymentId)).toHaveLength(0);
    expect((await get(paymentId)).body).toMatchObject({ status: 'created' });

    await faults({});
    const again = await create(externalId);
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ id: paymentId, status: 'succeeded' });
    expect(await captures(paymentId)).toEqual([expect.objectContaining({ status: 'succeeded' })]);
  });

  it('malformed answer: 502, then the workflow asks the provider and the payment follows; captured once', async () => {
    await faults({ payments: 'invalid' });
    const externalId = ext();
    const res = await create(externalId);
    expect(res.status).toBe(502);
    expect(res.body).toMatchObject({ code: 'provider_invalid_response', details: { payment: { status: 'created' } } });
    const paymentId = (res.body.details as { payment: { id: string } }).payment.id;
    // The provider did capture; our record waits until the provider can be asked.
    expect(await captures(paymentId)).toHaveLength(1);
    expect((await get(paymentId)).body).toMatchObject({ status: 'created' });

    await faults({});
    const settled = await eventually(
      () => get(paymentId),
      (r) => r.body.status !== 'created',
      30_000,
      250,
    );
    expect(settled.body).toMatchObject({ status: 'succeeded', providerTransactionId: expect.stringMatching(/^txn_/) });
    const repeat = await create(externalId);
    expect(repeat.body).toMatchObject({ id: paymentId, status: 'succeeded' });
    expect(await captures(paymentId)).toHaveLength(1);
  });

  it('no answer in time: 503, then reconciled to succeeded; captured once', async () => {
    await faults({ payments: 'timeout' });
    const externalId = ext();
    const res = await create(externalId);
    expect(res.status).toBe(503);
    expect(res.body).toMatchObject({ code: 'provider_unavailable', details: { payment: { status: 'created' } } });
    const paymentId = (res.body.details as { payment: { id: string } }).payment.id;
    // A repeat while the outcome is unknown does not try again: still 503, still one capture.
    const repeat = await create(externalId);
    expect(repeat.status).toBe(503);
    expect(await captures(paymentId)).toHaveLength(1);

    await faults({});
    const settled = await eventually(
      () => get(paymentId),
      (r) => r.body.status !== 'created',
      30_000,
      250,
    );
    expect(settled.body).toMatchObject({ status: 'succeeded' });
    expect(await captures(paymentId)).toHaveLength(1);
  });

  it('a slow provider within the wait still answers with the outcome', async () => {
    await faults({ latencyMs: 800 });
    const res = await create(ext());
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ status: 'succeeded' });
  });
});
