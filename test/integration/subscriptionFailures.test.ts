import { call, eventually } from '../helpers/http';
import {
  createTestMerchant,
  startPaymentStack,
  type LedgerEntry,
  type PaymentStack,
  type TestMerchant,
} from '../helpers/stack';
import { subscriptionWorkflowId } from '../../workflows/subscriptionApi';
import { mismatchShown } from '../helpers/mismatch';
import { sleep, subscriptionClient, succeededByInvoice } from '../helpers/subscriptions';

/**
 * Declined charges, retries, recovery and the service's own cancellations (payment_failed,
 * authorization_expired); cancelling while past_due and while a charge is in flight; the
 * hosted card authorization. A one-second billing day; the sandbox ledger is the judge.
 */
describe('subscriptions: failures, retries, hosted authorization', () => {
  const DAY_MS = 1000;
  let stack: PaymentStack;
  let merchant: TestMerchant;
  let subs: ReturnType<typeof subscriptionClient>;

  beforeAll(async () => {
    stack = await startPaymentStack('subfail', {
      billingDaySeconds: DAY_MS / 1000,
      subscriptionAuthorizationExpirySeconds: 3,
    });
    merchant = await createTestMerchant(stack.orm, 'Failing merchant');
    subs = subscriptionClient(stack, merchant);
  });
  afterEach(() => stack.sandbox('/_admin/faults', {}));
  afterAll(() => stack.close());

  it('goes past_due on a declined renewal, retries on schedule and recovers to active', async () => {
    const created = await subs.create({ cardToken: 'tok_success', billingIntervalDays: 2, retryScheduleDays: [1, 1] });
    expect(created.body.status).toBe('active');
    const id = created.body.id as string;
    // The card stops working before the first renewal.
    await stack.sandbox('/_admin/faults', { payments: 'decline' });
    const pastDue = await subs.until(id, (s) => s.status === 'past_due', 10_000);
    expect(pastDue.latestInvoice).toMatchObject({
      status: 'open',
      attempts: 1,
      failureCode: 'card_declined',
      nextAttemptAt: expect.any(String),
    });
    // The retry is due one billing day after the failed attempt.
    const invoices = await subs.invoices(id);
    const renewal = invoices[1]!;
    expect(renewal.nextAttemptAt!.getTime() - renewal.updatedAt.getTime()).toBe(DAY_MS);
    // The card works again: the retry succeeds and the subscription is active again.
    await stack.sandbox('/_admin/faults', {});
    // Read the renewal invoice itself: with a 2-second period, the next renewal may already be
    // the latest invoice by the time a loaded machine polls.
    const paid = await eventually(
      async () => (await subs.invoices(id)).find((i) => i.id === renewal.id),
      (i) => i?.status === 'paid',
      10_000,
    );
    expect(paid!.attempts).toBe(2);
    expect((await subs.until(id, (s) => s.status === 'active' || s.status === 'past_due', 10_000)).status).toBe(
      'active',
    );
    await subs.cancel(id);

    const captures = (await subs.captures(id)).filter((c) => c.metadata.invoiceId === renewal.id);
    expect(captures.map((c) => c.status)).toEqual(['failed', 'succeeded']);
    // Each attempt has its own idempotency key, derived from the invoice id.
    expect(captures[0]!.idempotencyKey).toBe(renewal.id);
    expect(captures[1]!.idempotencyKey).not.toBe(renewal.id);
    expect(captures[1]!.idempotencyKey!.startsWith(renewal.id)).toBe(true);

    const failedMail = await eventually(
      async () => subs.mail(id).filter((e) => /Payment failed/.test(e.subject)),
      (l) => l.length >= 1,
    );
    expect(failedMail).toHaveLength(1);
    expect(failedMail[0]!.text).toContain(`Next retry: ${renewal.nextAttemptAt!.toISOString()}`);
  });

  it('cancels with payment_failed when the retries are exhausted; the invoice is never charged again', async () => {
    const created = await subs.create({ cardToken: 'tok_decline', retryScheduleDays: [1, 1] });
    expect(created.status).toBe(200);
    expect(created.body.status).toBe('past_due'); // the first charge was declined
    const id = created.body.id as string;
    const cancelled = await subs.until(id, (s) => s.status === 'cancelled', 10_000);
    // Voided by the service after its last attempt: shown as `uncollectible` (docs/decisions.md, Lists).
    expect(cancelled).toMatchObject({
      cancellationReason: 'payment_failed',
      latestInvoice: { status: 'uncollectible' },
    });
    const captures = await subs.captures(id);
    expect(captures.map((c) => c.status)).toEqual(['failed', 'failed', 'failed']);
    expect(new Set(captures.map((c) => c.idempotencyKey)).size).toBe(3);

    await sleep(3 * DAY_MS);
    expect(await subs.captures(id)).toHaveLength(3);
    expect(await subs.invoices(id)).toHaveLength(1);

    const mail = await eventually(
      async () => subs.mail(id),
      (l) =>
        l.filter((e) => /Payment failed/.test(e.subject)).length === 3 && l.some((e) => /cancelled/.test(e.subject)),
    );
    const failed = mail.filter((e) => /Payment failed/.test(e.subject));
    expect(failed.filter((e) => /Next retry: /.test(e.text))).toHaveLength(2);
    expect(failed.filter((e) => /No further retries/.test(e.text))).toHaveLength(1);
    expect(mail.filter((e) => /is active/.test(e.subject))).toHaveLength(0);
  });

  it('DELETE while past_due voids the open invoice: no retry is ever charged', async () => {
    const created = await subs.create({ cardToken: 'tok_insufficient_funds', retryScheduleDays: [2] });
    expect(created.body).toMatchObject({ status: 'past_due', latestInvoice: { failureCode: 'insufficient_funds' } });
    const id = created.body.id as string;
    const cancelled = await subs.cancel(id, '?reason=customer_request');
    expect(cancelled.body).toMatchObject({
      status: 'cancelled',
      cancellationReason: 'customer_request',
      latestInvoice: { status: 'void' },
      currentPeriodEnd: created.body.currentPeriodEnd,
    });
    await sleep(3 * DAY_MS);
    expect(await subs.captures(id)).toHaveLength(1);
    expect((await subs.get(id)).body.latestInvoice.status).toBe('void');
  });

  it('DELETE during a charge in flight: the charge finishes first, no new one starts', async () => {
    const created = await subs.create({ cardToken: 'tok_success', billingIntervalDays: 2 });
    const id = created.body.id as string;
    const [first] = await subs.invoices(id);
    // Slow provider for the renewal; cancel while its invoice is being charged.
    await stack.sandbox('/_admin/faults', { latencyMs: 900 });
    await eventually(
      () => subs.invoices(id),
      (l) => l.length >= 2,
      10_000,
      20,
    );
    const sent = Date.now();
    const cancelled = await subs.cancel(id);
    // The answer waited for the charge in flight (the provider takes 900 ms).
    expect(Date.now() - sent).toBeGreaterThan(300);
    expect(cancelled.status).toBe(200);
    expect(cancelled.body.status).toBe('cancelled');
    // The renewal charge in flight completed (paid), and the cancel came after it.
    const invoices = await subs.invoices(id);
    expect(invoices).toHaveLength(2);
    expect(invoices[1]!.status).toBe('paid');
    expect(cancelled.body.latestInvoice).toMatchObject({ id: invoices[1]!.id, status: 'paid' });
    expect(cancelled.body.currentPeriodStart).toBe(first!.periodEnd.toISOString());
    await stack.sandbox('/_admin/faults', {});
    await sleep(4 * DAY_MS);
    const byInvoice = succeededByInvoice(await subs.captures(id));
    expect([...byInvoice.entries()].sort()).toEqual(
      [
        [first!.id, 1],
        [invoices[1]!.id, 1],
      ].sort(),
    );
  });

  it('hosted flow: pending with the provider page, then active once the customer authorizes the card', async () => {
    const created = await subs.create({ amount: 15, billingIntervalDays: 2, returnUrl: 'https://shop.example/done' });
    expect(created.status).toBe(200);
    expect(created.body).toMatchObject({ status: 'pending', currentPeriodStart: null, currentPeriodEnd: null });
    expect(created.body.redirectUrl).toMatch(new RegExp(`^${stack.sandboxUrl}/checkout/txn_[0-9a-f]+$`));
    const id = created.body.id as string;
    expect(await subs.captures(id)).toHaveLength(0);

    // The customer presses Pay on the sandbox page (a script's empty POST works too).
    const pay = await fetch(`${created.body.redirectUrl}/pay`, { method: 'POST' });
    expect(pay.status).toBeLessThan(400);
    const active = await subs.until(id, (s) => s.status === 'active', 10_000);
    expect(active.latestInvoice).toMatchObject({ status: 'paid', amount: 15 });
    expect(Date.parse(active.currentPeriodEnd) - Date.parse(active.currentPeriodStart)).toBe(2 * DAY_MS);
    const captures = await subs.captures(id);
    expect(captures).toHaveLength(1);
    expect(captures[0]).toMatchObject({ status: 'succeeded', amount: 15 });
    await subs.untilPaid(id, 2, 10_000); // the saved card is charged again at the next period
    await subs.cancel(id);
    const mail = await eventually(
      async () => subs.mail(id),
      (l) => l.some((e) => /is active/.test(e.subject)) && l.some((e) => /cancelled/.test(e.subject)),
    );
    expect(mail.filter((e) => /is active/.test(e.subject))).toHaveLength(1);
  });

  it('hosted flow: cancelled (authorization_expired) when the customer never authorizes; the page is dead', async () => {
    const created = await subs.create({ amount: 15 });
    expect(created.body.status).toBe('pending');
    const id = created.body.id as string;
    const cancelled = await subs.until(id, (s) => s.status === 'cancelled', 10_000);
    expect(cancelled).toMatchObject({
      cancellationReason: 'authorization_expired',
      currentPeriodStart: null,
      latestInvoice: null,
    });
    const late = await fetch(`${created.body.redirectUrl}/pay`, { method: 'POST' });
    expect(late.status).toBe(410);
    await sleep(1500);
    expect(await subs.captures(id)).toHaveLength(0);
    expect((await subs.get(id)).body.status).toBe('cancelled');
  });

  it('DELETE of a pending subscription cancels it and its authorization page', async () => {
    const created = await subs.create({ amount: 15 });
    const id = created.body.id as string;
    const cancelled = await subs.cancel(id);
    expect(cancelled.body).toMatchObject({ status: 'cancelled', cancellationReason: 'merchant_request' });
    const late = await fetch(`${created.body.redirectUrl}/pay`, { method: 'POST' });
    expect(late.status).toBe(410);
    expect(await subs.captures(id)).toHaveLength(0);
  });

  it('a first charge the provider cannot take answers 503 and is charged once when the provider is back', async () => {
    await stack.sandbox('/_admin/faults', { payments: 'unavailable' });
    const res = await subs.create({ cardToken: 'tok_success', billingIntervalDays: 30 });
    expect(res.status).toBe(503);
    expect(res.body.code).toBe('provider_unavailable');
    expect(res.body.details.subscription).toMatchObject({ status: 'created' });
    const id = res.body.details.subscription.id as string;
    await stack.sandbox('/_admin/faults', {});
    const active = await subs.until(id, (s) => s.status === 'active', 30_000);
    expect(active.latestInvoice.status).toBe('paid');
    // A retry of the merchant's request returns the same subscription.
    const replay = await call(stack.api.baseUrl, 'POST', '/subscriptions', merchant.auth, {
      amount: 10,
      currency: 'USD',
      billingIntervalDays: 30,
      externalId: res.body.details.subscription.externalId,
      cardToken: 'tok_success',
    });
    expect(replay.body).toMatchObject({ id, status: 'active' });
    expect(await subs.captures(id)).toHaveLength(1);
    // The refused call did nothing, so it is never asked about (decision 0058): under the invoice's
    // keys the provider saw the refused create(s) and the one that captured, no lookup.
    const invoiceId = active.latestInvoice.id as string;
    const seen = await stack.requests(invoiceId);
    expect(seen.filter((r) => r.method !== 'POST' || r.url !== '/v1/payments')).toEqual([]);
    expect(seen.map((r) => [r.idempotencyKey, r.status])).toEqual([
      ...seen.slice(0, -1).map(() => [invoiceId, 503]),
      [invoiceId, 200],
    ]);
    await subs.cancel(id);
  });

  it('a charge refused as a conflict (another request under its key) is reconciled, never declined', async () => {
    await stack.sandbox('/_admin/faults', { payments: 'unavailable' });
    const res = await subs.create({ cardToken: 'tok_success', billingIntervalDays: 30 });
    expect(res.status).toBe(503);
    const id = res.body.details.subscription.id as string;
    const invoiceId = res.body.details.subscription.latestInvoice.id as string;
    // The provider back, someone else charges 4.00 under the first attempt's key (the invoice id)
    // before the workflow tries again (10 s after the provider was found down).
    await stack.sandbox('/_admin/faults', {});
    const other = await stack.provider(
      '/v1/payments',
      { amount: 4, currency: 'USD', mode: 'card', cardToken: 'tok_success' },
      invoiceId,
    );
    expect(other.status).toBe(200);

    // The next attempt is refused as a reused key: it may have charged, so it is asked about by
    // its key and shown as a mismatch, never recorded as a decline (whose retry would charge
    // under a new key) nor as a rejection (which would discard the subscription).
    const workflowId = subscriptionWorkflowId(id);
    const pending = await mismatchShown(stack.api.client, workflowId);
    expect(pending.activityType?.name).toBe('reconcileInvoiceCharge');
    const after = await subs.get(id);
    expect(after.body).toMatchObject({ status: 'created', latestInvoice: { id: invoiceId, status: 'open' } });
    // Only the other 4.00 under the invoice's keys: nothing of ours was charged.
    const ledger = (await stack.sandbox('/_admin/ledger')) as { entries: LedgerEntry[] };
    expect(ledger.entries.filter((e) => e.idempotencyKey?.startsWith(invoiceId))).toEqual([
      expect.objectContaining({ type: 'capture', amount: 4, idempotencyKey: invoiceId }),
    ]);

    await stack.api.client.workflow.getHandle(workflowId).terminate('test over');
  });
});
