import { call, eventually } from '../helpers/http';
import { startCallbackReceiver } from '../helpers/callbackReceiver';
import { createTestMerchant, startPaymentStack, type PaymentStack, type TestMerchant } from '../helpers/stack';
import { sleep, subscriptionClient, succeededByInvoice, type SubscriptionBody } from '../helpers/subscriptions';

/**
 * Subscription charges that ask the customer to authenticate (PRODUCT.md "Processor lifecycle";
 * decision 0060), on the real stack: `tok_3ds_offsession` captures the first (on-session) charge
 * and asks for authentication on every renewal and retry. The invoice is `requires_action` with
 * its `hostedUrl`, the subscription `past_due`, the customer emailed, the merchant told; the
 * sandbox ledger shows one attempt per invoice charge, never a second one while it waits
 * (invariant 7). A one-second billing day.
 */
describe('subscriptions: authentication (3-D Secure)', () => {
  const DAY_MS = 1000;
  let stack: PaymentStack;
  let merchant: TestMerchant;
  let subs: ReturnType<typeof subscriptionClient>;

  const update = (id: string, body: unknown) =>
    call<SubscriptionBody>(stack.api.baseUrl, 'POST', `/subscriptions/${id}/payment-method`, merchant.auth, body);
  /** The ledger's attempts on one invoice, oldest first. */
  const attemptsOn = async (id: string, invoiceId: string) =>
    (await subs.captures(id)).filter((c) => c.metadata.invoiceId === invoiceId).map((c) => c.status);
  const actionMail = (id: string) => subs.mail(id).filter((e) => /[Aa]ction required/.test(e.subject));
  const page = (url: string, action: 'authenticate' | 'fail') => fetch(`${url}/${action}`, { method: 'POST' });

  beforeAll(async () => {
    stack = await startPaymentStack('subauth', { billingDaySeconds: DAY_MS / 1000 });
    merchant = await createTestMerchant(stack.orm, 'Authentication merchant');
    subs = subscriptionClient(stack, merchant);
  });
  afterAll(() => stack.close());

  /** A subscription whose first charge captured and whose first renewal waits for authentication. */
  async function waitingRenewal(patch: Record<string, unknown> = {}) {
    const created = await subs.create({ cardToken: 'tok_3ds_offsession', billingIntervalDays: 2, ...patch });
    expect(created.status).toBe(200);
    expect(created.body).toMatchObject({ status: 'active', latestInvoice: { status: 'paid', hostedUrl: null } });
    const id = created.body.id as string;
    const firstInvoiceId = (created.body.latestInvoice as SubscriptionBody).id as string;
    const pastDue = await subs.until(
      id,
      (s) => s.status === 'past_due' && s.latestInvoice?.status === 'requires_action',
      15_000,
    );
    const invoice = pastDue.latestInvoice as SubscriptionBody;
    expect(invoice.id).not.toBe(firstInvoiceId);
    return { id, invoice, askedAt: Date.now() };
  }

  it('a renewal asks to authenticate: requires_action invoice, email, events; authenticated, it is paid once', async () => {
    const receiver = await startCallbackReceiver();
    try {
      const { id, invoice } = await waitingRenewal({ retryScheduleDays: [5, 5], callbackUrl: receiver.url });
      expect(invoice).toMatchObject({
        status: 'requires_action',
        failureCode: 'authentication_required',
        nextAttemptAt: null,
        declineType: null,
        attempts: 1,
        subscriptionId: id,
      });
      const hostedUrl = invoice.hostedUrl as string;
      expect(hostedUrl).toMatch(new RegExp(`^${stack.sandboxUrl}/authenticate/txn_[0-9a-f]+$`));

      // The customer's email carries the page.
      const [mail] = await eventually(
        async () => actionMail(id),
        (l) => l.length === 1,
      );
      expect(mail!.text).toContain(`Please authenticate it here: ${hostedUrl}`);
      expect(subs.mail(id).filter((e) => /Payment failed/.test(e.subject))).toHaveLength(0);

      // The merchant's events: payment_action_required with the full invoice, past_due; no charge_failed.
      const action = await eventually(
        async () => receiver.received.find((r) => r.json.type === 'subscription.payment_action_required'),
        (r) => r !== undefined,
      );
      expect(action!.json.data.latestInvoice).toMatchObject({
        id: invoice.id,
        status: 'requires_action',
        hostedUrl,
        failureCode: 'authentication_required',
        nextAttemptAt: null,
        currency: 'USD',
        subscriptionId: id,
      });
      await eventually(
        async () => receiver.received.map((r) => r.json.type),
        (types) => types.includes('subscription.past_due'),
      );
      expect(receiver.received.filter((r) => r.json.type === 'subscription.charge_failed')).toHaveLength(0);

      // Nothing else is charged while it waits.
      expect(await attemptsOn(id, invoice.id as string)).toEqual(['requires_action']);

      // The customer authenticates: that charge pays the invoice, the subscription is active. The
      // processor's webhook wakes the workflow (its first poll would be 10 s after the ask).
      expect((await page(hostedUrl, 'authenticate')).status).toBe(200);
      const active = await subs.until(id, (s) => s.status === 'active', 5_000);
      const paid = (await subs.invoices(id)).find((i) => i.id === invoice.id)!;
      expect(paid).toMatchObject({ status: 'paid', attempts: 1 });
      expect(active.status).toBe('active');
      expect(await attemptsOn(id, invoice.id as string)).toEqual(['succeeded']);
      // The page captures nothing more.
      expect((await page(hostedUrl, 'authenticate')).status).toBe(409);
      await subs.cancel(id);
      for (const count of succeededByInvoice(await subs.captures(id)).values()) expect(count).toBe(1);
    } finally {
      await receiver.close();
    }
  });

  it('the processor down while the customer authenticates: the invoice waits, then is paid once when it answers again', async () => {
    // Eight-day periods: the next renewal stays well past this one's wait.
    const { id, invoice } = await waitingRenewal({ retryScheduleDays: [5, 5], billingIntervalDays: 8 });
    const invoiceId = invoice.id as string;
    await stack.sandbox('/_admin/faults', { payments: 'unavailable' });
    try {
      // The customer authenticates on the processor's page; its webhook wakes the workflow, whose
      // questions about the attempt get 503 while the processor's API is down.
      expect((await page(invoice.hostedUrl as string, 'authenticate')).status).toBe(200);
      await eventually(
        () => stack.requests(invoiceId),
        (seen) => seen.some((r) => r.method === 'GET' && r.status === 503),
        5_000,
        100,
      );
      await sleep(1000);
      // Meanwhile the record stays where it was: nothing else is charged.
      expect((await subs.get(id)).body).toMatchObject({
        status: 'past_due',
        latestInvoice: { id: invoiceId, status: 'requires_action', attempts: 1 },
      });
    } finally {
      await stack.sandbox('/_admin/faults', {});
    }
    const active = await subs.until(id, (s) => s.status === 'active', 10_000);
    expect(active.latestInvoice).toMatchObject({ id: invoiceId, status: 'paid', attempts: 1, hostedUrl: null });
    expect(await attemptsOn(id, invoiceId)).toEqual(['succeeded']);
    // Only questions under the attempt's key, never a second charge of the invoice.
    expect((await stack.requests(invoiceId)).filter((r) => r.method === 'POST')).toEqual([
      expect.objectContaining({ url: '/v1/payments', idempotencyKey: invoiceId, status: 200 }),
    ]);
    await sleep(1500);
    expect(await attemptsOn(id, invoiceId)).toEqual(['succeeded']);
    expect((await subs.get(id)).body).toMatchObject({
      status: 'active',
      latestInvoice: { id: invoiceId, status: 'paid' },
    });
    await subs.cancel(id);
    for (const count of succeededByInvoice(await subs.captures(id)).values()) expect(count).toBe(1);
  });

  it('failing on the page is a soft decline: retried on the schedule from then', async () => {
    const { id, invoice } = await waitingRenewal({ retryScheduleDays: [1, 10] });
    const failedAt = Date.now();
    expect((await page(invoice.hostedUrl as string, 'fail')).status).toBe(200);
    const declined = await subs.until(id, (s) => s.latestInvoice?.failureCode === 'authentication_failed', 10_000);
    expect(declined).toMatchObject({
      status: 'past_due',
      latestInvoice: { id: invoice.id, status: 'open', declineType: 'soft', hostedUrl: null, attempts: 1 },
    });
    const nextAttemptAt = Date.parse(declined.latestInvoice.nextAttemptAt as string);
    expect(nextAttemptAt).toBeGreaterThanOrEqual(failedAt + 0.5 * DAY_MS);
    // The retry (off-session) asks to authenticate again, on a page of its own.
    const again = await subs.until(id, (s) => s.latestInvoice?.status === 'requires_action', 10_000);
    expect(again.latestInvoice).toMatchObject({ id: invoice.id, attempts: 2 });
    expect(again.latestInvoice.hostedUrl).not.toBe(invoice.hostedUrl);
    expect(await attemptsOn(id, invoice.id as string)).toEqual(['failed', 'requires_action']);
    await subs.cancel(id);
  });

  it('no authentication within the schedule: a reminder at each date, then cancelled, invoice uncollectible', async () => {
    const { id, invoice, askedAt } = await waitingRenewal({ retryScheduleDays: [1, 2] });
    // A reminder at the schedule's first date (1 day on), instead of a retry.
    const reminded = await eventually(
      async () => actionMail(id),
      (l) => l.some((e) => /Reminder/.test(e.subject)),
      10_000,
    );
    expect(reminded.find((e) => /Reminder/.test(e.subject))!.text).toContain(invoice.hostedUrl as string);
    expect(await attemptsOn(id, invoice.id as string)).toEqual(['requires_action']);
    const cancelled = await subs.until(id, (s) => s.status === 'cancelled', 15_000);
    // Three billing days (1 + 2) after the attempt that asked, not before.
    expect(Date.now() - askedAt).toBeGreaterThanOrEqual(2.5 * DAY_MS);
    expect(cancelled).toMatchObject({
      cancellationReason: 'payment_failed',
      latestInvoice: { id: invoice.id, status: 'uncollectible', hostedUrl: null },
    });
    // The attempt was cancelled at the processor: its page captures nothing.
    expect(await attemptsOn(id, invoice.id as string)).toEqual(['canceled']);
    expect((await page(invoice.hostedUrl as string, 'authenticate')).status).toBe(410);
    expect(actionMail(id).filter((e) => /Reminder/.test(e.subject))).toHaveLength(1);
  });

  it('DELETE while waiting: cancelled at once, the attempt cancelled at the processor, the invoice void', async () => {
    const { id, invoice } = await waitingRenewal({ retryScheduleDays: [5] });
    const deleted = await subs.cancel(id);
    expect(deleted.status).toBe(200);
    expect(deleted.body).toMatchObject({ status: 'cancelled', latestInvoice: { id: invoice.id, status: 'void' } });
    expect(await attemptsOn(id, invoice.id as string)).toEqual(['canceled']);
    expect((await page(invoice.hostedUrl as string, 'authenticate')).status).toBe(410);
    await sleep(1.5 * DAY_MS);
    expect(await attemptsOn(id, invoice.id as string)).toEqual(['canceled']);
    expect(succeededByInvoice(await subs.captures(id)).get(invoice.id as string)).toBeUndefined();
  });

  it('DELETE after an unreadable answer about the waiting attempt: still cancelled at the processor first, never voided with it live', async () => {
    // The schedule's total (30 s here) is the authentication's deadline: well after the DELETE.
    const { id, invoice } = await waitingRenewal({ retryScheduleDays: [30] });
    // The workflow's next question about the attempt (10 s after it asked) gets an answer nobody
    // can read (the chaos run's finding: the wait was forgotten, and a DELETE then voided the
    // invoice without cancelling the attempt, which the customer went on to authenticate).
    await stack.sandbox('/_admin/faults', { payments: 'invalid' });
    await sleep(13_000);
    await stack.sandbox('/_admin/faults', {});
    const deleted = await subs.cancel(id);
    // Done at once, or accepted while the workflow finishes a question about the attempt.
    if (deleted.status !== 200) expect(deleted.body).toMatchObject({ details: { cancellation: 'accepted' } });
    const cancelled = await subs.until(id, (b) => b.status === 'cancelled', 30_000);
    expect(cancelled).toMatchObject({ status: 'cancelled', latestInvoice: { id: invoice.id, status: 'void' } });
    expect(await attemptsOn(id, invoice.id as string)).toEqual(['canceled']);
    expect((await page(invoice.hostedUrl as string, 'authenticate')).status).toBe(410);
    expect(succeededByInvoice(await subs.captures(id)).get(invoice.id as string)).toBeUndefined();
  });

  it('a card update while waiting cancels the attempt, then charges the new card; the old page says the invoice moved on', async () => {
    const { id, invoice } = await waitingRenewal({ retryScheduleDays: [5] });
    const updated = await update(id, { cardToken: 'tok_success' });
    expect(updated.status).toBe(200);
    expect(updated.body).toMatchObject({ status: 'active', latestInvoice: { id: invoice.id, status: 'paid' } });
    expect(await attemptsOn(id, invoice.id as string)).toEqual(['canceled', 'succeeded']);
    const old = await fetch(`${invoice.hostedUrl as string}/authenticate`, {
      method: 'POST',
      headers: { accept: 'text/html' },
    });
    expect(old.status).toBe(410);
    expect(await old.text()).toContain('moved on');
    await subs.cancel(id);
    for (const count of succeededByInvoice(await subs.captures(id)).values()) expect(count).toBe(1);
  });

  it('a first charge asking to authenticate (tok_3ds): the create answers 200 past_due; authenticated, active', async () => {
    const created = await subs.create({ cardToken: 'tok_3ds', billingIntervalDays: 30, retryScheduleDays: [5] });
    expect(created.status).toBe(200);
    expect(created.body).toMatchObject({
      status: 'past_due',
      latestInvoice: { status: 'requires_action', failureCode: 'authentication_required', nextAttemptAt: null },
    });
    const id = created.body.id as string;
    const invoice = created.body.latestInvoice as SubscriptionBody;
    expect((await page(invoice.hostedUrl as string, 'authenticate')).status).toBe(200);
    const active = await subs.until(id, (s) => s.status === 'active', 15_000);
    expect(active.latestInvoice).toMatchObject({ id: invoice.id, status: 'paid', hostedUrl: null });
    expect(await attemptsOn(id, invoice.id as string)).toEqual(['succeeded']);
    await subs.cancel(id);
  });

  it('a card update after the old page captured (its webhook lost): the invoice is paid, the new card not charged', async () => {
    const { id, invoice } = await waitingRenewal({ retryScheduleDays: [5] });
    const transactionId = /txn_[0-9a-f]+$/.exec(invoice.hostedUrl as string)![0];
    // The customer authenticated; the processor's webhook never arrived.
    stack.sandboxStore.authenticationAct(transactionId, 'authenticate');
    const updated = await update(id, { cardToken: 'tok_success' });
    expect(updated.status).toBe(200);
    expect(updated.body).toMatchObject({ status: 'active' });
    // The waiting invoice is paid by the old page's capture. (Its period may have ended meanwhile:
    // the next renewal, charged at once on the new card, can already be the latest invoice.)
    const paid = (await subs.invoices(id)).find((i) => i.id === invoice.id);
    expect(paid).toMatchObject({ status: 'paid' });
    expect(await attemptsOn(id, invoice.id as string)).toEqual(['succeeded']);
    await subs.cancel(id);
  });
});
