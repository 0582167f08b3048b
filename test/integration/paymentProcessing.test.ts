import { createTestMerchant, startPaymentStack, type PaymentStack, type TestMerchant } from '../helpers/stack';
import { call, eventually } from '../helpers/http';
import { startCallbackReceiver } from '../helpers/callbackReceiver';

/**
 * Payments the processor accepts and decides later (PRODUCT.md, "Processor lifecycle"):
 * `processing`, then succeeded or failed with the processor's code, by its webhook or, when that
 * is lost, by the workflow asking at growing intervals; never voided at the payment's expiry. As a
 * merchant observes it: API bodies, the events at its callbackUrl, and the sandbox ledger.
 */

const EXPIRY_SECONDS = 2;
const PROCESSING_SECONDS = 3;

type Receiver = Awaited<ReturnType<typeof startCallbackReceiver>>;

describe('processing payments', () => {
  let stack: PaymentStack;
  let merchant: TestMerchant;
  let receiver: Receiver;
  let seq = 0;
  const ext = () => `proc-${Date.now()}-${++seq}`;
  const create = (cardToken: string, externalId = ext()) =>
    call(stack.api.baseUrl, 'POST', '/payments', merchant.auth, {
      amount: 40,
      currency: 'USD',
      externalId,
      customer: { email: 'debit@example.com' },
      cardToken,
      callbackUrl: receiver.url,
    });
  const get = (id: string) => call(stack.api.baseUrl, 'GET', `/payments/${id}`, merchant.auth);
  const decided = (id: string, timeoutMs = 20_000) =>
    eventually(
      () => get(id),
      (r) => r.body.status !== 'processing',
      timeoutMs,
      200,
    );
  const eventsOf = (id: string) => {
    const seen = new Map<string, { type: string; data: Record<string, unknown> }>();
    for (const r of receiver.received) {
      const data = r.json.data as Record<string, unknown>;
      if (data.id === id) seen.set(r.json.id as string, { type: r.json.type as string, data });
    }
    return [...seen.values()];
  };
  const waitForEvents = (id: string, types: string[]) =>
    eventually(
      async () => eventsOf(id).map((e) => e.type),
      (got) => types.every((t) => got.includes(t)),
      20_000,
      200,
    );
  const refund = (id: string) =>
    call(stack.api.baseUrl, 'POST', `/payments/${id}/refund`, merchant.auth, { externalId: `rf-${ext()}`, amount: 1 });

  beforeAll(async () => {
    stack = await startPaymentStack(
      'processing',
      // The expiry is far shorter than the processor's decision: a processing payment has none.
      { paymentExpirySeconds: EXPIRY_SECONDS, callbackRetryInitialSeconds: 1, processingPollSeconds: 1 },
      undefined,
      undefined,
      { sandboxProcessingSeconds: PROCESSING_SECONDS },
    );
    merchant = await createTestMerchant(stack.orm, 'Processing merchant');
    receiver = await startCallbackReceiver();
  });
  afterAll(async () => {
    await receiver.close();
    await stack.close();
  });

  it('tok_processing: 200 processing, payment.processing, then succeeded by the processor webhook, past the expiry', async () => {
    const res = await create('tok_processing');
    expect(res.status).toBe(200);
    const id = res.body.id as string;
    expect(res.body).toMatchObject({
      status: 'processing',
      nextAction: null,
      providerTransactionId: expect.stringMatching(/^txn_/),
      amountRefundable: 0,
      failureCode: null,
    });
    expect((await stack.ledger('capture', id)).map((e) => e.status)).toEqual(['processing']);
    await waitForEvents(id, ['payment.processing']);
    expect(eventsOf(id).find((e) => e.type === 'payment.processing')!.data).toMatchObject({ id, status: 'processing' });
    // Not refundable while processing; the same request again answers the same payment.
    const refused = await refund(id);
    expect(refused.status).toBe(409);
    expect(refused.body.code).toBe('payment_not_refundable');
    const again = await create('tok_processing', res.body.externalId as string);
    expect(again.body).toMatchObject({ id, status: 'processing' });

    const settled = await decided(id);
    expect(settled.body).toMatchObject({ status: 'succeeded', amountRefundable: 40 });
    // Decided after its expiresAt: never voided.
    expect(Date.parse(settled.body.updatedAt as string)).toBeGreaterThan(Date.parse(settled.body.expiresAt as string));
    await waitForEvents(id, ['payment.succeeded']);
    expect(
      eventsOf(id)
        .map((e) => e.type)
        .sort(),
    ).toEqual(['payment.processing', 'payment.succeeded']);
    expect((await stack.ledger('capture', id)).map((e) => e.status)).toEqual(['succeeded']);
    expect((await refund(id)).status).toBe(200);
  }, 40_000);

  it('tok_processing_fail: failed with the processor code debit_failed', async () => {
    const res = await create('tok_processing_fail');
    const id = res.body.id as string;
    expect(res.body.status).toBe('processing');
    const settled = await decided(id);
    expect(settled.body).toMatchObject({ status: 'failed', failureCode: 'debit_failed', amountRefundable: 0 });
    await waitForEvents(id, ['payment.failed']);
    expect(
      eventsOf(id)
        .map((e) => e.type)
        .sort(),
    ).toEqual(['payment.failed', 'payment.processing']);
    expect((await stack.ledger('capture', id)).map((e) => e.status)).toEqual(['failed']);
  }, 40_000);

  it('/_admin/settle-payment settles it now; settling twice is 409 and changes nothing', async () => {
    const res = await create('tok_processing');
    const id = res.body.id as string;
    const transactionId = res.body.providerTransactionId as string;
    const settle = (await stack.sandbox('/_admin/settle-payment', { transactionId, status: 'failed' })) as Record<
      string,
      unknown
    >;
    expect(settle).toMatchObject({ id: transactionId, status: 'failed', failureCode: 'debit_failed' });
    const settled = await decided(id, 2500);
    expect(settled.body).toMatchObject({ status: 'failed', failureCode: 'debit_failed' });
    const twice = await fetch(`${stack.sandboxUrl}/_admin/settle-payment`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ transactionId, status: 'succeeded' }),
    });
    expect(twice.status).toBe(409);
    await new Promise((r) => setTimeout(r, PROCESSING_SECONDS * 1000));
    expect((await get(id)).body.status).toBe('failed');
    expect((await stack.ledger('capture', id)).map((e) => e.status)).toEqual(['failed']);
  }, 40_000);

  it('a status nobody knows: the payment stays as it is and is asked again until a known answer settles it', async () => {
    await stack.sandbox('/_admin/faults', { payments: 'unknown_status' });
    let id: string;
    try {
      const res = await create('tok_success');
      // An answer whose outcome is unknown: never a decline, never a 500; the outcome follows.
      expect(res.status).toBe(502);
      expect(res.body.code).toBe('provider_invalid_response');
      const payment = (res.body.details as { payment: Record<string, unknown> }).payment;
      expect(payment).toMatchObject({ status: 'created' });
      id = payment.id as string;
      await new Promise((r) => setTimeout(r, 2500));
      expect((await get(id)).body.status).toBe('created');
    } finally {
      await stack.sandbox('/_admin/faults', {});
    }
    const settled = await eventually(
      () => get(id),
      (r) => r.body.status !== 'created',
      20_000,
      250,
    );
    expect(settled.body).toMatchObject({ status: 'succeeded' });
    await waitForEvents(id, ['payment.succeeded']);
    expect((await stack.ledger('capture', id)).map((e) => e.status)).toEqual(['succeeded']);
  }, 40_000);

  it('the webhook lost: the workflow asks the processor and follows its decision', async () => {
    const res = await create('tok_processing');
    const id = res.body.id as string;
    expect(res.body.status).toBe('processing');
    // Decided at the processor without a webhook (as if every delivery were lost).
    stack.sandboxStore.settleProcessing(res.body.providerTransactionId as string, 'succeeded');
    const settled = await decided(id, 10_000);
    expect(settled.body).toMatchObject({ status: 'succeeded' });
    await waitForEvents(id, ['payment.succeeded']);
    expect((await stack.ledger('capture', id)).map((e) => e.status)).toEqual(['succeeded']);
  }, 30_000);
});
