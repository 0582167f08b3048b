import { call, eventually } from '../helpers/http';
import { startCallbackReceiver } from '../helpers/callbackReceiver';
import { createTestMerchant, startPaymentStack, type PaymentStack, type TestMerchant } from '../helpers/stack';
import { sleep, subscriptionClient, succeededByInvoice, type SubscriptionBody } from '../helpers/subscriptions';

/**
 * Subscription charges the processor decides later (PRODUCT.md "Processor lifecycle"; decision
 * 0060), on the real stack: `tok_processing` (settled succeeded 2 s later with a webhook) and
 * `tok_processing_fail` (settled failed, `debit_failed`). The invoice is `processing` and never
 * charged again meanwhile (invariant 7, on the sandbox ledger); a first charge makes the
 * subscription `pending` until the decision. A one-second billing day.
 */
describe('subscriptions: processing charges', () => {
  const DAY_MS = 1000;
  const PROCESSING_SECONDS = 2;
  let stack: PaymentStack;
  let merchant: TestMerchant;
  let subs: ReturnType<typeof subscriptionClient>;

  const attemptsOn = async (id: string, invoiceId: string) =>
    (await subs.captures(id)).filter((c) => c.metadata.invoiceId === invoiceId).map((c) => c.status);
  const update = (id: string, body: unknown) =>
    call<SubscriptionBody>(stack.api.baseUrl, 'POST', `/subscriptions/${id}/payment-method`, merchant.auth, body);

  beforeAll(async () => {
    stack = await startPaymentStack('subproc', { billingDaySeconds: DAY_MS / 1000 }, undefined, undefined, {
      sandboxProcessingSeconds: PROCESSING_SECONDS,
    });
    merchant = await createTestMerchant(stack.orm, 'Processing merchant');
    subs = subscriptionClient(stack, merchant);
  });
  afterAll(() => stack.close());

  it('a first charge processing: the create answers 200 pending, the capture makes it active', async () => {
    const receiver = await startCallbackReceiver();
    try {
      const created = await subs.create({
        cardToken: 'tok_processing',
        billingIntervalDays: 30,
        callbackUrl: receiver.url,
      });
      expect(created.status).toBe(200);
      expect(created.body).toMatchObject({
        status: 'pending',
        latestInvoice: { status: 'processing', attempts: 1, nextAttemptAt: null, hostedUrl: null, failureCode: null },
      });
      const id = created.body.id as string;
      const invoiceId = (created.body.latestInvoice as SubscriptionBody).id as string;
      expect(await attemptsOn(id, invoiceId)).toEqual(['processing']);
      // Settled 2 s later; its webhook wakes the workflow (the first poll is 10 s after the answer).
      const active = await subs.until(id, (s) => s.status === 'active', 7_000);
      expect(active.latestInvoice).toMatchObject({ id: invoiceId, status: 'paid', attempts: 1 });
      expect(await attemptsOn(id, invoiceId)).toEqual(['succeeded']);
      await eventually(
        async () => receiver.received.map((r) => r.json.type),
        (types) => types.includes('subscription.activated') && types.includes('subscription.charge_succeeded'),
      );
      await subs.cancel(id);
    } finally {
      await receiver.close();
    }
  });

  it('a renewal processing: the invoice is processing, the subscription stays active, then it is paid', async () => {
    const created = await subs.create({ cardToken: 'tok_processing', billingIntervalDays: 3 });
    const id = created.body.id as string;
    await subs.until(id, (s) => s.status === 'active', 15_000);
    const renewal = await subs.until(
      id,
      (s) => s.latestInvoice?.status === 'processing' && s.currentPeriodStart !== created.body.currentPeriodStart,
      15_000,
    );
    expect(renewal.status).toBe('active');
    const invoiceId = renewal.latestInvoice.id as string;
    expect(await attemptsOn(id, invoiceId)).toEqual(['processing']);
    // A card update meanwhile only replaces the card: nothing is charged at once.
    expect((await update(id, { cardToken: 'tok_success' })).status).toBe(200);
    await subs.untilPaid(id, 2, 15_000);
    const paid = (await subs.invoices(id)).find((i) => i.id === invoiceId)!;
    expect(paid).toMatchObject({ status: 'paid', attempts: 1 });
    expect(await attemptsOn(id, invoiceId)).toEqual(['succeeded']);
    expect((await subs.get(id)).body.status).toBe('active');
    await subs.cancel(id);
    for (const count of succeededByInvoice(await subs.captures(id)).values()) expect(count).toBe(1);
  });

  it('tok_processing_fail: pending, then past_due with debit_failed', async () => {
    const created = await subs.create({ cardToken: 'tok_processing_fail', retryScheduleDays: [10] });
    expect(created.status).toBe(200);
    expect(created.body).toMatchObject({ status: 'pending', latestInvoice: { status: 'processing' } });
    const id = created.body.id as string;
    const pastDue = await subs.until(id, (s) => s.status === 'past_due', 15_000);
    expect(pastDue.latestInvoice).toMatchObject({
      status: 'open',
      failureCode: 'debit_failed',
      declineType: 'soft',
      attempts: 1,
      nextAttemptAt: expect.any(String),
    });
    await subs.cancel(id);
  });

  it('DELETE while processing: cancelled at once; the invoice stays processing and its capture counts, once', async () => {
    const created = await subs.create({ cardToken: 'tok_processing', billingIntervalDays: 30 });
    expect(created.body).toMatchObject({ status: 'pending', latestInvoice: { status: 'processing' } });
    const id = created.body.id as string;
    const invoiceId = (created.body.latestInvoice as SubscriptionBody).id as string;
    const deleted = await subs.cancel(id);
    expect(deleted.status).toBe(200);
    expect(deleted.body).toMatchObject({ status: 'cancelled', latestInvoice: { id: invoiceId, status: 'processing' } });
    await eventually(
      async () => (await subs.invoices(id)).find((i) => i.id === invoiceId)!.status,
      (status) => status === 'paid',
      15_000,
    );
    const after = (await subs.get(id)).body;
    expect(after).toMatchObject({ status: 'cancelled', latestInvoice: { status: 'paid' } });
    await sleep(1.5 * DAY_MS);
    expect(await attemptsOn(id, invoiceId)).toEqual(['succeeded']);
    expect(succeededByInvoice(await subs.captures(id)).get(invoiceId)).toBe(1);
    expect(await subs.invoices(id)).toHaveLength(1);
  });

  it('DELETE while processing, then the processor fails it: the invoice is void, nothing retried', async () => {
    const created = await subs.create({ cardToken: 'tok_processing_fail', billingIntervalDays: 30 });
    const id = created.body.id as string;
    const invoiceId = (created.body.latestInvoice as SubscriptionBody).id as string;
    expect((await subs.cancel(id)).body).toMatchObject({
      status: 'cancelled',
      latestInvoice: { status: 'processing' },
    });
    await eventually(
      async () => (await subs.invoices(id)).find((i) => i.id === invoiceId)!,
      (i) => i.status === 'void',
      15_000,
    );
    expect((await subs.get(id)).body).toMatchObject({
      status: 'cancelled',
      latestInvoice: { status: 'void', failureCode: 'debit_failed', nextAttemptAt: null },
    });
    await sleep(1.5 * DAY_MS);
    expect(await attemptsOn(id, invoiceId)).toEqual(['failed']);
  });
});
