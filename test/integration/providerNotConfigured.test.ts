import { paymentRow } from '../helpers/records';
import { createPaymentGateway } from '../../src/temporal/paymentGateway';
import { call, eventually } from '../helpers/http';
import { paymentWorkflowId } from '../../workflows/paymentApi';
import { StuckKey } from '../../workflows/searchAttributes';
import { createTestMerchant, startPaymentStack, type PaymentStack, type TestMerchant } from '../helpers/stack';
import { subscriptionClient } from '../helpers/subscriptions';

/**
 * A record whose processor has no provider any more (its configuration was removed after it
 * was created) ends in a decided state, never in a workflow that fails or retries for ever:
 * nothing was sent, so the payment or refund fails with `provider_not_configured`, and a
 * subscription's charge is a declined attempt that follows the retry schedule. When an earlier
 * call under the record's key was sent, nothing is decided (it may have captured): the workflow
 * keeps asking, marked Stuck (decision 0059), until the provider is back.
 */
describe('records whose provider is no longer configured', () => {
  let stack: PaymentStack;
  let merchant: TestMerchant;

  beforeAll(async () => {
    stack = await startPaymentStack('noprovider', { billingDaySeconds: 1 });
    merchant = await createTestMerchant(stack.orm, 'Unconfigured merchant');
  });
  afterAll(() => stack.close());

  const setProcessor = (table: 'payments' | 'subscriptions', id: string) =>
    stack.orm.em.getConnection().execute(`update ${table} set processor = 'retired' where id = ?`, [id]);
  /** Whether the record says a provider call may have been sent (activities/providerCalls.ts). */
  const callMarked = async (table: 'payments' | 'refunds', id: string) => {
    const rows: Array<{ sent: boolean }> = await stack.orm.em
      .getConnection()
      .execute(`select provider_call_sent_at is not null as sent from ${table} where id = ?`, [id]);
    return rows[0]?.sent;
  };

  it('a payment attempt fails the payment (nothing charged) instead of failing its workflow', async () => {
    const em = stack.orm.em.fork();
    const payment = paymentRow(em, merchant.merchantId, {
      externalId: `retired-${Date.now()}`,
      processor: 'retired',
      amountMinor: 500,
      cardToken: 'tok_success',
      expiresAt: new Date(Date.now() + 3_600_000),
    });
    await em.flush();
    const payments = createPaymentGateway({
      client: stack.api.client,
      settings: { taskQueue: stack.taskQueue, callbackRetryInitialSeconds: 1, paymentWaitMs: 30_000 },
    });
    const outcome = await payments.submit(payment);
    expect(outcome).toEqual({ kind: 'settled' });
    const got = await call(stack.api.baseUrl, 'GET', `/payments/${payment.id}`, merchant.auth);
    expect(got.body).toMatchObject({ status: 'failed', failureCode: 'provider_not_configured' });
    expect(await stack.ledger('capture', payment.id)).toHaveLength(0);
    // The attempt's read marks the call as sent; with no provider no call was made, and the mark is gone.
    expect(await callMarked('payments', payment.id)).toBe(false);
  });

  it('a refund attempt fails the refund and releases the balance', async () => {
    const paid = await call(stack.api.baseUrl, 'POST', '/payments', merchant.auth, {
      amount: 9,
      currency: 'USD',
      externalId: `to-refund-${Date.now()}`,
      customer: { email: 'c@example.com' },
      cardToken: 'tok_success',
    });
    expect(paid.body.status).toBe('succeeded');
    const paymentId = paid.body.id as string;
    await setProcessor('payments', paymentId);
    const refund = await call(stack.api.baseUrl, 'POST', `/payments/${paymentId}/refund`, merchant.auth, {
      externalId: `rf-${Date.now()}`,
    });
    expect(refund.status).toBe(200);
    expect(refund.body).toMatchObject({
      status: 'failed',
      failureCode: 'provider_not_configured',
      paymentAmountRefunded: 0,
      paymentAmountRefundable: 9,
    });
    expect(await stack.ledger('refund', paymentId)).toHaveLength(0);
    expect(await callMarked('refunds', refund.body.id as string)).toBe(false);
  });

  it("a subscription's renewal is a declined attempt (no provider call) and the subscription ends decided", async () => {
    const subs = subscriptionClient(stack, merchant);
    const created = await subs.create({ cardToken: 'tok_success', retryScheduleDays: [] });
    expect(created.body.status).toBe('active');
    const id = created.body.id as string;
    await setProcessor('subscriptions', id);
    const cancelled = await subs.until(id, (s) => s.status === 'cancelled', 15_000);
    expect(cancelled).toMatchObject({
      cancellationReason: 'payment_failed',
      latestInvoice: { status: 'uncollectible', attempts: 1, failureCode: 'provider_not_configured' },
    });
    // Only the first period was charged: the renewal never reached a provider.
    expect((await subs.captures(id)).map((c) => c.status)).toEqual(['succeeded']);
  });

  it('after an earlier call that may have captured, the payment is never failed: Stuck until the provider is back, then settled', async () => {
    const em = stack.orm.em.fork();
    const payment = paymentRow(em, merchant.merchantId, {
      externalId: `retired-sent-${Date.now()}`,
      processor: 'retired',
      amountMinor: 700,
      cardToken: 'tok_success',
      expiresAt: new Date(Date.now() + 3_600_000),
      // An earlier attempt's call was sent (and captured at the provider), its answer lost.
      providerCallSentAt: new Date(),
    });
    await em.flush();
    const earlier = await stack.provider(
      '/v1/payments',
      { amount: 7, currency: 'USD', mode: 'card', cardToken: 'tok_success', metadata: { paymentId: payment.id } },
      payment.id,
    );
    expect(earlier.status).toBe(200);
    const payments = createPaymentGateway({
      client: stack.api.client,
      settings: {
        taskQueue: stack.taskQueue,
        callbackRetryInitialSeconds: 1,
        paymentWaitMs: 5_000,
        stuckAfterSeconds: 1,
      },
    });
    // Its outcome unknown (never `failed`): the workflow asks the provider, which is not configured.
    expect(await payments.submit(payment)).toEqual({ kind: 'provider_timeout' });
    const handle = stack.api.client.workflow.getHandle(paymentWorkflowId(payment.id));
    const stuck = await eventually(
      async () => (await handle.describe()).typedSearchAttributes.get(StuckKey),
      (v) => v !== undefined,
      15_000,
      250,
    );
    expect(stuck).toBe('provider_not_configured');
    expect((await call(stack.api.baseUrl, 'GET', `/payments/${payment.id}`, merchant.auth)).body.status).toBe(
      'created',
    );
    expect((await handle.describe()).status.name).toBe('RUNNING');

    // The configuration is back (here: the record's processor is one that is configured).
    await stack.orm.em.getConnection().execute(`update payments set processor = 'sandbox' where id = ?`, [payment.id]);
    const settled = await eventually(
      () => call(stack.api.baseUrl, 'GET', `/payments/${payment.id}`, merchant.auth),
      (r) => r.body.status !== 'created',
      30_000,
      250,
    );
    expect(settled.body.status).toBe('succeeded');
    expect((await stack.ledger('capture', payment.id)).map((e) => e.status)).toEqual(['succeeded']);
  }, 60_000);
});
