import { ApplicationFailure } from '@temporalio/common';
import type { WorkflowHandle } from '@temporalio/client';
import { Context } from '@temporalio/activity';
import { Worker } from '@temporalio/worker';
import type { ChargeRequest } from '../../activities/subscriptions';
import type { Outbox, SubscriptionStatus } from '../../src/rules/subscriptionPlan';
import { chargeRequestOf } from '../../src/rules/subscriptionCollection';
import type { subscriptionWorkflow } from '../../workflows/subscription';
import {
  cancelSubscriptionUpdate,
  providerSubscriptionEventSignal,
  subscriptionWorkflowId,
  updatePaymentMethodUpdate,
  type SubscriptionWorkflowInput,
} from '../../workflows/subscriptionApi';
import { StuckKey } from '../../workflows/searchAttributes';
import { composedOpenAndCharge } from '../helpers/openAndCharge';
import {
  runHistories,
  shippedWorkflowBundle,
  soonestOpenTimer,
  useTimeSkippingEnvironment,
  terminatedAfterEachTest,
  untilNoTimerDue,
} from '../helpers/timeSkipping';

const DAY_MS = 86_400_000;
const MINUTE_MS = 60_000;

interface FakeInvoice {
  id: string;
  periodIndex: number;
  status: 'open' | 'paid' | 'void';
  attempts: number;
  periodStart: string;
  periodEnd: string;
  /** Workflow time of the next attempt: the period's start, then each retry's delay added. */
  clockMs: number;
}

/**
 * The subscription's database and provider as the activities see them, in memory: just enough
 * rules (one invoice per period, attempts recorded once, status moves, emails recorded) for the
 * workflow to be judged on what it asks for. Every activity is a jest.fn.
 */
function fakeBilling(rules: {
  /** Whether this attempt is declined (`card`: the card on file, `tok_old` until replaced). */
  declines?: (invoice: FakeInvoice, attempt: number, card: string) => boolean;
  /** Whether the provider is unreachable for this call (counted per invoice). */
  unavailable?: (invoice: FakeInvoice, call: number) => boolean;
  /** Whether this call times out without an answer (nothing charged; counted per invoice). */
  timesOut?: (invoice: FakeInvoice, call: number) => boolean;
  /** Whether the customer has authorized a card yet (hosted flow). */
  authorized?: () => boolean;
  /** Whether the customer has completed the hosted card update page (its card: `tok_page`). */
  cardPageDone?: () => boolean;
}) {
  let status: SubscriptionStatus = 'created';
  let card = 'tok_old';
  let emails = 0;
  const invoices = new Map<string, FakeInvoice>();
  const calls = new Map<string, number>();
  const outbox = (emailKinds: string[]): Outbox => ({
    status,
    emailIds: emailKinds.map((kind) => `email-${++emails}-${kind}`),
    eventIds: [],
  });
  const activate = (): string[] => {
    const first = status === 'created' || status === 'pending';
    if (status !== 'cancelled') status = 'active';
    return first ? ['activated'] : [];
  };
  const activities = {
    awaitRecordVisible: jest.fn(async () => true),
    unsentSubscriptionEmails: jest.fn(async () => [] as string[]),
    sendEmail: jest.fn(async (_emailId: string) => 'sent' as const),
    requestCardAuthorization: jest.fn(async () => {
      status = 'pending';
      return { kind: 'pending' as const, outbox: outbox([]) };
    }),
    checkCardAuthorization: jest.fn(async () => (rules.authorized?.() ? 'authorized' : 'waiting')),
    expireCardAuthorization: jest.fn(async () => (rules.authorized?.() ? 'authorized' : 'expired')),
    openInvoice: jest.fn(
      async (input: { periodIndex: number; amountMinor: number; periodStart: string; periodEnd: string }) => {
        const id = `inv_${input.periodIndex}`;
        let invoice = invoices.get(id);
        let kinds: string[] = [];
        if (!invoice) {
          if (status === 'cancelled') return { kind: 'cancelled' as const };
          invoice = {
            id,
            periodIndex: input.periodIndex,
            status: input.amountMinor === 0 ? 'paid' : 'open',
            attempts: 0,
            periodStart: input.periodStart,
            periodEnd: input.periodEnd,
            clockMs: Date.parse(input.periodStart),
          };
          invoices.set(id, invoice);
          if (invoice.status === 'paid') kinds = activate();
        }
        return { kind: invoice.status, invoiceId: id, attempts: invoice.attempts, outbox: outbox(kinds) };
      },
    ),
    chargeInvoice: jest.fn(async (req: ChargeRequest) => {
      const invoice = invoices.get(req.invoiceId)!;
      const call = (calls.get(invoice.id) ?? 0) + 1;
      calls.set(invoice.id, call);
      if (invoice.status === 'paid') return { kind: 'paid' as const, outbox: outbox([]) };
      if (invoice.status === 'void') return { kind: 'void' as const, outbox: outbox([]) };
      if (rules.unavailable?.(invoice, call)) {
        throw ApplicationFailure.create({ message: 'provider unavailable (503)', type: 'unavailable' });
      }
      if (rules.timesOut?.(invoice, call)) {
        throw ApplicationFailure.create({ message: 'provider timed out', type: 'timeout', nonRetryable: true });
      }
      if (invoice.attempts >= req.attempt) throw new Error(`attempt ${req.attempt} of ${invoice.id} made twice`);
      invoice.attempts = req.attempt;
      if (rules.declines?.(invoice, req.attempt, card)) {
        if (status !== 'cancelled') status = 'past_due';
        if (req.retryDelayMs !== null) invoice.clockMs += req.retryDelayMs;
        const nextAttemptAt = req.retryDelayMs === null ? null : new Date(invoice.clockMs).toISOString();
        return { kind: 'declined' as const, nextAttemptAt, outbox: outbox(['failed']) };
      }
      invoice.status = 'paid';
      return { kind: 'paid' as const, outbox: outbox([...activate(), 'receipt']) };
    }),
    reconcileInvoiceCharge: jest.fn(async () => ({ kind: 'not_found' as const })),
    requestCardUpdatePage: jest.fn(async (req: { subscriptionId: string; page: number }) => ({
      kind: 'pending' as const,
      transactionId: `seti_${req.page}`,
    })),
    checkCardUpdate: jest.fn(async () => {
      if (!rules.cardPageDone?.()) return 'waiting' as const;
      card = 'tok_page';
      return 'authorized' as const;
    }),
    closeCardUpdate: jest.fn(async () => 'ended' as const),
    replaceCard: jest.fn(async (req: { subscriptionId: string; cardToken: string }) => {
      if (status !== 'active' && status !== 'past_due') return { kind: 'not_updatable' as const, status };
      if (card === req.cardToken) return { kind: 'unchanged' as const, status };
      card = req.cardToken;
      return { kind: 'replaced' as const, status };
    }),
    cancelSubscriptionRecord: jest.fn(async (input: { reason: string; notify: boolean }) => {
      if (status === 'cancelled') return outbox([]);
      for (const invoice of invoices.values()) if (invoice.status === 'open') invoice.status = 'void';
      status = 'cancelled';
      return outbox(input.notify ? ['cancelled'] : []);
    }),
  };
  Object.assign(activities, { openAndChargeInvoice: composedOpenAndCharge(activities) });
  return {
    activities: activities as typeof activities & { openAndChargeInvoice: ReturnType<typeof composedOpenAndCharge> },
    status: () => status,
    card: () => card,
    invoices: () => [...invoices.values()].sort((a, b) => a.periodIndex - b.periodIndex),
    paid: () => [...invoices.values()].filter((i) => i.status === 'paid').length,
    attemptsOf: (invoiceId: string) =>
      activities.chargeInvoice.mock.calls.filter(([r]) => r.invoiceId === invoiceId).map(([r]) => r.attempt),
  };
}

