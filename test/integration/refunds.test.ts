import { createTestMerchant, startPaymentStack, type PaymentStack, type TestMerchant } from '../helpers/stack';
import { call, eventually } from '../helpers/http';
import { startCallbackReceiver } from '../helpers/callbackReceiver';
import { signingSecrets } from '../../src/domain/signingSecrets';
import { verify } from '../../src/providers/signature';

describe('refunds', () => {
  let stack: PaymentStack;
  let merchant: TestMerchant;
  let seq = 0;
  const ext = (p = 'r') => `${p}-${Date.now()}-${++seq}`;
  const pay = async (amount = 10, currency = 'USD', cardToken = 'tok_success') => {
    const res = await call(stack.api.baseUrl, 'POST', '/payments', merchant.auth, {
      amount,
      currency,
      externalId: ext('p'),
      customer: { email: 'c@example.com' },
      cardToken,
    });
    return res.body.id as string;
  };
  const refund = (paymentId: string, body: Record<string, unknown>, auth = merchant.auth) =>
    call(stack.api.baseUrl, 'POST', `/payments/${paymentId}/refund`, auth, body);
  const getPayment = (id: string) => call(stack.api.baseUrl, 'GET', `/payments/${id}`, merchant.auth);
  const list = (paymentId: string, auth = merchant.auth) =>
    call(stack.api.baseUrl, 'GET', `/payments/${paymentId}/refunds`, auth);
  const getRefund = (id: string, auth = merchant.auth) => call(stack.api.baseUrl, 'GET', `/refunds/${id}`, auth);
  const refundsInLedger = (paymentId: string) => stack.ledger('refund', paymentId);

  beforeAll(async () => {
    // Polling is slow here, so a pending refund settling quickly proves the webhook path.
    stack = await startPaymentStack('refunds', { refundPollInitialSeconds: 600 });
    merchant = await createTestMerchant(stack.orm, 'Refunds merchant');
  });
  afterEach(() => stack.sandbox('/_admin/faults', {}));
  afterAll(() => stack.close());

  it('partial then full refund: exact balances, statuses, every field of the Refund', async () => {
    const paymentId = await pay(10);
    const first = await refund(paymentId, { externalId: ext(), amount: 3.5, reason: 'damaged' });
    expect(first.status).toBe(200);
    expect(first.body).toEqual({
      id: expect.stringMatching(/^re_/),
      paymentId,
      externalId: expect.any(String),
      amount: 3.5,
      currency: 'USD',
      status: 'succeeded',
      failureCode: null,
      failureMessage: null,
      providerRefundId: expect.stringMatching(/^rf_/),
      paymentAmountRefunded: 3.5,
      paymentAmountRefundable: 6.5,
      reason: 'damaged',
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
    });
    expect((await getPayment(paymentId)).body).toMatchObject({
      status: 'partially_refunded',
      amountRefunded: 3.5,
      amountRefundable: 6.5,
    });

    const rest = await refund(paymentId, { externalId: ext() }); // omitted amount: the whole balance
    expect(rest.body).toMatchObject({
      status: 'succeeded',
      amount: 6.5,
      paymentAmountRefunded: 10,
      paymentAmountRefundable: 0,
    });
    expect((await getPayment(paymentId)).body).toMatchObject({
      status: 'refunded',
      amountRefunded: 10,
      amountRefundable: 0,
    });

    const listed = await list(paymentId);
    expect((listed.body.refunds as Array<{ id: string }>).map((r) => r.id)).toEqual([rest.body.id, first.body.id]);
    expect((await getRefund(first.body.id as string)).body).toMatchObject({
      id: first.body.id,
      status: 'succeeded',
      paymentAmountRefunded: 10,
    });
    expect((await refundsInLedger(paymentId)).map((e) => e.amount)).toEqual([3.5, 6.5]);
  });

  it('three refunds of 0.1 on 0.3 leave exactly 0 and the payment refunded', async () => {
    const paymentId = await pay(0.3);
    for (let i = 0; i < 3; i++)
      expect((await refund(paymentId, { externalId: ext(), amount: 0.1 })).body).toMatchObject({ status: 'succeeded' });
    expect((await getPayment(paymentId)).body).toMatchObject({
      status: 'refunded',
      amountRefunded: 0.3,
      amountRefundable: 0,
    });
    const more = await refund(paymentId, { externalId: ext(), amount: 0.01 });
    expect(more.status).toBe(409);
    expect(more.body).toMatchObject({ code: 'payment_not_refundable' });
  });

  it('rules in order: 404, replay, 400, 409 not refundable, 422 over balance', async () => {
    const paymentId = await pay(5);
    expect((await refund('pay_01M80J0M3F0AF909BAA7744V6V', { externalId: ext() })).status).toBe(404);
    expect((await refund('nonsense', { externalId: ext() })).status).toBe(404);
    const other = await createTestMerchant(stack.orm, 'Other');
    expect((await refund(paymentId, { externalId: ext() }, other.auth)).status).toBe(404);

    expect((await refund(paymentId, { amount: 1 })).body).toMatchObject({ code: 'validation_error' });
    expect((await refund(paymentId, { externalId: ext(), amount: 1.005 })).body).toMatchObject({
      code: 'validation_error',
      details: { issues: [expect.objectContaining({ path: 'amount' })] },
    });
    expect((await refund(paymentId, { externalId: ext(), amount: -1 })).status).toBe(400);
    expect((await refund(paymentId, { externalId: ext(), currency: 'EUR' })).body).toMatchObject({
      code: 'validation_error',
    });
    expect((await refund(paymentId, { externalId: ext(), currency: 'usd', amount: 1 })).body).toMatchObject({
      status: 'succeeded',
    });

    const over = await refund(paymentId, { externalId: ext(), amount: 4.01 });
    expect(over.status).toBe(422);
    expect(over.body).toMatchObject({ code: 'amount_exceeds_refundable', details: { amountRefundable: 4 } });

    const declined = await pay(5, 'USD', 'tok_decline');
    expect((await refund(declined, { externalId: ext() })).body).toMatchObject({ code: 'payment_not_refundable' });
  });

  it('replay: the same externalId returns the same refund; another amount or another payment is a conflict', async () => {
    const paymentId = await pay(8);
    const externalId = ext();
    const a = await refund(paymentId, { externalId, amount: 2 });
    const b = await refund(paymentId, { externalId, amount: 2 });
    const c = await refund(paymentId, { externalId });
    expect(b.body).toEqual(a.body);
    expect(c.body.id).toBe(a.body.id);
    expect((await refund(paymentId, { externalId, amount: 3 })).body).toMatchObject({ code: 'external_id_conflict' });
    const otherPayment = await pay(8);
    expect((await refund(otherPayment, { externalId, amount: 2 })).body).toMatchObject({
      code: 'external_id_conflict',
    });
    expect(await refundsInLedger(paymentId)).toHaveLength(1);
  });

  it('declined by the provider: failed with its code (200), balance released', async () => {
    const paymentId = await pay(4);
    await stack.sandbox('/_admin/faults', { refunds: 'fail' });
    const res = await refund(paymentId, { externalId: ext(), amount: 1 });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      status: 'failed',
      failureCode: 'insufficient_balance',
      paymentAmountRefunded: 0,
      paymentAmountRefundable: 4,
    });
    expect((await getPayment(paymentId)).body).toMatchObject({ status: 'succeeded', amountRefundable: 4 });
  });

  it('provider pending: answered pending, 409 for another refund meanwhile, settled by webhook', async () => {
    const paymentId = await pay(6);
    await stack.sandbox('/_admin/faults', { refunds: 'pending' });
    const externalId = ext();
    const res = await refund(paymentId, { externalId, amount: 2 });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ status: 'pending', paymentAmountRefunded: 0, paymentAmountRefundable: 4 });
    const blocked = await refund(paymentId, { externalId: ext(), amount: 1 });
    expect(blocked.status).toBe(409);
    expect(blocked.body).toMatchObject({ code: 'refund_in_flight', details: { refundId: res.body.id } });

    await stack.sandbox('/_admin/settle', { reference: externalId, status: 'succeeded' });
    const settled = await eventually(
      () => getRefund(res.body.id as string),
      (r) => r.body.status !== 'pending',
      10_000,
    );
    expect(settled.body).toMatchObject({ status: 'succeeded', paymentAmountRefunded: 2, paymentAmountRefundable: 4 });
    expect(await refundsInLedger(paymentId)).toEqual([
      expect.objectContaining({ status: 'succeeded', reference: externalId }),
    ]);
  });

  it('provider unavailable throughout: 503, refund failed (provider_unavailable), balance untouched', async () => {
    const paymentId = await pay(6);
    await stack.sandbox('/_admin/faults', { refunds: 'unavailable' });
    const res = await refund(paymentId, { externalId: ext(), amount: 2 });
    expect(res.status).toBe(503);
    expect(res.body).toMatchObject({
      code: 'provider_unavailable',
      details: { refund: { status: 'failed', failureCode: 'provider_unavailable', paymentAmountRefundable: 6 } },
    });
    expect(await refundsInLedger(paymentId)).toHaveLength(0);
    expect((await getPayment(paymentId)).body).toMatchObject({
      status: 'succeeded',
      amountRefunded: 0,
      amountRefundable: 6,
    });
  });

  it('malformed answer: 502, refund pending, then settled once the provider can be asked', async () => {
    const paymentId = await pay(6);
    await stack.sandbox('/_admin/faults', { refunds: 'invalid' });
    const res = await refund(paymentId, { externalId: ext(), amount: 2 });
    expect(res.status).toBe(502);
    const view = (res.body.details as { refund: { id: string; status: string } }).refund;
    expect(view.status).toBe('pending');
    expect((await getPayment(paymentId)).body).toMatchObject({ amountRefunded: 0, amountRefundable: 4 });
    await stack.sandbox('/_admin/faults', {});
    const settled = await eventually(
      () => getRefund(view.id),
      (r) => r.body.status !== 'pending',
      20_000,
      200,
    );
    expect(settled.body).toMatchObject({ status: 'succeeded', paymentAmountRefunded: 2 });
    expect(await refundsInLedger(paymentId)).toHaveLength(1);
  });

  it('no answer in time: pending (200), then recovered; refunded once', async () => {
    const paymentId = await pay(6);
    await stack.sandbox('/_admin/faults', { refunds: 'timeout' });
    const res = await refund(paymentId, { externalId: ext(), amount: 2 });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ status: 'pending' });
    await stack.sandbox('/_admin/faults', {});
    const settled = await eventually(
      () => getRefund(res.body.id as string),
      (r) => r.body.status !== 'pending',
      20_000,
      200,
    );
    expect(settled.body).toMatchObject({ status: 'succeeded' });
    expect(await refundsInLedger(paymentId)).toHaveLength(1);
    expect((await getPayment(paymentId)).body).toMatchObject({
      amountRefunded: 2,
      amountRefundable: 4,
      status: 'partially_refunded',
    });
  });

  it("sends signed refund and payment events to the payment's callbackUrl; the workflow is searchable by payment", async () => {
    const receiver = await startCallbackReceiver();
    try {
      const secret = (await signingSecrets(stack.orm.em.fork(), stack.providers.secrets, merchant.merchantId, 'test'))
        .current;
      const created = await call(stack.api.baseUrl, 'POST', '/payments', merchant.auth, {
        amount: 5,
        currency: 'USD',
        externalId: ext('p'),
        customer: { email: 'c@example.com' },
        cardToken: 'tok_success',
        callbackUrl: receiver.url,
      });
      const paymentId = created.body.id as string;
      const r = await refund(paymentId, { externalId: ext(), amount: 2 });
      await eventually(
        async () => receiver.received.length,
        (n) => n >= 3,
        15_000,
      );
      const types = receiver.received.map((c) => c.json.type);
      expect(types).toEqual(
        expect.arrayContaining(['payment.succeeded', 'refund.succeeded', 'payment.partially_refunded']),
      );
      const refundEvent = receiver.received.find((c) => c.json.type === 'refund.succeeded')!;
      expect(refundEvent.json.data).toEqual((await getRefund(r.body.id as string)).body);
      const paymentEvent = receiver.received.find((c) => c.json.type === 'payment.partially_refunded')!;
      expect(paymentEvent.json.data).toMatchObject({ id: paymentId, status: 'partially_refunded', amountRefunded: 2 });
      for (const c of receiver.received) expect(verify(secret, c.body, c.signature)).toBe(true);

      const described = await stack.api.client.workflow.getHandle(`refund-${r.body.id as string}`).describe();
      expect(described.searchAttributes).toMatchObject({ MerchantId: [merchant.merchantId], PaymentId: [paymentId] });
    } finally {
      await receiver.close();
    }
  });

  it('lists are scoped: another merchant gets 404 for the payment list and the refund', async () => {
    const paymentId = await pay(3);
    const r = await refund(paymentId, { externalId: ext(), amount: 1 });
    const other = await createTestMerchant(stack.orm, 'Nosy');
    expect((await list(paymentId, other.auth)).status).toBe(404);
    expect((await getRefund(r.body.id as string, other.auth)).status).toBe(404);
    expect((await getRefund('re_nonsense')).status).toBe(404);
    const fresh = await pay(3);
    expect((await list(fresh)).body).toEqual({ refunds: [] });
  });
});
