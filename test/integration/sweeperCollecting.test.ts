import { call, eventually } from '../helpers/http';
import { startCallbackReceiver } from '../helpers/callbackReceiver';
import { createTestMerchant, startPaymentStack, type PaymentStack, type TestMerchant } from '../helpers/stack';
import { sleep, subscriptionClient, succeededByInvoice, type SubscriptionBody } from '../helpers/subscriptions';
import { sweepOrphansWorkflow, type SweepResult } from '../../workflows/sweepOrphans';
import { subscriptionWorkflowId } from '../../workflows/subscriptionApi';

/**
 * A subscription whose invoice is being collected when its workflow ends (issue 42 item 6;
 * decision 0061): the live sweep starts a new run that collects that invoice on exactly where the
 * record shows the lost one stopped: a soft decline's next retry, a hard decline's wait for a new
 * card (its deadline), an authentication wait (its start and reminders), a charge the processor
 * decides later (a first one: the subscription `pending`). What the merchant observes: the
 * subscription's status, the sandbox ledger (one capture per invoice, no attempt while one
 * waits), the customer's emails (none twice), the merchant's events. A one-second billing day;
 * workflows are terminated through the Temporal client, as an operator would.
 */
describe('the sweeper revives subscriptions whose invoice is being collected', () => {
  const DAY_MS = 1000;
  let stack: PaymentStack;
  let merchant: TestMerchant;
  let subs: ReturnType<typeof subscriptionClient>;

  const describeRun = async (id: string) =>
    (await stack.api.client.workflow.getHandle(subscriptionWorkflowId(id)).describe()).status.name;
  const terminate = async (id: string) => {
    await stack.api.client.workflow
      .getHandle(subscriptionWorkflowId(id))
      .terminate('test: the workflow ended under a live record');
    expect(await describeRun(id)).toBe('TERMINATED');
  };
  /** Only the live pass over subscriptions, for this merchant's records. */
  const sweepLive = (): Promise<SweepResult> =>
    stack.worker.client.workflow.execute(sweepOrphansWorkflow, {
      taskQueue: stack.taskQueue,
      workflowId: `sweep-live-collecting-${Date.now()}-${Math.random()}`,
      args: [
        {
          graceSeconds: 0,
          pageSize: 10,
          maxRows: 1000,
          merchantId: merchant.merchantId,
          kinds: [],
          liveKinds: ['subscriptions'],
        },
      ],
    });
  /** Terminates the run, then the sweep starts exactly one new run (and none while it runs). */
  const loseAndRevive = async (id: string) => {
    await terminate(id);
    expect((await sweepLive()).revived).toEqual({ subscriptions: 1 });
    expect(await describeRun(id)).toBe('RUNNING');
    expect((await sweepLive()).revived).toEqual({ subscriptions: 0 });
  };
  const attemptsOn = async (id: string, invoiceId: string) =>
    (await subs.captures(id)).filter((c) => c.metadata.invoiceId === invoiceId).map((c) => c.status);
  const mailLike = (id: string, subject: RegExp) => subs.mail(id).filter((e) => subject.test(e.subject));
  /** No email sent twice: every subject and text is there once. */
  const noDuplicateMail = (id: string) => {
    const mail = subs.mail(id).map((e) => `${e.subject}\n${e.text}`);
    expect(new Set(mail).size).toBe(mail.length);
  };

  beforeAll(async () => {
    stack = await startPaymentStack('sweepcollect', { billingDaySeconds: DAY_MS / 1000 }, undefined, undefined, {
      sandboxProcessingSeconds: 600,
    });
    merchant = await createTestMerchant(stack.orm, 'Revived collections merchant');
    subs = subscriptionClient(stack, merchant);
  });
  afterAll(() => stack.close());

  it('past_due after a soft decline: the revived run retries on schedule, then cancels at its end; no extra attempt', async () => {
    const created = await subs.create({
      cardToken: 'tok_renewal_insufficient_funds',
      billingIntervalDays: 2,
      retryScheduleDays: [2, 2],
    });
    expect(created.body.status).toBe('active');
    const id = created.body.id as string;
    const pastDue = await subs.until(id, (s) => s.status === 'past_due', 15_000);
    const renewal = pastDue.latestInvoice as SubscriptionBody;
    expect(renewal).toMatchObject({ attempts: 1, declineType: 'soft', nextAttemptAt: expect.any(String) });
    await loseAndRevive(id);

    const cancelled = await subs.until(id, (s) => s.status === 'cancelled', 20_000);
    expect(cancelled).toMatchObject({
      cancellationReason: 'payment_failed',
      latestInvoice: { id: renewal.id, status: 'uncollectible', attempts: 3 },
    });
    // The schedule's two retries, no more, none early.
    const retried = (await subs.captures(id)).filter((c) => c.metadata.invoiceId === renewal.id);
    expect(retried.map((c) => c.status)).toEqual(['failed', 'failed', 'failed']);
    expect(Date.parse(retried[1]!.createdAt)).toBeGreaterThanOrEqual(Date.parse(renewal.nextAttemptAt as string));
    await sleep(2 * DAY_MS);
    expect(await attemptsOn(id, renewal.id as string)).toEqual(['failed', 'failed', 'failed']);
    await eventually(
      async () => mailLike(id, /cancelled/),
      (l) => l.length === 1,
    );
    expect(mailLike(id, /Payment failed/)).toHaveLength(3);
    noDuplicateMail(id);
    expect((await sweepLive()).revived).toEqual({ subscriptions: 0 });
  });

  it('past_due after a hard decline: the revived run keeps the wait’s deadline; no retry with that card', async () => {
    const created = await subs.create({
      cardToken: 'tok_renewal_lost_card',
      billingIntervalDays: 2,
      retryScheduleDays: [5],
    });
    const id = created.body.id as string;
    const pastDue = await subs.until(id, (s) => s.status === 'past_due', 15_000);
    const declinedAt = Date.now();
    const renewal = pastDue.latestInvoice as SubscriptionBody;
    expect(renewal).toMatchObject({ declineType: 'hard', nextAttemptAt: null });
    await eventually(
      async () => mailLike(id, /A new card is needed/),
      (l) => l.length === 1,
    );
    // Lost two days into the five-day wait.
    await sleep(2 * DAY_MS);
    await loseAndRevive(id);

    const cancelled = await subs.until(id, (s) => s.status === 'cancelled', 15_000);
    // Five days from the decline, not from the revival (which would be seven).
    expect(Date.now() - declinedAt).toBeGreaterThanOrEqual(4 * DAY_MS);
    expect(Date.now() - declinedAt).toBeLessThan(6.5 * DAY_MS);
    expect(cancelled).toMatchObject({
      cancellationReason: 'payment_failed',
      latestInvoice: { id: renewal.id, status: 'uncollectible', declineType: 'hard' },
    });
    expect(await attemptsOn(id, renewal.id as string)).toEqual(['failed']);
    expect(mailLike(id, /A new card is needed/)).toHaveLength(1);
    noDuplicateMail(id);
  });

  it('past_due after a hard decline: a new card reaches the revived run and is charged at once, once', async () => {
    const created = await subs.create({
      cardToken: 'tok_renewal_lost_card',
      billingIntervalDays: 2,
      retryScheduleDays: [5],
    });
    const id = created.body.id as string;
    const pastDue = await subs.until(id, (s) => s.status === 'past_due', 15_000);
    const renewalId = (pastDue.latestInvoice as SubscriptionBody).id as string;
    await loseAndRevive(id);
    const updated = await call<SubscriptionBody>(
      stack.api.baseUrl,
      'POST',
      `/subscriptions/${id}/payment-method`,
      merchant.auth,
      { cardToken: 'tok_success' },
    );
    expect(updated.status).toBe(200);
    expect(updated.body).toMatchObject({
      status: 'active',
      latestInvoice: { id: renewalId, status: 'paid', attempts: 2 },
    });
    expect(await attemptsOn(id, renewalId)).toEqual(['failed', 'succeeded']);
    await subs.cancel(id);
    for (const count of succeededByInvoice(await subs.captures(id)).values()) expect(count).toBe(1);
  });

  it('an invoice requires_action: the revived run keeps the wait and its reminders; authenticated, paid once', async () => {
    const receiver = await startCallbackReceiver();
    try {
      const created = await subs.create({
        cardToken: 'tok_3ds_offsession',
        billingIntervalDays: 2,
        retryScheduleDays: [2, 20],
        callbackUrl: receiver.url,
      });
      const id = created.body.id as string;
      const waiting = await subs.until(id, (s) => s.latestInvoice?.status === 'requires_action', 15_000);
      const invoice = waiting.latestInvoice as SubscriptionBody;
      expect(waiting.status).toBe('past_due');
      // The first reminder (two days on) was sent by the lost run.
      await eventually(
        async () => mailLike(id, /Reminder: action/),
        (l) => l.length === 1,
        10_000,
      );
      await loseAndRevive(id);
      // Nothing charged, no reminder again, while it waits.
      await sleep(3 * DAY_MS);
      expect(await attemptsOn(id, invoice.id as string)).toEqual(['requires_action']);
      expect(mailLike(id, /[Aa]ction required/)).toHaveLength(2);
      expect((await subs.get(id)).body.latestInvoice).toMatchObject({ status: 'requires_action' });

      // The customer authenticates: the processor's webhook reaches the revived run; paid once.
      expect((await fetch(`${invoice.hostedUrl as string}/authenticate`, { method: 'POST' })).status).toBe(200);
      const active = await subs.until(id, (s) => s.status === 'active', 10_000);
      expect(active.latestInvoice).toMatchObject({ id: invoice.id, status: 'paid', attempts: 1 });
      expect(await attemptsOn(id, invoice.id as string)).toEqual(['succeeded']);
      const types = await eventually(
        async () => receiver.received.map((r) => r.json.type as string),
        (t) => t.includes('subscription.charge_succeeded'),
      );
      expect(types.filter((t) => t === 'subscription.payment_action_required')).toHaveLength(1);
      expect(types.filter((t) => t === 'subscription.charge_failed')).toHaveLength(0);
      await subs.cancel(id);
      for (const count of succeededByInvoice(await subs.captures(id)).values()) expect(count).toBe(1);
      noDuplicateMail(id);
    } finally {
      await receiver.close();
    }
  });

  it('a cancellation the lost run accepted and never finished: the revived run takes it first; nothing charged', async () => {
    const created = await subs.create({
      cardToken: 'tok_3ds_offsession',
      billingIntervalDays: 2,
      retryScheduleDays: [20],
    });
    const id = created.body.id as string;
    const waiting = await subs.until(id, (s) => s.latestInvoice?.status === 'requires_action', 15_000);
    const invoiceId = waiting.latestInvoice.id as string;
    // The processor down: the run accepts the DELETE, then cannot cancel the attempt there.
    await stack.sandbox('/_admin/faults', { payments: 'unavailable' });
    try {
      const deleted = await subs.cancel(id);
      expect(deleted.status).toBe(503);
      expect(deleted.body.details).toMatchObject({ cancellation: 'accepted' });
      await loseAndRevive(id);
    } finally {
      await stack.sandbox('/_admin/faults', {});
    }
    const cancelled = await subs.until(id, (s) => s.status === 'cancelled', 15_000);
    expect(cancelled).toMatchObject({ cancellationReason: 'merchant_request', latestInvoice: { id: invoiceId } });
    expect(cancelled.latestInvoice.status).not.toBe('paid');
    // The waiting attempt was cancelled at the processor: its page captures nothing.
    expect((await fetch(`${waiting.latestInvoice.hostedUrl as string}/authenticate`, { method: 'POST' })).ok).toBe(
      false,
    );
    await sleep(2 * DAY_MS);
    expect(succeededByInvoice(await subs.captures(id)).get(invoiceId)).toBeUndefined();
    expect(await subs.invoices(id)).toHaveLength(2);
    noDuplicateMail(id);
  });

  it('a DELETE that finds no run (it ended under a live record): a new run takes the cancel first; cancelled, nothing charged', async () => {
    const created = await subs.create({ cardToken: 'tok_success', billingIntervalDays: 2, retryScheduleDays: [2] });
    expect(created.body.status).toBe('active');
    const id = created.body.id as string;
    await terminate(id);
    const capturesBefore = (await subs.captures(id)).length;

    const deleted = await subs.cancel(id);
    expect(deleted.status).toBe(200);
    expect(deleted.body).toMatchObject({ id, status: 'cancelled', cancellationReason: 'merchant_request' });
    expect((await subs.get(id)).body.status).toBe('cancelled');
    // The run the DELETE started ended with it; the sweep finds nothing live; no renewal follows.
    await eventually(
      () => describeRun(id),
      (st) => st === 'COMPLETED',
    );
    expect((await sweepLive()).revived).toEqual({ subscriptions: 0 });
    await sleep(3 * DAY_MS);
    expect(await subs.captures(id)).toHaveLength(capturesBefore);
    expect(await subs.invoices(id)).toHaveLength(1);
    // A second DELETE answers the same, starts nothing.
    const again = await subs.cancel(id);
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ status: 'cancelled' });
  });

  it('an attempt in doubt (its call marked sent, never received): asked about by its key, then made once under it', async () => {
    const created = await subs.create({ cardToken: 'tok_success', billingIntervalDays: 2, retryScheduleDays: [30] });
    expect(created.body.status).toBe('active');
    const id = created.body.id as string;
    // The renewal declined (soft): its retry is due in 30 days.
    await stack.sandbox('/_admin/faults', { payments: 'decline' });
    let pastDue: SubscriptionBody;
    try {
      pastDue = await subs.until(id, (s) => s.status === 'past_due', 15_000);
    } finally {
      await stack.sandbox('/_admin/faults', {});
    }
    const invoiceId = pastDue.latestInvoice.id as string;
    await terminate(id);
    // What a run lost mid-call leaves: the retry's call marked sent (committed before the provider
    // is asked), no outcome recorded, and nothing ever reached the provider.
    await stack.orm.em
      .getConnection()
      .execute('update invoices set provider_call_sent_at = now() where id = ?', [invoiceId]);
    expect((await sweepLive()).revived).toEqual({ subscriptions: 1 });

    // Asked about by its key (nothing there), then that attempt made (the same key), once.
    const active = await subs.until(id, (s) => s.status === 'active', 30_000);
    expect(active.latestInvoice).toMatchObject({ id: invoiceId, status: 'paid', attempts: 2 });
    const attempts = (await subs.captures(id)).filter((c) => c.metadata.invoiceId === invoiceId);
    expect(attempts.map((c) => [c.status, c.idempotencyKey])).toEqual([
      ['failed', invoiceId],
      ['succeeded', `${invoiceId}.retry1`],
    ]);
    await subs.cancel(id);
    noDuplicateMail(id);
  });

  it('pending for its hosted card authorization: the revived run waits for the customer; authorized, charged once', async () => {
    const created = await subs.create({ billingIntervalDays: 30 });
    expect(created.body).toMatchObject({ status: 'pending', redirectUrl: expect.any(String), latestInvoice: null });
    const id = created.body.id as string;
    await loseAndRevive(id);
    expect((await fetch(`${created.body.redirectUrl as string}/pay`, { method: 'POST' })).status).toBeLessThan(400);
    const active = await subs.until(id, (s) => s.status === 'active', 15_000);
    expect(active.latestInvoice).toMatchObject({ status: 'paid', attempts: 1 });
    expect((await subs.captures(id)).map((c) => c.status)).toEqual(['succeeded']);
    await eventually(
      async () => mailLike(id, /is active/),
      (l) => l.length === 1,
    );
    await subs.cancel(id);
    noDuplicateMail(id);
  });

  it('a pending first charge processing: the revived run follows the processor; captured, it is active', async () => {
    const receiver = await startCallbackReceiver();
    try {
      const created = await subs.create({
        cardToken: 'tok_processing',
        billingIntervalDays: 30,
        callbackUrl: receiver.url,
      });
      expect(created.body).toMatchObject({ status: 'pending', latestInvoice: { status: 'processing', attempts: 1 } });
      const id = created.body.id as string;
      const invoiceId = (created.body.latestInvoice as SubscriptionBody).id as string;
      await loseAndRevive(id);
      await sleep(DAY_MS);
      expect(await attemptsOn(id, invoiceId)).toEqual(['processing']);
      const [row] = (await subs.invoices(id)).filter((i) => i.id === invoiceId);
      await stack.sandbox('/_admin/settle-payment', { transactionId: row!.providerTransactionId, status: 'succeeded' });

      const active = await subs.until(id, (s) => s.status === 'active', 10_000);
      expect(active.latestInvoice).toMatchObject({ id: invoiceId, status: 'paid', attempts: 1 });
      expect(await attemptsOn(id, invoiceId)).toEqual(['succeeded']);
      const types = await eventually(
        async () => receiver.received.map((r) => r.json.type as string),
        (t) => t.includes('subscription.activated') && t.includes('subscription.charge_succeeded'),
      );
      expect(types.filter((t) => t === 'subscription.activated')).toHaveLength(1);
      await eventually(
        async () => mailLike(id, /is active/),
        (l) => l.length === 1,
      );
      await subs.cancel(id);
      noDuplicateMail(id);
    } finally {
      await receiver.close();
    }
  });

  it('a renewal processing: the revived run waits for the processor; failed, the retries follow the schedule', async () => {
    const created = await subs.create({ cardToken: 'tok_processing', billingIntervalDays: 2, retryScheduleDays: [30] });
    const id = created.body.id as string;
    const first = (created.body.latestInvoice as SubscriptionBody).id as string;
    const [firstRow] = (await subs.invoices(id)).filter((i) => i.id === first);
    await stack.sandbox('/_admin/settle-payment', {
      transactionId: firstRow!.providerTransactionId,
      status: 'succeeded',
    });
    await subs.until(id, (s) => s.status === 'active', 10_000);
    const renewing = await subs.until(
      id,
      (s) => s.latestInvoice?.status === 'processing' && s.latestInvoice.id !== first,
      15_000,
    );
    const renewalId = renewing.latestInvoice.id as string;
    expect(renewing.status).toBe('active');
    await loseAndRevive(id);
    await sleep(DAY_MS);
    expect(await attemptsOn(id, renewalId)).toEqual(['processing']);
    const [row] = (await subs.invoices(id)).filter((i) => i.id === renewalId);
    await stack.sandbox('/_admin/settle-payment', { transactionId: row!.providerTransactionId, status: 'failed' });
    const pastDue = await subs.until(id, (s) => s.status === 'past_due', 10_000);
    expect(pastDue.latestInvoice).toMatchObject({
      id: renewalId,
      status: 'open',
      attempts: 1,
      declineType: 'soft',
      nextAttemptAt: expect.any(String),
    });
    await sleep(DAY_MS);
    expect(await attemptsOn(id, renewalId)).toEqual(['failed']);
    await subs.cancel(id);
    noDuplicateMail(id);
  });
});