/**
 * The subscription workflow itself (the shipped workflow code) on the Java time-skipping test
 * server, with stubbed activities: years of billing in seconds, and every loop driven past its
 * history bound to show each run stays short and the state crosses continue-as-new intact.
 */
describe('subscription workflow over years (time-skipping, stubbed activities)', () => {
  const testEnv = useTimeSkippingEnvironment({ perTest: true });
  let counter = 0;

  // A workflow a failed test leaves running would keep a task outstanding, and the test server
  // never skips time again: terminate it so the next test starts clean.
  const started = terminatedAfterEachTest();

  function input(overrides: Partial<SubscriptionWorkflowInput> = {}): SubscriptionWorkflowInput {
    return {
      subscriptionId: `sub_timeskip_${process.pid}_${++counter}`,
      merchantId: 'mer_timeskip',
      externalId: `ext-${counter}`,
      plan: {
        phases: [{ id: 'ph_evergreen', amountMinor: 1000, billingIntervalDays: 30, iterations: null }],
        retryScheduleDays: [1, 3, 5],
      },
      needsAuthorization: false,
      billingDaySeconds: 86_400,
      authorizationExpirySeconds: 86_400,
      callbackRetryInitialSeconds: 10,
      callbacks: false,
      ...overrides,
    };
  }

  async function run<T>(
    billing: ReturnType<typeof fakeBilling>,
    workflowInput: SubscriptionWorkflowInput,
    drive: (handle: WorkflowHandle<typeof subscriptionWorkflow>) => Promise<T>,
  ): Promise<T> {
    const env = testEnv();
    const taskQueue = `subscription-timeskip-${process.pid}-${counter}`;
    const worker = await Worker.create({
      connection: env.nativeConnection,
      taskQueue,
      workflowBundle: shippedWorkflowBundle(),
      activities: billing.activities,
    });
    return worker.runUntil(async () => {
      const handle = await env.client.workflow.start<typeof subscriptionWorkflow>('subscriptionWorkflow', {
        taskQueue,
        workflowId: subscriptionWorkflowId(workflowInput.subscriptionId),
        args: [workflowInput],
      });
      started.push(handle);
      return drive(handle);
    });
  }

  /** Waits (skipping time) until `check` holds; each step skips `stepMs` of workflow time. */
  async function skipUntil(check: () => boolean, stepMs: number, maxSteps = 400): Promise<void> {
    for (let i = 0; i < maxSteps && !check(); i++) await testEnv().sleep(stepMs);
    expect(check()).toBe(true);
  }

  /** The history length of every run of the chain, oldest first. */
  async function runLengths(workflowId: string): Promise<number[]> {
    return (await runHistories(testEnv(), workflowId)).map((events) => events.length);
  }

  /** Before a signal or an Update: no timer fires while its task runs (untilNoTimerDue). */
  function quiet(handle: WorkflowHandle): Promise<void> {
    return untilNoTimerDue(testEnv(), handle.workflowId);
  }

  async function cancelAndFinish(handle: WorkflowHandle<typeof subscriptionWorkflow>) {
    await quiet(handle);
    const status = await handle.executeUpdate(cancelSubscriptionUpdate, {
      args: [{ reason: 'test_over', notify: false }],
    });
    expect(status).toBe('cancelled');
    return handle.result();
  }

  it('bills a 5-year monthly subscription with declines and recoveries, each run under the bound', async () => {
    const declinedOnce = new Set([5, 17, 30, 52]);
    const billing = fakeBilling({
      declines: (inv, attempt) =>
        (declinedOnce.has(inv.periodIndex) && attempt === 1) || (inv.periodIndex === 40 && attempt < 3),
    });
    // A renewal is one workflow task now: five years fit under the default bound (600), so a
    // lower one makes the runs hand over.
    const wf = input({ historyEventLimit: 200 });
    const started = Date.now();
    const result = await run(billing, wf, async (handle) => {
      // 61 periods of 30 days: five years.
      await skipUntil(() => billing.paid() >= 61, 30 * DAY_MS);
      return cancelAndFinish(handle);
    });
    const wallMs = Date.now() - started;

    expect(result.status).toBe('cancelled');
    const invoices = billing.invoices();
    expect(invoices.length).toBeGreaterThanOrEqual(61);
    // Periods never shift: each starts where the previous one ended, 30 days long.
    invoices.forEach((inv, i) => {
      expect(inv.periodIndex).toBe(i);
      expect(Date.parse(inv.periodEnd) - Date.parse(inv.periodStart)).toBe(30 * DAY_MS);
      if (i > 0) expect(inv.periodStart).toBe(invoices[i - 1]!.periodEnd);
    });
    // Declined attempts were retried on schedule (new attempt numbers), then paid; none twice.
    for (const period of declinedOnce) expect(billing.attemptsOf(`inv_${period}`)).toEqual([1, 2]);
    expect(billing.attemptsOf('inv_40')).toEqual([1, 2, 3]);
    expect(invoices.filter((i) => i.status === 'paid').length).toBeGreaterThanOrEqual(61);
    // An email for every recorded change: activation, receipts, failures.
    const sent = billing.activities.sendEmail.mock.calls.map(([id]) => String(id));
    expect(sent.filter((id) => id.endsWith('-activated'))).toHaveLength(1);
    expect(sent.filter((id) => id.endsWith('-failed'))).toHaveLength(declinedOnce.size + 2);

    const runs = await runLengths(subscriptionWorkflowId(wf.subscriptionId));
    expect(runs.length).toBeGreaterThanOrEqual(2);
    for (const events of runs) expect(events).toBeLessThanOrEqual(200 + 40);
    process.stderr.write(
      `[time-skipping] 5 years monthly: ${invoices.length} periods, runs ${JSON.stringify(runs)}, ${wallMs} ms wall\n`,
    );
  }, 240_000);

  it('renewals: continues as new between periods at a low bound, periods contiguous', async () => {
    const billing = fakeBilling({});
    const wf = input({ historyEventLimit: 40 });
    await run(billing, wf, async (handle) => {
      await skipUntil(() => billing.paid() >= 18, 30 * DAY_MS);
      return cancelAndFinish(handle);
    });
    const invoices = billing.invoices();
    invoices.forEach((inv, i) => i > 0 && expect(inv.periodStart).toBe(invoices[i - 1]!.periodEnd));
    const runs = await runLengths(subscriptionWorkflowId(wf.subscriptionId));
    expect(runs.length).toBeGreaterThanOrEqual(4);
    for (const events of runs) expect(events).toBeLessThanOrEqual(40 + 40);
    // Every email was confirmed sent before each hand-over: no run looked for unsent ones.
    expect(billing.activities.unsentSubscriptionEmails).not.toHaveBeenCalled();
  }, 120_000);

  it('an email still unsent at a hand-over: the next run looks for unsent emails', async () => {
    const billing = fakeBilling({});
    // The first receipt never goes out (its activity gives up after a day); the others do.
    billing.activities.sendEmail.mockImplementation(async (emailId: string) => {
      if (emailId === 'email-2-receipt')
        throw ApplicationFailure.create({ message: 'SMTP down', type: 'email_failed' });
      return 'sent' as const;
    });
    billing.activities.unsentSubscriptionEmails.mockImplementation(async () => ['email-2-receipt']);
    const wf = input({ historyEventLimit: 40 });
    await run(billing, wf, async (handle) => {
      await skipUntil(() => billing.paid() >= 6, 30 * DAY_MS);
      return cancelAndFinish(handle);
    });
    expect((await runLengths(subscriptionWorkflowId(wf.subscriptionId))).length).toBeGreaterThanOrEqual(2);
    expect(billing.activities.unsentSubscriptionEmails).toHaveBeenCalled();
  }, 240_000);

  it('retries: continues as new in the middle of an invoice’s retries, attempts carry on', async () => {
    const billing = fakeBilling({ declines: (inv, attempt) => inv.periodIndex === 1 && attempt <= 9 });
    const wf = input({
      historyEventLimit: 40,
      plan: { ...input().plan, retryScheduleDays: [1, 1, 1, 1, 1, 1, 1, 1, 1, 1] },
    });
    await run(billing, wf, async (handle) => {
      await skipUntil(() => billing.paid() >= 3, DAY_MS);
      return cancelAndFinish(handle);
    });
    expect(billing.attemptsOf('inv_1')).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    const runs = await runLengths(subscriptionWorkflowId(wf.subscriptionId));
    expect(runs.length).toBeGreaterThanOrEqual(3);
    for (const events of runs) expect(events).toBeLessThanOrEqual(40 + 40);
  }, 120_000);

  it('provider unreachable: backs off, continues as new while waiting, charges once with the same attempt', async () => {
    // Period 1: unreachable for 25 calls (about four hours of backoff), then back.
    const billing = fakeBilling({ unavailable: (inv, call) => inv.periodIndex === 1 && call <= 25 });
    const wf = input({ historyEventLimit: 40 });
    await run(billing, wf, async (handle) => {
      await skipUntil(() => billing.paid() >= 1, 60_000);
      await testEnv().sleep(30 * DAY_MS - 60_000); // to period 1's start
      await skipUntil(() => billing.paid() >= 2, 10 * 60_000, 200);
      return cancelAndFinish(handle);
    });
    // Every try of period 1 was attempt 1 (nothing was charged while unreachable).
    const attempts = billing.attemptsOf('inv_1');
    expect(attempts.length).toBeGreaterThanOrEqual(25);
    expect(new Set(attempts)).toEqual(new Set([1]));
    expect(billing.invoices()[1]!.status).toBe('paid');
    const runs = await runLengths(subscriptionWorkflowId(wf.subscriptionId));
    expect(runs.length).toBeGreaterThanOrEqual(2);
    for (const events of runs) expect(events).toBeLessThanOrEqual(40 + 40);
  }, 180_000);

  it('hosted authorization: provider events while pending continue as new; the expiry is kept', async () => {
    let authorized = false;
    const billing = fakeBilling({ authorized: () => authorized });
    const wf = input({ needsAuthorization: true, historyEventLimit: 40, authorizationExpirySeconds: 3 * 86_400 });
    await run(billing, wf, async (handle) => {
      await skipUntil(() => billing.status() === 'pending', 60_000);
      for (let i = 0; i < 30; i++) {
        await quiet(handle);
        await handle.signal(providerSubscriptionEventSignal);
        await testEnv().sleep(60_000);
      }
      expect(billing.activities.checkCardAuthorization.mock.calls.length).toBeGreaterThanOrEqual(20);
      authorized = true;
      await quiet(handle);
      await handle.signal(providerSubscriptionEventSignal);
      await skipUntil(() => billing.paid() >= 1, 60_000);
      return cancelAndFinish(handle);
    });
    expect(billing.activities.expireCardAuthorization).not.toHaveBeenCalled();
    const runs = await runLengths(subscriptionWorkflowId(wf.subscriptionId));
    expect(runs.length).toBeGreaterThanOrEqual(2);
    for (const events of runs) expect(events).toBeLessThanOrEqual(40 + 40);
  }, 180_000);

  it('hosted authorization that crosses continue-as-new still expires at its original time', async () => {
    const billing = fakeBilling({ authorized: () => false });
    const wf = input({ needsAuthorization: true, historyEventLimit: 30, authorizationExpirySeconds: 86_400 });
    const result = await run(billing, wf, async (handle) => {
      await skipUntil(() => billing.status() === 'pending', 60_000);
      for (let i = 0; i < 20; i++) {
        await quiet(handle);
        await handle.signal(providerSubscriptionEventSignal);
        await testEnv().sleep(60_000);
      }
      return handle.result();
    });
    expect(result.status).toBe('cancelled');
    expect(billing.activities.expireCardAuthorization).toHaveBeenCalledTimes(1);
    expect(billing.activities.cancelSubscriptionRecord.mock.calls[0]![0]).toMatchObject({
      reason: 'authorization_expired',
    });
    expect((await runLengths(subscriptionWorkflowId(wf.subscriptionId))).length).toBeGreaterThanOrEqual(2);
  }, 180_000);

  it('card update: a past_due invoice is charged at once with the new card, paid once; the schedule restarts', async () => {
    // The first period's charges decline with the old card; the renewal's first attempt too.
    const billing = fakeBilling({
      declines: (inv, attempt, card) => card === 'tok_old' || (inv.periodIndex === 1 && attempt === 1),
    });
    const wf = input();
    await run(billing, wf, async (handle) => {
      await skipUntil(() => billing.status() === 'past_due', 60_000);
      const pastDueAt = await testEnv().currentTimeMs();
      await quiet(handle);
      const outcome = await handle.executeUpdate(updatePaymentMethodUpdate, {
        args: [{ cardToken: 'tok_new' }],
        updateId: 'card-1',
      });
      expect(outcome).toEqual({ kind: 'updated' });
      // Paid with the new card at once, not at the retry a day later.
      expect(billing.status()).toBe('active');
      expect((await testEnv().currentTimeMs()) - pastDueAt).toBeLessThan(DAY_MS);
      expect(billing.attemptsOf('inv_0')).toEqual([1, 2]);
      // The same card again changes nothing and charges nothing.
      await quiet(handle);
      expect(
        await handle.executeUpdate(updatePaymentMethodUpdate, { args: [{ cardToken: 'tok_new' }], updateId: 'card-2' }),
      ).toEqual({ kind: 'updated' });

      // The renewal is declined once (the new card), then retried on the schedule's first delay.
      await skipUntil(() => billing.paid() >= 2, DAY_MS / 4);
      return cancelAndFinish(handle);
    });
    expect(billing.attemptsOf('inv_0')).toEqual([1, 2]);
    expect(billing.invoices()[0]!.status).toBe('paid');
    const charges = billing.activities.chargeInvoice.mock.calls.map(([r]) => r);
    // The charge at once restarted the schedule: had it been declined, the next retry was 1 day.
    expect(charges.find((r) => r.invoiceId === 'inv_0' && r.attempt === 2)!.retryDelayMs).toBe(DAY_MS);
    expect(charges.find((r) => r.invoiceId === 'inv_1' && r.attempt === 1)!.retryDelayMs).toBe(DAY_MS);
    expect(billing.attemptsOf('inv_1')).toEqual([1, 2]);
    expect(billing.activities.replaceCard).toHaveBeenCalledTimes(2);
  }, 120_000);

  it('hosted card update: watched across continue-as-new, completed, the past_due invoice charged at once', async () => {
    let done = false;
    const billing = fakeBilling({ declines: (_inv, _attempt, card) => card === 'tok_old', cardPageDone: () => done });
    const wf = input({ historyEventLimit: 40 });
    await run(billing, wf, async (handle) => {
      await skipUntil(() => billing.status() === 'past_due', 60_000);
      const page = async () => {
        await quiet(handle);
        return handle.executeUpdate(updatePaymentMethodUpdate, { args: [{}], updateId: `page-${Math.random()}` });
      };
      expect(await page()).toEqual({ kind: 'hosted' });
      // Webhooks while the customer is on the page grow the history past the bound.
      for (let i = 0; i < 25; i++) {
        await quiet(handle);
        await handle.signal(providerSubscriptionEventSignal);
        await testEnv().sleep(60_000);
      }
      // Asked again while open: the same page, none created.
      expect(await page()).toEqual({ kind: 'hosted' });
      expect(billing.card()).toBe('tok_old');
      done = true;
      await quiet(handle);
      await handle.signal(providerSubscriptionEventSignal);
      await skipUntil(() => billing.paid() >= 1, 60_000);
      return cancelAndFinish(handle);
    });
    expect(billing.card()).toBe('tok_page');
    expect(billing.attemptsOf('inv_0')).toEqual([1, 2]);
    expect(billing.activities.requestCardUpdatePage).toHaveBeenCalledTimes(1);
    expect(billing.activities.closeCardUpdate).not.toHaveBeenCalled();
    const runs = await runLengths(subscriptionWorkflowId(wf.subscriptionId));
    expect(runs.length).toBeGreaterThanOrEqual(2);
    for (const events of runs) expect(events).toBeLessThanOrEqual(40 + 40);
  }, 120_000);

  it('card update while a renewal is opened and charged in one step: a declined attempt is followed at once', async () => {
    const billing = fakeBilling({ declines: (inv, _attempt, card) => inv.periodIndex === 1 && card === 'tok_old' });
    const { openAndChargeInvoice } = billing.activities;
    let workflow: WorkflowHandle<typeof subscriptionWorkflow> | undefined;
    let cardUpdate: Promise<unknown> | undefined;
    const attemptAt: number[] = [];
    billing.activities.openAndChargeInvoice = jest.fn(async (req: Parameters<typeof openAndChargeInvoice>[0]) => {
      const result = await openAndChargeInvoice(req);
      if ((req.period as { periodIndex: number }).periodIndex === 1) {
        attemptAt.push(await testEnv().currentTimeMs());
        // The merchant gives a new card while this step is still running (its decline recorded).
        cardUpdate = workflow!.executeUpdate(updatePaymentMethodUpdate, {
          args: [{ cardToken: 'tok_new' }],
          updateId: 'card-while-opening',
        });
        // A regular step lets the Update's handler run meanwhile; a local step's task holds it.
        const local = Context.current().info.isLocal;
        for (let i = 0; !local && i < 200 && billing.activities.replaceCard.mock.calls.length === 0; i++) {
          await sleepMs(25);
        }
      }
      return result;
    });
    const { chargeInvoice } = billing.activities;
    billing.activities.chargeInvoice = jest.fn(async (req: ChargeRequest) => {
      if (req.invoiceId === 'inv_1' && req.attempt === 2) attemptAt.push(await testEnv().currentTimeMs());
      return chargeInvoice(req);
    });
    const wf = input();
    await run(billing, wf, async (handle) => {
      workflow = handle;
      await skipUntil(() => cardUpdate !== undefined, DAY_MS / 4);
      // Time stands still until the Update is handled: on a loaded machine its delivery can lag
      // behind the next skips, and the schedule's retry would then come first.
      expect(await cardUpdate).toEqual({ kind: 'updated' });
      await skipUntil(() => billing.paid() >= 2, DAY_MS / 24);
      return cancelAndFinish(handle);
    });
    expect(billing.activities.replaceCard).toHaveBeenCalledTimes(1);
    expect(billing.attemptsOf('inv_1')).toEqual([1, 2]);
    expect(billing.invoices()[1]!.status).toBe('paid');
    // Charged with the new card at once, not at the schedule's first retry a day later.
    expect(attemptAt).toHaveLength(2);
    expect(attemptAt[1]! - attemptAt[0]!).toBeLessThan(DAY_MS / 2);
  }, 120_000);

  it('card update: refused by the validator once cancelled', async () => {
    const billing = fakeBilling({});
    const wf = input();
    await run(billing, wf, async (handle) => {
      await skipUntil(() => billing.paid() >= 1, 60_000);
      await quiet(handle);
      await handle.executeUpdate(cancelSubscriptionUpdate, { args: [{ reason: 'test_over', notify: false }] });
      await quiet(handle);
      await expect(
        handle.executeUpdate(updatePaymentMethodUpdate, { args: [{ cardToken: 'tok_new' }], updateId: 'card-late' }),
      ).rejects.toThrow();
      return handle.result();
    });
    expect(billing.activities.replaceCard).not.toHaveBeenCalled();
    expect(billing.card()).toBe('tok_old');
  }, 60_000);

  it('an Update sent milliseconds before a timer is due: quiet() skips past the timer first, and the run ends', async () => {
    // Without quiet(), about half of these hung: the timer fires while the Update's task runs, and
    // the test server refuses the task's CancelTimer (untilNoTimerDue's comment).
    for (const earlyMs of [30, 20]) {
      const billing = fakeBilling({});
      const result = await run(billing, input(), async (handle) => {
        await skipUntil(() => billing.paid() >= 1, 60_000);
        // The run waits on the next period's timer only.
        const dueMs = soonestOpenTimer((await handle.fetchHistory()).events ?? [])!;
        await testEnv().sleep(dueMs - (await testEnv().currentTimeMs()) - earlyMs);
        return cancelAndFinish(handle);
      });
      expect(result.status).toBe('cancelled');
      // The timer fired before the Update was sent: the next period was billed.
      expect(billing.paid()).toBe(2);
    }
  }, 90_000);

  /** Activity types the run scheduled as regular activities, and its workflow tasks. */
  async function taskCounts(workflowId: string) {
    const events = (await runHistories(testEnv(), workflowId)).flat();
    const scheduled = events
      .map((e) => e.activityTaskScheduledEventAttributes?.activityType?.name)
      .filter((name): name is string => !!name);
    const workflowTasks = events.filter((e) => e.workflowTaskCompletedEventAttributes).length;
    const handOvers = events.filter((e) => e.workflowExecutionContinuedAsNewEventAttributes).length;
    return { scheduled, workflowTasks, handOvers };
  }

  it('a renewal is one workflow task: its invoice opened and charged, and its receipt sent, by local activities', async () => {
    const billing = fakeBilling({});
    const { openAndChargeInvoice } = billing.activities;
    const ranLocal: boolean[] = [];
    billing.activities.openAndChargeInvoice = jest.fn(async (req: Parameters<typeof openAndChargeInvoice>[0]) => {
      ranLocal.push(Context.current().info.isLocal);
      return openAndChargeInvoice(req);
    });
    const wf = input();
    await run(billing, wf, async (handle) => {
      await skipUntil(() => billing.paid() >= 4, 30 * DAY_MS);
      return cancelAndFinish(handle);
    });
    const { scheduled, workflowTasks, handOvers } = await taskCounts(subscriptionWorkflowId(wf.subscriptionId));
    // Nothing scheduled for a period: only the start's visibility wait and the cancellation.
    expect(new Set(scheduled)).toEqual(new Set(['awaitRecordVisible', 'cancelSubscriptionRecord']));
    expect(ranLocal).toEqual(Array.from({ length: billing.paid() }, () => true));
    // No step of its own for the invoice, in the task or out of it.
    expect(billing.activities.openInvoice).toHaveBeenCalledTimes(billing.paid());
    // Per paid period: the task its timer wakes (charged, receipt sent, next timer); plus the
    // start, the task after its visibility wait, and the cancellation's two. A run hands over at
    // least every 30 days (decision 0084): each hand-over adds at most two (the drain, the new
    // run's first task).
    expect(handOvers).toBeGreaterThanOrEqual(1);
    expect(workflowTasks).toBeLessThanOrEqual(billing.paid() + 4 + 2 * handOvers);
    expect(
      billing.activities.sendEmail.mock.calls.map(([id]) => String(id)).filter((id) => id.endsWith('-receipt')),
    ).toHaveLength(billing.paid());
  }, 120_000);

  it('when the quick tries fail, the emails go through their regular activities, once', async () => {
    const billing = fakeBilling({});
    const { sendEmail } = billing.activities;
    billing.activities.sendEmail = failLocal('sendEmail', sendEmail);
    const wf = input();
    await run(billing, wf, async (handle) => {
      await skipUntil(() => billing.paid() >= 3, 30 * DAY_MS);
      return cancelAndFinish(handle);
    });
    for (const invoice of billing.invoices().filter((inv) => inv.status === 'paid')) {
      expect(billing.attemptsOf(invoice.id)).toEqual([1]);
    }
    // Every email the outbox named was sent by a regular activity (the local tries all failed).
    const sentRegular = sendEmail.mock.calls.map(([id]) => String(id));
    expect(sentRegular.filter((id) => id.endsWith('-receipt'))).toHaveLength(billing.paid());
    expect(sentRegular.filter((id) => id.endsWith('-activated'))).toHaveLength(1);
    expect(new Set(sentRegular).size).toBe(sentRegular.length);
  }, 120_000);

  it('when the open-and-charge step fails, the invoice is opened on its own and the attempt settled by its key', async () => {
    // Period 1: unreachable for the step's three tries (nothing charged), then reachable.
    // Period 2: the step's try times out (ambiguous): asked by its key (not found), made again.
    // Period 3: attempt 1 is declined and recorded, then the step fails: the record answers, and
    // attempt 2 follows on the retry schedule.
    const billing = fakeBilling({
      unavailable: (inv, call) => inv.periodIndex === 1 && call <= 3,
      timesOut: (inv, call) => inv.periodIndex === 2 && call === 1,
      declines: (inv, attempt) => inv.periodIndex === 3 && attempt === 1,
    });
    const { openInvoice, chargeInvoice } = billing.activities;
    billing.activities.openInvoice = failLocal('openInvoice', openInvoice);
    const recorded = new Map<string, Awaited<ReturnType<typeof chargeInvoice>>>();
    const calledAt = new Map<string, number>();
    billing.activities.chargeInvoice = jest.fn(async (req: ChargeRequest) => {
      calledAt.set(`${req.invoiceId}:${req.attempt}`, await testEnv().currentTimeMs());
      const outcome = await chargeInvoice(req);
      recorded.set(`${req.invoiceId}:${req.attempt}`, outcome);
      if (req.invoiceId === 'inv_3' && Context.current().info.activityType === 'openAndChargeInvoice') {
        throw ApplicationFailure.create({ message: 'answer lost', type: 'timeout', nonRetryable: true });
      }
      return outcome;
    });
    const reconcile = jest.fn(async (req: ChargeRequest) => {
      const invoice = billing.invoices().find((inv) => inv.id === req.invoiceId)!;
      if (invoice.attempts < req.attempt) return { kind: 'not_found' as const };
      return recorded.get(`${req.invoiceId}:${req.attempt}`)!;
    });
    billing.activities.reconcileInvoiceCharge = reconcile as never;
    const wf = input();
    await run(billing, wf, async (handle) => {
      await skipUntil(() => billing.paid() >= 4, 30 * DAY_MS);
      return cancelAndFinish(handle);
    });
    expect(
      billing
        .invoices()
        .slice(0, 4)
        .map((inv) => [inv.id, inv.status, inv.attempts]),
    ).toEqual([
      ['inv_0', 'paid', 1],
      ['inv_1', 'paid', 1],
      ['inv_2', 'paid', 1],
      ['inv_3', 'paid', 2],
    ]);
    // Each try of an attempt used that attempt's key; each invoice was captured once.
    expect(billing.attemptsOf('inv_1')).toEqual([1, 1, 1, 1]);
    expect(billing.attemptsOf('inv_2')).toEqual([1, 1]);
    expect(billing.attemptsOf('inv_3')).toEqual([1, 2]);
    expect(reconcile.mock.calls.map(([r]) => [r.invoiceId, r.attempt])).toEqual([
      ['inv_2', 1],
      ['inv_3', 1],
    ]);
    // Attempt 2 of inv_3 waited for the schedule's first retry (1 day from the period's start,
    // where attempt 1 was made a moment later), not the 10 s pause after a failed try.
    const retryWaitMs = calledAt.get('inv_3:2')! - calledAt.get('inv_3:1')!;
    expect(retryWaitMs).toBeGreaterThan(DAY_MS - 60_000);
    expect(retryWaitMs).toBeLessThan(2 * DAY_MS);
    // The invoice opened on its own after each failed step: the local try failed, so regularly.
    const { scheduled } = await taskCounts(subscriptionWorkflowId(wf.subscriptionId));
    expect(scheduled.filter((name) => name === 'openInvoice')).toHaveLength(3);
    expect(billing.status()).toBe('cancelled');
  }, 120_000);

  it('an open-and-charge step retried after its attempt was recorded answers from the record; the schedule holds', async () => {
    // Period 1: attempt 1 is declined and recorded, then the step's first try fails (retryable):
    // its retry must answer that attempt, not make attempt 2 at once.
    const billing = fakeBilling({ declines: (inv, attempt) => inv.periodIndex === 1 && attempt === 1 });
    const { chargeInvoice } = billing.activities;
    const recorded = new Map<string, Awaited<ReturnType<typeof chargeInvoice>>>();
    const calledAt = new Map<string, number>();
    billing.activities.chargeInvoice = jest.fn(async (req: ChargeRequest) => {
      const key = `${req.invoiceId}:${req.attempt}`;
      const invoice = billing.invoices().find((inv) => inv.id === req.invoiceId)!;
      // The record answers a recorded attempt (what the real charge does; the stub would throw).
      if (invoice.attempts >= req.attempt) return recorded.get(key)!;
      calledAt.set(key, await testEnv().currentTimeMs());
      const outcome = await chargeInvoice(req);
      recorded.set(key, outcome);
      const { activityType, attempt } = Context.current().info;
      if (req.invoiceId === 'inv_1' && activityType === 'openAndChargeInvoice' && attempt === 1) {
        throw new Error('worker lost before answering');
      }
      return outcome;
    });
    const wf = input();
    await run(billing, wf, async (handle) => {
      await skipUntil(() => billing.paid() >= 2, DAY_MS / 4);
      return cancelAndFinish(handle);
    });
    // The step ran twice for inv_1 (its retry answered from the record); attempt 2 came later.
    expect(billing.attemptsOf('inv_1')).toEqual([1, 1, 2]);
    expect(billing.invoices()[1]).toMatchObject({ status: 'paid', attempts: 2 });
    const retryWaitMs = calledAt.get('inv_1:2')! - calledAt.get('inv_1:1')!;
    expect(retryWaitMs).toBeGreaterThan(DAY_MS - 60_000);
    expect(retryWaitMs).toBeLessThan(2 * DAY_MS);
    expect(billing.activities.reconcileInvoiceCharge).not.toHaveBeenCalled();
  }, 120_000);

  it('a revived run resumes an attempt in doubt the provider never received: the same request again, paid once', async () => {
    // The sweeper's cursor (decision 0061): period 1's invoice, its first attempt's call marked
    // sent with no outcome recorded. The provider has nothing under its key (not_found).
    const billing = fakeBilling({});
    const periodStartMs = Date.parse('2026-12-01T00:00:00Z');
    await billing.activities.openInvoice({
      periodIndex: 1,
      amountMinor: 1000,
      periodStart: new Date(periodStartMs).toISOString(),
      periodEnd: new Date(periodStartMs + 30 * DAY_MS).toISOString(),
    });
    const wf = input();
    const request: ChargeRequest = chargeRequestOf(wf, { invoiceId: 'inv_1', attempts: 0, first: false });
    const revived = input({
      ...wf,
      resume: {
        status: 'active',
        periodIndex: 1,
        periodStartMs,
        runs: 0,
        collection: {
          invoiceId: 'inv_1',
          attempts: 0,
          nextAttemptAtMs: 0,
          unavailableStreak: 0,
          first: false,
          undecided: { request, polls: 0 },
        },
      },
    });
    await run(billing, revived, async (handle) => {
      await skipUntil(() => billing.invoices()[0]!.status === 'paid', 10_000);
      expect((await handle.describe()).status.name).toBe('RUNNING');
      return cancelAndFinish(handle);
    });
    // Asked about first by its key, then the same attempt (same request, same key) made: once.
    expect(
      (billing.activities.reconcileInvoiceCharge.mock.calls as unknown as [ChargeRequest][]).map(([r]) => r),
    ).toEqual([request]);
    expect(billing.activities.chargeInvoice.mock.calls.map(([r]) => r)).toEqual([request]);
    expect(billing.invoices()[0]).toMatchObject({ status: 'paid', attempts: 1 });
  }, 60_000);

  it('a renewal answered processing: the same attempt is asked about at growing intervals, at most daily, then paid once', async () => {
    // Period 1's charge is answered `processing` (undecided), and so is every question about it
    // for 20 polls; then the provider settles it captured.
    const billing = fakeBilling({});
    const { chargeInvoice } = billing.activities;
    const polledAt: number[] = [];
    const undecidedCharge = jest.fn(async (req: ChargeRequest) =>
      req.invoiceId === 'inv_1' ? { kind: 'undecided' as const, status: 'processing' } : chargeInvoice(req),
    );
    const reconcile = jest.fn(async (req: ChargeRequest) => {
      polledAt.push(await testEnv().currentTimeMs());
      if (polledAt.length <= 20) return { kind: 'undecided' as const, status: 'processing' };
      return chargeInvoice(req);
    });
    Object.assign(billing.activities, { chargeInvoice: undecidedCharge, reconcileInvoiceCharge: reconcile });
    const wf = input({ historyEventLimit: 60 });
    await run(billing, wf, async (handle) => {
      await skipUntil(() => billing.paid() >= 3, DAY_MS / 2, 800);
      return cancelAndFinish(handle);
    });
    // One attempt of inv_1 only, asked about by its key until decided; paid once.
    expect(undecidedCharge.mock.calls.filter(([r]) => r.invoiceId === 'inv_1')).toHaveLength(1);
    expect(new Set(reconcile.mock.calls.map(([r]) => r.attempt))).toEqual(new Set([1]));
    expect(billing.invoices()[1]).toMatchObject({ status: 'paid', attempts: 1 });
    expect(billing.status()).toBe('cancelled');
    // The intervals grow (doubling from 10 s) and stop growing at a day.
    const gaps = polledAt.slice(1).map((t, i) => t - polledAt[i]!);
    for (let i = 1; i < gaps.length; i++) expect(gaps[i]!).toBeGreaterThanOrEqual(gaps[i - 1]! - 5_000);
    expect(Math.max(...gaps)).toBeLessThanOrEqual(DAY_MS + 60_000);
    expect(gaps.at(-1)!).toBeGreaterThan(DAY_MS - 60_000);
    // The waiting crossed continue-as-new (a low bound), each run short.
    const runs = await runLengths(subscriptionWorkflowId(wf.subscriptionId));
    expect(runs.length).toBeGreaterThanOrEqual(2);
    for (const events of runs) expect(events).toBeLessThanOrEqual(60 + 40);
  }, 180_000);

  it('a renewal answered with a status nobody knows: Stuck after the default hour, kept across continue-as-new, cleared once paid', async () => {
    // Period 1's charge and every question about it are answered `unknown` (an unreadable answer)
    // until `known`; then the provider says it was captured (decision 0062).
    const billing = fakeBilling({});
    const { chargeInvoice } = billing.activities;
    let known = false;
    let askedAt: number | undefined;
    const unknownCharge = jest.fn(async (req: ChargeRequest) => {
      if (req.invoiceId !== 'inv_1') return chargeInvoice(req);
      askedAt = await testEnv().currentTimeMs();
      return { kind: 'undecided' as const, status: 'unknown' };
    });
    const reconcile = jest.fn(async (req: ChargeRequest) =>
      known ? chargeInvoice(req) : { kind: 'undecided' as const, status: 'unknown' },
    );
    Object.assign(billing.activities, { chargeInvoice: unknownCharge, reconcileInvoiceCharge: reconcile });
    const wf = input({ historyEventLimit: 60 });
    const id = subscriptionWorkflowId(wf.subscriptionId);
    await run(billing, wf, async (handle) => {
      const stuck = async () => (await handle.describe()).typedSearchAttributes.get(StuckKey);
      const at = async (ms: number) => testEnv().sleep(askedAt! + ms - (await testEnv().currentTimeMs()));
      await testEnv().sleep(30 * DAY_MS - 10 * MINUTE_MS);
      await skipUntil(() => askedAt !== undefined, MINUTE_MS, 30);
      await at(50 * MINUTE_MS);
      expect(await stuck()).toBeUndefined();
      await at(65 * MINUTE_MS);
      expect(await stuck()).toBe('invalid_response');
      const markedRun = (await handle.describe()).runId;
      // Days of polls (doubling to daily): later runs keep the mark (search attributes carry over).
      await at(4 * DAY_MS);
      expect(await stuck()).toBe('invalid_response');
      expect((await handle.describe()).runId).not.toBe(markedRun);
      expect((await handle.describe()).status.name).toBe('RUNNING');
      known = true;
      await skipUntil(() => billing.paid() >= 2, DAY_MS / 4);
      await quiet(handle);
      expect(await stuck()).toBeUndefined();
      return cancelAndFinish(handle);
    });
    // One attempt of inv_1 only, asked about by its key until decided; paid once.
    expect(unknownCharge.mock.calls.filter(([r]) => r.invoiceId === 'inv_1')).toHaveLength(1);
    expect(new Set(reconcile.mock.calls.map(([r]) => `${r.invoiceId}.${r.attempt}`))).toEqual(new Set(['inv_1.1']));
    expect(billing.invoices()[1]).toMatchObject({ status: 'paid', attempts: 1 });
    const runs = await runLengths(id);
    expect(runs.length).toBeGreaterThanOrEqual(3);
    for (const events of runs) expect(events).toBeLessThanOrEqual(60 + 40);
  }, 180_000);

  it('the card authorization’s check failing for hours (no provider): Stuck after the hour, never failed, cleared once authorized', async () => {
    let configured = false;
    const billing = fakeBilling({ authorized: () => true });
    const check = jest.fn(async () => {
      if (!configured) throw ApplicationFailure.retryable('no provider retired', 'provider_not_configured');
      return 'authorized' as const;
    });
    Object.assign(billing.activities, { checkCardAuthorization: check });
    const wf = input({ needsAuthorization: true, authorizationExpirySeconds: 30 * 86_400 });
    await run(billing, wf, async (handle) => {
      const stuck = async () => (await handle.describe()).typedSearchAttributes.get(StuckKey);
      await skipUntil(() => billing.status() === 'pending', MINUTE_MS, 10);
      await quiet(handle);
      await handle.signal(providerSubscriptionEventSignal);
      await testEnv().sleep(50 * MINUTE_MS);
      expect(await stuck()).toBeUndefined();
      await testEnv().sleep(20 * MINUTE_MS);
      expect(await stuck()).toBe('provider_not_configured');
      await testEnv().sleep(3 * 60 * MINUTE_MS);
      expect((await handle.describe()).status.name).toBe('RUNNING');
      expect(billing.status()).toBe('pending');
      configured = true;
      await skipUntil(() => billing.paid() >= 1, 10 * MINUTE_MS, 30);
      await quiet(handle);
      expect(await stuck()).toBeUndefined();
      return cancelAndFinish(handle);
    });
    expect(billing.invoices()[0]).toMatchObject({ status: 'paid', attempts: 1 });
  }, 180_000);

  it('a renewal awaiting authentication: reminders at the schedule’s dates, across continue-as-new, then cancelled at its total', async () => {
    // Period 1's charge asks the customer to authenticate, who never does.
    const billing = fakeBilling({});
    const { chargeInvoice } = billing.activities;
    const waiting = {
      kind: 'undecided' as const,
      status: 'requires_action',
      waiting: 'requires_action' as const,
      outbox: { status: 'past_due' as const, emailIds: ['email-action-required'], eventIds: [] },
    };
    let askedAt = 0;
    const asking = jest.fn(async (req: ChargeRequest) => {
      if (req.invoiceId !== 'inv_1') return chargeInvoice(req);
      askedAt = await testEnv().currentTimeMs();
      return waiting;
    });
    const reconcile = jest.fn(async (_req: ChargeRequest) => ({
      ...waiting,
      outbox: { ...waiting.outbox, emailIds: [] },
    }));
    const remindedAt: Array<{ reminder: number; atMs: number; cancelAt: string }> = [];
    const remindInvoiceAuthentication = jest.fn(async (req: { reminder: number; cancelAt: string }) => {
      remindedAt.push({ reminder: req.reminder, atMs: await testEnv().currentTimeMs(), cancelAt: req.cancelAt });
      return { status: 'past_due' as const, emailIds: [`email-reminder-${req.reminder}`], eventIds: [] };
    });
    let cancelledAt = 0;
    const cancelInvoiceAttempt = jest.fn(async (_req: { request: ChargeRequest; release: boolean }) => {
      cancelledAt = await testEnv().currentTimeMs();
      return { kind: 'canceled' as const };
    });
    Object.assign(billing.activities, {
      chargeInvoice: asking,
      reconcileInvoiceCharge: reconcile,
      remindInvoiceAuthentication,
      cancelInvoiceAttempt,
    });
    const wf = input({ historyEventLimit: 60 });
    const result = await run(billing, wf, async (handle) => {
      await skipUntil(() => billing.status() === 'cancelled', DAY_MS / 2);
      return handle.result();
    });
    expect(result.status).toBe('cancelled');
    // One attempt of inv_1, never another while it waits (invariant 7).
    expect(asking.mock.calls.filter(([r]) => r.invoiceId === 'inv_1')).toHaveLength(1);
    expect(new Set(reconcile.mock.calls.map(([r]) => `${r.invoiceId}.${r.attempt}`))).toEqual(new Set(['inv_1.1']));
    // Reminders at 1 and 1 + 3 days from the ask; the last date (1 + 3 + 5) is the deadline.
    expect(remindedAt.map((r) => r.reminder)).toEqual([1, 2]);
    const near = (ms: number, days: number) => Math.abs(ms - days * DAY_MS) < 60_000;
    expect(near(remindedAt[0]!.atMs - askedAt, 1)).toBe(true);
    expect(near(remindedAt[1]!.atMs - askedAt, 4)).toBe(true);
    expect(near(Date.parse(remindedAt[0]!.cancelAt) - askedAt, 9)).toBe(true);
    // At the deadline the attempt is cancelled at the processor first, then the subscription.
    expect(cancelInvoiceAttempt).toHaveBeenCalledTimes(1);
    expect(cancelInvoiceAttempt.mock.calls[0]![0]).toMatchObject({ release: false, request: { invoiceId: 'inv_1' } });
    expect(near(cancelledAt - askedAt, 9)).toBe(true);
    expect(billing.activities.cancelSubscriptionRecord).toHaveBeenCalledWith(
      expect.objectContaining({ reason: 'payment_failed' }),
    );
    // The wait crossed continue-as-new, each run short.
    const runs = await runLengths(subscriptionWorkflowId(wf.subscriptionId));
    expect(runs.length).toBeGreaterThanOrEqual(2);
    for (const events of runs) expect(events).toBeLessThanOrEqual(60 + 40);
  }, 180_000);

  it('a hard decline: no retry; cancelled once the schedule’s total has passed from that attempt', async () => {
    const billing = fakeBilling({ declines: (inv) => inv.periodIndex === 1 });
    const { chargeInvoice } = billing.activities;
    let declinedAt = 0;
    const hardCharge = jest.fn(async (req: ChargeRequest) => {
      const outcome = await chargeInvoice(req);
      if (outcome.kind !== 'declined') return outcome;
      declinedAt = await testEnv().currentTimeMs();
      return { ...outcome, nextAttemptAt: null, declineType: 'hard' as const };
    });
    const requestNewCard = jest.fn(async (_input: { cancelAt: string; withLink: boolean }) => ({
      status: 'past_due' as const,
      emailIds: ['email-card-required'],
      eventIds: [],
    }));
    Object.assign(billing.activities, { requestNewCard, chargeInvoice: hardCharge });
    const wf = input();
    const result = await run(billing, wf, async (handle) => {
      await skipUntil(() => billing.status() === 'cancelled', DAY_MS / 2);
      return handle.result();
    });
    expect(result.status).toBe('cancelled');
    expect(hardCharge.mock.calls.filter(([r]) => r.invoiceId === 'inv_1').map(([r]) => r.attempt)).toEqual([1]);
    expect(billing.activities.cancelSubscriptionRecord).toHaveBeenCalledWith(
      expect.objectContaining({ reason: 'payment_failed' }),
    );
    // Asked once, with the hosted page's link and the deadline: 1 + 3 + 5 days from the decline.
    expect(requestNewCard).toHaveBeenCalledTimes(1);
    const { cancelAt, withLink } = requestNewCard.mock.calls[0]![0];
    expect(withLink).toBe(true);
    expect(Date.parse(cancelAt) - declinedAt).toBeGreaterThan(9 * DAY_MS - 60_000);
    expect(Date.parse(cancelAt) - declinedAt).toBeLessThan(9 * DAY_MS + 60_000);
  }, 120_000);
});

/**
 * A stub that fails when tried as its own local activity (the quick try in the workflow task);
 * called inside another activity (the composed open-and-charge step) it answers.
 */
function failLocal<A extends unknown[], R>(activityType: string, fn: (...args: A) => Promise<R>) {
  return jest.fn(async (...args: A): Promise<R> => {
    const { isLocal, activityType: running } = Context.current().info;
    if (isLocal && running === activityType) throw new Error('database busy (local try)');
    return fn(...args);
  });
}

const sleepMs = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
