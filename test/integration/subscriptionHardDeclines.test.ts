import { call, eventually } from '../helpers/http';
import { startCallbackReceiver } from '../helpers/callbackReceiver';
import { createTestMerchant, startPaymentStack, type PaymentStack, type TestMerchant } from '../helpers/stack';
import { sleep, subscriptionClient, succeededByInvoice, type SubscriptionBody } from '../helpers/subscriptions';

/**
 * Hard declines (PRODUCT.md "Processor lifecycle", Hard declines) on the real stack: a renewal
 * declined `lost_card` is never retried with that card (the sandbox ledger shows one attempt),
 * the invoice says `declineType: "hard"` with no next attempt, the customer is asked for a new
 * card with the hosted card-update link, a new card is charged at once, and without one the
 * subscription is cancelled once the retry schedule's total has passed. A soft decline keeps its
 * retries. A one-second billing day.
 */
describe('subscriptions: hard declines', () => {
  const DAY_MS = 1000;
  let stack: PaymentStack;
  let merchant: TestMerchant;
  let subs: ReturnType<typeof subscriptionClient>;

  const update = (id: string, body: unknown) =>
    call<SubscriptionBody>(stack.api.baseUrl, 'POST', `/subscriptions/${id}/payment-method`, merchant.auth, body);
  const invoicesOf = (id: string) =>
    call<{ invoices: SubscriptionBody[] }>(stack.api.baseUrl, 'GET', `/subscriptions/${id}/invoices`, merchant.auth);
  /** The ledger's attempts on one invoice, oldest first. */
  const attemptsOn = async (id: string, invoiceId: string) =>
    (await subs.captures(id)).filter((c) => c.metadata.invoiceId === invoiceId).map((c) => c.status);
  const newCardMail = (id: string) => subs.mail(id).filter((e) => /A new card is needed/.test(e.subject));

  beforeAll(async () => {
    stack = await startPaymentStack('subhard', { billingDaySeconds: DAY_MS / 1000 });
    merchant = await createTestMerchant(stack.orm, 'Hard decline merchant');
    subs = subscriptionClient(stack, merchant);
  });
  afterAll(() => stack.close());

  /** A subscription whose first charge captured and whose first renewal was declined. */
  async function declinedRenewal(cardToken: string, patch: Record<string, unknown> = {}) {
    const created = await subs.create({ cardToken, billingIntervalDays: 2, ...patch });
    expect(created.body).toMatchObject({ status: 'active', latestInvoice: { status: 'paid', declineType: null } });
    const id = created.body.id as string;
    const pastDue = await subs.until(id, (s) => s.status === 'past_due', 15_000);
    return { id, pastDue };
  }

  it('a renewal declined lost_card is not retried; the customer is asked for a new card; a new card is charged at once', async () => {
    const receiver = await startCallbackReceiver();
    try {
      const { id, pastDue } = await declinedRenewal('tok_renewal_lost_card', {
        retryScheduleDays: [3, 3],
        callbackUrl: receiver.url,
      });
      const renewal = pastDue.latestInvoice as SubscriptionBody;
      expect(renewal).toMatchObject({
        status: 'open',
        attempts: 1,
        failureCode: 'lost_card',
        declineType: 'hard',
        nextAttemptAt: null,
        hostedUrl: null,
        subscriptionId: id,
        currency: 'USD',
      });
      // The invoice list shows the same invoice.
      const listed = (await invoicesOf(id)).body.invoices.find((i) => i.id === renewal.id);
      expect(listed).toMatchObject({
        declineType: 'hard',
        nextAttemptAt: null,
        hostedUrl: null,
        failureCode: 'lost_card',
      });

      // The email asks for a new card, with the hosted card-update page (the subscription's redirectUrl).
      const [mail] = await eventually(
        async () => newCardMail(id),
        (l) => l.length === 1,
      );
      const withPage = await subs.until(id, (s) => typeof s.redirectUrl === 'string');
      expect(withPage.redirectUrl).toMatch(new RegExp(`^${stack.sandboxUrl}/checkout/txn_[0-9a-f]+$`));
      expect(mail!.text).toContain(`Please enter a new card here: ${withPage.redirectUrl as string}`);
      expect(mail!.text).toContain('will not be retried');
      expect(subs.mail(id).filter((e) => /Payment failed/.test(e.subject))).toHaveLength(0);

      // charge_failed carries the full invoice in data.latestInvoice.
      const failed = await eventually(
        async () => receiver.received.find((r) => r.json.type === 'subscription.charge_failed'),
        (r) => r !== undefined,
      );
      expect(failed!.json.data.latestInvoice).toMatchObject({
        id: renewal.id,
        declineType: 'hard',
        nextAttemptAt: null,
        hostedUrl: null,
        failureCode: 'lost_card',
      });

      // No retry with that card, though the schedule's first retry (3 days on) is past.
      await sleep(3.5 * DAY_MS);
      expect(await attemptsOn(id, renewal.id as string)).toEqual(['failed']);
      expect((await subs.get(id)).body.status).toBe('past_due');

      // A new card: charged at once, the invoice paid by it, the subscription active.
      const updated = await update(id, { cardToken: 'tok_success' });
      expect(updated.status).toBe(200);
      expect(updated.body).toMatchObject({ status: 'active' });
      expect(await attemptsOn(id, renewal.id as string)).toEqual(['failed', 'succeeded']);
      const paid = (await subs.invoices(id)).find((i) => i.id === renewal.id)!;
      expect(paid).toMatchObject({ status: 'paid', attempts: 2, declineType: null });
      // Renewals go on with the new card; nothing cancels it.
      await subs.untilPaid(id, 3, 15_000);
      expect((await subs.get(id)).body.status).toBe('active');
      await subs.cancel(id);
      for (const count of succeededByInvoice(await subs.captures(id)).values()) expect(count).toBe(1);
    } finally {
      await receiver.close();
    }
  });

  it('without a new card within the schedule’s total, the subscription is cancelled (payment_failed)', async () => {
    const { id, pastDue } = await declinedRenewal('tok_renewal_lost_card', { retryScheduleDays: [1, 2] });
    const renewalId = (pastDue.latestInvoice as SubscriptionBody).id as string;
    const declinedAt = Date.now();
    const cancelled = await subs.until(id, (s) => s.status === 'cancelled', 20_000);
    // Three billing days (1 + 2) after the declined attempt, not before.
    expect(Date.now() - declinedAt).toBeGreaterThanOrEqual(2 * DAY_MS);
    expect(cancelled).toMatchObject({
      cancellationReason: 'payment_failed',
      latestInvoice: { id: renewalId, status: 'uncollectible', declineType: 'hard', nextAttemptAt: null },
    });
    expect(await attemptsOn(id, renewalId)).toEqual(['failed']);
    await sleep(2 * DAY_MS);
    expect(await attemptsOn(id, renewalId)).toEqual(['failed']);
    expect(await subs.invoices(id)).toHaveLength(2);
    const mail = await eventually(
      async () => subs.mail(id),
      (l) => l.some((e) => /cancelled/.test(e.subject)),
    );
    expect(mail.filter((e) => /A new card is needed/.test(e.subject))).toHaveLength(1);
  });

  it('a hosted card update from the email’s link ends the wait: the new card is charged at once', async () => {
    const { id } = await declinedRenewal('tok_renewal_lost_card', { retryScheduleDays: [5] });
    const [mail] = await eventually(
      async () => newCardMail(id),
      (l) => l.length === 1,
    );
    const link = /Please enter a new card here: (\S+)/.exec(mail!.text)![1]!;
    expect((await fetch(`${link}/pay`, { method: 'POST' })).status).toBeLessThan(400);
    const active = await subs.until(id, (s) => s.status === 'active', 15_000);
    expect(active.latestInvoice).toMatchObject({ status: 'paid', attempts: 2, declineType: null });
    await subs.cancel(id);
  });

  it('a first charge with a hard-declining card: past_due, declineType hard, no retry', async () => {
    const created = await subs.create({ cardToken: 'tok_expired_card', retryScheduleDays: [1, 1] });
    expect(created.body).toMatchObject({
      status: 'past_due',
      latestInvoice: { failureCode: 'expired_card', declineType: 'hard', nextAttemptAt: null },
    });
    const id = created.body.id as string;
    await sleep(1.5 * DAY_MS);
    expect((await subs.captures(id)).map((c) => c.status)).toEqual(['failed']);
    await subs.cancel(id);
  });

  it('tok_renewal_insufficient_funds is a soft decline: retried on schedule, then cancelled', async () => {
    const { id, pastDue } = await declinedRenewal('tok_renewal_insufficient_funds', { retryScheduleDays: [1, 1] });
    const renewal = pastDue.latestInvoice as SubscriptionBody;
    expect(renewal).toMatchObject({
      failureCode: 'insufficient_funds',
      declineType: 'soft',
      nextAttemptAt: expect.any(String),
    });
    const cancelled = await subs.until(id, (s) => s.status === 'cancelled', 15_000);
    expect(cancelled).toMatchObject({
      cancellationReason: 'payment_failed',
      latestInvoice: { status: 'uncollectible' },
    });
    expect(await attemptsOn(id, renewal.id as string)).toEqual(['failed', 'failed', 'failed']);
    expect(newCardMail(id)).toHaveLength(0);
  });
});
