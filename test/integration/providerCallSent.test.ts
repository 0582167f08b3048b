import { call, eventually } from '../helpers/http';
import { createTestMerchant, startPaymentStack, type PaymentStack, type TestMerchant } from '../helpers/stack';
import { sleep, subscriptionClient, succeededByInvoice } from '../helpers/subscriptions';
import { invoiceAttemptKey } from '../../src/rules/subscriptionPlan';
import type { PaymentProvider } from '../../src/providers/types';
import { refundWorkflowId } from '../../workflows/refundApi';

/**
 * A provider call whose answer was lost (its worker SIGKILLed mid-call: the local activity's
 * marker is gone, the provider acted) is followed by the same call under the same idempotency
 * key, which may land in an `unavailable` window. Found by the chaos run: that answer was taken
 * as "nothing done" (a captured payment left `created`, an invoice charged but voided by a
 * cancel). Each test builds the lost call as it happens: the provider holds the operation under
 * our key, and our record says a call was sent (`provider_call_sent_at`) with no outcome.
 */
describe('an unavailable answer after a call whose answer was lost', () => {
  let stack: PaymentStack;
  let merchant: TestMerchant;
  let subs: ReturnType<typeof subscriptionClient>;
  let provider: PaymentProvider;
  let seq = 0;
  const ext = (p: string) => `${p}-${Date.now()}-${++seq}`;
  const faults = (f: Record<string, unknown>) => stack.sandbox('/_admin/faults', f);
  /** What the lost call left in our database: sent, outcome never recorded. */
  const markSent = (table: 'payments' | 'invoices' | 'refunds', id: string) =>
    stack.orm.em
      .fork()
      .getConnection()
      .execute(`update "${table}" set provider_call_sent_at = now() where id = ?`, [id]);

  beforeAll(async () => {
    stack = await startPaymentStack('provider-call-sent', { billingDaySeconds: 1 });
    merchant = await createTestMerchant(stack.orm, 'Lost answers merchant');
    subs = subscriptionClient(stack, merchant);
    provider = stack.providers.sandbox;
  });
  afterEach(() => faults({}));
  afterAll(() => stack.close());

  it('payment: captured by the lost call, then unavailable: reconciled to succeeded, captured once', async () => {
    const body = {
      amount: 20,
      currency: 'EUR',
      externalId: ext('pay'),
      customer: { email: 'c@example.com' },
      cardToken: 'tok_success',
    };
    const create = () => call(stack.api.baseUrl, 'POST', '/payments', merchant.auth, body);
    await faults({ payments: 'unavailable' });
    const first = await create();
    expect(first.status).toBe(503);
    const paymentId = (first.body.details as { payment: { id: string } }).payment.id;

    // The lost call: the provider captured under our key; our record only says it was sent.
    await faults({});
    await provider.createPayment({
      idempotencyKey: paymentId,
      amountMinor: 2000,
      currency: 'EUR',
      mode: 'card',
      cardToken: 'tok_success',
      metadata: { paymentId, merchantId: merchant.merchantId },
    });
    await markSent('payments', paymentId);

    // The same attempt again, in an unavailable window: no proof that nothing was captured.
    await faults({ payments: 'unavailable' });
    const repeat = await create();
    expect(repeat.status).toBe(503);
    await faults({});

    // Without any further request, the workflow learns the capture from the provider.
    const settled = await eventually(
      () => call(stack.api.baseUrl, 'GET', `/payments/${paymentId}`, merchant.auth),
      (r) => r.body.status !== 'created',
      60_000,
      250,
    );
    expect(settled.body).toMatchObject({ status: 'succeeded', providerTransactionId: expect.stringMatching(/^txn_/) });
    expect((await stack.ledger('capture', paymentId)).map((c) => c.status)).toEqual(['succeeded']);
  }, 180_000);

  it('refund: refunded by the lost call, then unavailable: succeeded, the balance is not given back', async () => {
    const paid = await call(stack.api.baseUrl, 'POST', '/payments', merchant.auth, {
      amount: 10,
      currency: 'USD',
      externalId: ext('pay'),
      customer: { email: 'c@example.com' },
      cardToken: 'tok_success',
    });
    expect(paid.body.status).toBe('succeeded');
    const paymentId = paid.body.id as string;
    const refundBody = { externalId: ext('refund'), amount: 10 };
    const requestRefund = () =>
      call(stack.api.baseUrl, 'POST', `/payments/${paymentId}/refund`, merchant.auth, refundBody);

    // No worker: the refund is committed and its workflow started, nothing sent yet.
    await stack.worker.stop();
    const pending = await requestRefund();
    expect(pending.status).toBe(200);
    expect(pending.body.status).toBe('pending');
    const refundId = pending.body.id as string;

    // The lost call: the provider refunded under our refund id; our record says it was sent.
    await provider.createRefund({
      idempotencyKey: refundId,
      transactionId: paid.body.providerTransactionId as string,
      amountMinor: 1000,
      currency: 'USD',
      referenceId: refundBody.externalId,
      metadata: { refundId, paymentId },
    });
    await markSent('refunds', refundId);

    // The workflow's attempt meets an unavailable window.
    await faults({ refunds: 'unavailable' });
    await stack.restartWorker();
    const workflow = stack.api.client.workflow.getHandle(refundWorkflowId(refundId));
    const refundStatus = async () =>
      (await call(stack.api.baseUrl, 'GET', `/refunds/${refundId}`, merchant.auth)).body.status as string;
    // Either it gave up (the defect: failed, balance released) or it is asking the provider.
    await eventually(
      async () =>
        (await refundStatus()) !== 'pending' ||
        ((await workflow.describe()).raw.pendingActivities ?? []).some(
          (a) => a.activityType?.name === 'reconcileProviderRefund',
        ),
      (done) => done,
      60_000,
      250,
    );
    await faults({});

    const refund = await eventually(refundStatus, (s) => s !== 'pending', 90_000, 250);
    expect(refund).toBe('succeeded');
    const payment = await call(stack.api.baseUrl, 'GET', `/payments/${paymentId}`, merchant.auth);
    expect(payment.body).toMatchObject({ status: 'refunded', amountRefunded: 10, amountRefundable: 0 });
    // Nothing left to refund: a second full refund is refused by us, not by the provider.
    const again = await call(stack.api.baseUrl, 'POST', `/payments/${paymentId}/refund`, merchant.auth, {
      externalId: ext('refund'),
      amount: 10,
    });
    expect(again.status).toBe(409);
    const refunds = await stack.ledger('refund', paymentId);
    expect(refunds.map((r) => r.status)).toEqual(['succeeded']);
  }, 180_000);

  /** A subscription whose first charge was declined: its invoice is open, attempt 2 due after `retryDays`. */
  async function pastDue(retryDays: number) {
    await faults({ payments: 'decline' });
    const created = await subs.create({
      cardToken: 'tok_success',
      billingIntervalDays: 30,
      retryScheduleDays: [retryDays],
    });
    await faults({});
    expect(created.body).toMatchObject({ status: 'past_due', latestInvoice: { status: 'open', attempts: 1 } });
    const id = created.body.id as string;
    const [invoice] = await subs.invoices(id);
    return { id, invoice: invoice! };
  }

  /** The lost call of attempt 2: the provider captured under its key; our invoice says it was sent. */
  async function lostCapture(subscriptionId: string, invoiceId: string) {
    await provider.createPayment({
      idempotencyKey: invoiceAttemptKey(invoiceId, 2),
      amountMinor: 1000,
      currency: 'USD',
      mode: 'card',
      cardToken: 'tok_success',
      metadata: { subscriptionId, merchantId: merchant.merchantId, invoiceId },
    });
    await markSent('invoices', invoiceId);
  }

  it('invoice: captured by the lost call, then unavailable, then cancelled: paid, never voided, charged once', async () => {
    const { id, invoice } = await pastDue(3);
    await lostCapture(id, invoice.id);
    await faults({ payments: 'unavailable' });
    // Attempt 2 is due: it meets the unavailable window; then the merchant cancels.
    await sleep(Math.max(0, invoice.nextAttemptAt!.getTime() - Date.now()) + 2000);
    const cancel = await subs.cancel(id);
    expect([200, 503]).toContain(cancel.status);
    await faults({});

    const cancelled = await subs.until(id, (s) => s.status === 'cancelled', 60_000);
    expect(cancelled.latestInvoice).toMatchObject({ id: invoice.id, status: 'paid' });
    await sleep(2000);
    const captures = (await subs.captures(id)).filter((c) => c.metadata.invoiceId === invoice.id);
    expect(captures.map((c) => c.status)).toEqual(['failed', 'succeeded']);
    expect(succeededByInvoice(captures).get(invoice.id)).toBe(1);
  }, 180_000);

  it('cancel: an open invoice whose charge was sent is asked about, and recorded paid if captured', async () => {
    // The retry is far off: the workflow waits; the lost call stands for a run whose attempt
    // result never reached it (an older history), so only the cancellation can find it.
    const { id, invoice } = await pastDue(60);
    await lostCapture(id, invoice.id);
    const cancel = await subs.cancel(id);
    expect(cancel.status).toBe(200);
    expect(cancel.body).toMatchObject({ status: 'cancelled', latestInvoice: { id: invoice.id, status: 'paid' } });
    const captures = (await subs.captures(id)).filter((c) => c.metadata.invoiceId === invoice.id);
    expect(captures.map((c) => c.status)).toEqual(['failed', 'succeeded']);
    const receipt = await eventually(
      async () => subs.mail(id).filter((e) => /receipt/i.test(e.subject)),
      (l) => l.length >= 1,
      30_000,
    );
    expect(receipt).toHaveLength(1);
  }, 180_000);
});
