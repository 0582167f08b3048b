import {
  createTestMerchant,
  startPaymentStack,
  type LedgerEntry,
  type PaymentStack,
  type TestMerchant,
} from '../helpers/stack';
import { call, eventually } from '../helpers/http';
import { mismatchShown as mismatchOf } from '../helpers/mismatch';

/**
 * One provider account serves every merchant: a refund's reference_id (the merchant's
 * externalId) is unique per merchant only, so the provider dedupes refunds per payment
 * transaction and we find ours again by our refund id (the idempotency key), trusting a found
 * refund only when its transaction, amount and currency are ours.
 */
describe('refund reconciliation across merchants', () => {
  let stack: PaymentStack;
  let merchantA: TestMerchant;
  let merchantB: TestMerchant;
  let seq = 0;
  const ext = (p: string) => `${p}-${Date.now()}-${++seq}`;

  const pay = async (merchant: TestMerchant, amount: number) => {
    const res = await call(stack.api.baseUrl, 'POST', '/payments', merchant.auth, {
      amount,
      currency: 'USD',
      externalId: ext('p'),
      customer: { email: 'c@example.com' },
      cardToken: 'tok_success',
    });
    expect(res.body.status).toBe('succeeded');
    return { paymentId: res.body.id as string, txn: res.body.providerTransactionId as string };
  };
  const refund = (merchant: TestMerchant, paymentId: string, body: Record<string, unknown>) =>
    call(stack.api.baseUrl, 'POST', `/payments/${paymentId}/refund`, merchant.auth, body);
  const entries = async () => ((await stack.sandbox('/_admin/ledger')) as { entries: LedgerEntry[] }).entries;

  const mismatchShown = (workflowId: string) => mismatchOf(stack.api.client, workflowId);

  beforeAll(async () => {
    stack = await startPaymentStack('refund-reconciliation');
    merchantA = await createTestMerchant(stack.orm, 'Merchant A');
    merchantB = await createTestMerchant(stack.orm, 'Merchant B');
  });
  afterEach(() => stack.sandbox('/_admin/faults', {}));
  afterAll(() => stack.close());

  it("merchant B reusing merchant A's refund externalId gets its own refund", async () => {
    const a = await pay(merchantA, 10);
    const b = await pay(merchantB, 10);
    const externalId = ext('shared');

    const refundA = await refund(merchantA, a.paymentId, { externalId, amount: 4 });
    const refundB = await refund(merchantB, b.paymentId, { externalId, amount: 4 });
    expect(refundA.status).toBe(200);
    expect(refundB.status).toBe(200);
    expect(refundA.body).toMatchObject({ status: 'succeeded', failureCode: null, paymentAmountRefunded: 4 });
    expect(refundB.body).toMatchObject({ status: 'succeeded', failureCode: null, paymentAmountRefunded: 4 });
    expect(refundB.body.providerRefundId).toEqual(expect.stringMatching(/^rf_/));
    expect(refundB.body.providerRefundId).not.toBe(refundA.body.providerRefundId);

    const shared = (await entries()).filter((e) => e.type === 'refund' && e.reference === externalId);
    expect(shared).toEqual([
      expect.objectContaining({
        status: 'succeeded',
        amount: 4,
        paymentTransactionId: a.txn,
        idempotencyKey: refundA.body.id,
        transactionId: refundA.body.providerRefundId,
      }),
      expect.objectContaining({
        status: 'succeeded',
        amount: 4,
        paymentTransactionId: b.txn,
        idempotencyKey: refundB.body.id,
        transactionId: refundB.body.providerRefundId,
      }),
    ]);
  });

  it('a provider refund under our key that is not ours is never settled from; the workflow shows why', async () => {
    const ours = await pay(merchantA, 10);
    // Someone else refunds the whole capture first, so the provider refuses our attempt...
    expect(
      (
        await stack.provider('/v1/refunds', {
          paymentId: ours.txn,
          amount: 10,
          currency: 'USD',
          reference_id: ext('other'),
        })
      ).status,
    ).toBe(200);
    // ...and a transaction of someone else's to refund under our key later.
    const otherPayment = await stack.provider(
      '/v1/payments',
      { amount: 5, currency: 'USD', mode: 'card', cardToken: 'tok_success' },
      ext('other-payment'),
    );
    const otherTxn = ((await otherPayment.json()) as { id: string }).id;

    // The refusal never reaches us (timeout), so the workflow has to reconcile.
    await stack.sandbox('/_admin/faults', { refunds: 'timeout' });
    const externalId = ext('r');
    const res = await refund(merchantA, ours.paymentId, { externalId, amount: 3 });
    expect(res.status).toBe(200);
    expect(res.body.status).toBe('pending');
    const refundId = res.body.id as string;

    // Under our key the provider now holds a refund of another transaction and amount (the
    // answer is held by the timeout fault; the ledger shows when it is recorded).
    await stack
      .provider(
        '/v1/refunds',
        { paymentId: otherTxn, amount: 1, currency: 'USD', reference_id: externalId },
        refundId,
        AbortSignal.timeout(300),
      )
      .catch(() => undefined);
    await eventually(entries, (all) => all.some((e) => e.idempotencyKey === refundId));
    await stack.sandbox('/_admin/faults', {});

    const pending = await mismatchShown(`refund-${refundId}`);
    expect(pending.activityType?.name).toBe('reconcileProviderRefund');
    expect(pending.lastFailure?.message).toContain(refundId);

    const after = await call(stack.api.baseUrl, 'GET', `/refunds/${refundId}`, merchantA.auth);
    expect(after.body).toMatchObject({ status: 'pending', providerRefundId: null, failureCode: null });
    const payment = await call(stack.api.baseUrl, 'GET', `/payments/${ours.paymentId}`, merchantA.auth);
    expect(payment.body).toMatchObject({ status: 'succeeded', amountRefunded: 0, amountRefundable: 7 });
    // Nothing of ours was refunded at the provider: only the two refunds made by others.
    const refunds = (await entries()).filter((e) => e.type === 'refund');
    expect(refunds.filter((e) => e.paymentTransactionId === ours.txn)).toEqual([
      expect.objectContaining({ amount: 10, idempotencyKey: null }),
    ]);
    expect(refunds.filter((e) => e.idempotencyKey === refundId)).toEqual([
      expect.objectContaining({ amount: 1, paymentTransactionId: otherTxn, status: 'succeeded' }),
    ]);

    // An operator's decision, not the test's: stop the workflow that keeps asking.
    await stack.api.client.workflow.getHandle(`refund-${refundId}`).terminate('test over');
  });

  it('a provider payment under our key with another amount is never applied; the workflow shows why', async () => {
    // The provider refuses the token, but the answer never reaches us: the workflow reconciles.
    await stack.sandbox('/_admin/faults', { payments: 'timeout' });
    const res = await call(stack.api.baseUrl, 'POST', '/payments', merchantA.auth, {
      amount: 10,
      currency: 'USD',
      externalId: ext('p'),
      customer: { email: 'c@example.com' },
      cardToken: 'tok_not_issued',
    });
    expect(res.status).toBe(503);
    const paymentId = (res.body.details as { payment: { id: string } }).payment.id;

    // Under our key the provider now holds a capture of another amount.
    await stack
      .provider(
        '/v1/payments',
        { amount: 4, currency: 'USD', mode: 'card', cardToken: 'tok_success' },
        paymentId,
        AbortSignal.timeout(300),
      )
      .catch(() => undefined);
    await eventually(entries, (all) => all.some((e) => e.idempotencyKey === paymentId));
    await stack.sandbox('/_admin/faults', {});

    const pending = await mismatchShown(`payment-${paymentId}`);
    expect(pending.activityType?.name).toBe('reconcileProviderPayment');
    expect(pending.lastFailure?.message).toContain(paymentId);
    const after = await call(stack.api.baseUrl, 'GET', `/payments/${paymentId}`, merchantA.auth);
    expect(after.body).toMatchObject({ status: 'created', providerTransactionId: null, failureCode: null });

    await stack.api.client.workflow.getHandle(`payment-${paymentId}`).terminate('test over');
  });

  it('a payment attempt refused as a conflict (another request under our key) is reconciled, never discarded', async () => {
    // The first attempt finds the provider down: nothing is charged, the payment waits for a retry.
    await stack.sandbox('/_admin/faults', { payments: 'unavailable' });
    const body = {
      amount: 10,
      currency: 'USD',
      externalId: ext('p'),
      customer: { email: 'c@example.com' },
      cardToken: 'tok_success',
    };
    const first = await call(stack.api.baseUrl, 'POST', '/payments', merchantA.auth, body);
    expect(first.status).toBe(503);
    expect(first.body.code).toBe('provider_unavailable');
    const paymentId = (first.body.details as { payment: { id: string } }).payment.id;

    // Then, the provider back, someone else charges 4.00 under our key.
    await stack.sandbox('/_admin/faults', {});
    const other = await stack.provider(
      '/v1/payments',
      { amount: 4, currency: 'USD', mode: 'card', cardToken: 'tok_success' },
      paymentId,
    );
    expect(other.status).toBe(200);

    // The merchant's retry: the provider refuses our request as a reused key. It may have charged
    // under that key, so the payment is neither discarded nor answered as a rejection.
    const retry = await call(stack.api.baseUrl, 'POST', '/payments', merchantA.auth, body);
    expect(retry.status).toBe(503);
    expect(retry.body).toMatchObject({
      code: 'provider_unavailable',
      details: { payment: { id: paymentId, status: 'created' } },
    });
    const pending = await mismatchShown(`payment-${paymentId}`);
    expect(pending.activityType?.name).toBe('reconcileProviderPayment');
    expect(pending.lastFailure?.message).toContain(paymentId);
    const after = await call(stack.api.baseUrl, 'GET', `/payments/${paymentId}`, merchantA.auth);
    expect(after.status).toBe(200);
    expect(after.body).toMatchObject({ status: 'created', providerTransactionId: null, failureCode: null });
    // Under our key the ledger holds only the other 4.00: nothing of ours was charged.
    expect((await entries()).filter((e) => e.idempotencyKey === paymentId)).toEqual([
      expect.objectContaining({ type: 'capture', amount: 4, status: 'succeeded' }),
    ]);

    await stack.api.client.workflow.getHandle(`payment-${paymentId}`).terminate('test over');
  });
});
