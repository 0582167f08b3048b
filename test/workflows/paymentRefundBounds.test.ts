import { ApplicationFailure } from '@temporalio/common';
import type { temporal } from '@temporalio/proto';
import { WorkflowUpdateFailedError, type WorkflowHandle } from '@temporalio/client';
import type { paymentWorkflowV2 } from '../../workflows/payment';
import type { refundWorkflowV2 } from '../../workflows/refund';
import {
  PAYMENT_UPDATE_REFUSED,
  paymentWorkflowId,
  providerPaymentEventSignal,
  submitPaymentUpdate,
  type PaymentWorkflowInput,
  type SubmitOutcome,
} from '../../workflows/paymentApi';
import {
  providerRefundEventSignal,
  refundOutcomeUpdate,
  refundWorkflowId,
  type RefundWorkflowInput,
} from '../../workflows/refundApi';
import { DEFAULT_HISTORY_EVENT_LIMIT } from '../../workflows/runBound';
import {
  runHistories,
  useTimeSkippingEnvironment,
  withShippedWorker,
  terminatedAfterEachTest,
  untilNoTimerDue,
} from '../helpers/timeSkipping';

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;

/** A provider failure as the activities raise it (not retried here: one try per attempt). */
const providerFailure = (type: 'unavailable' | 'timeout') =>
  ApplicationFailure.create({ message: `provider ${type}`, type, nonRetryable: true });

/**
 * The payment and refund workflows (the shipped code) on the Java time-skipping test server with
 * jest.fn activities: every loop driven past its history bound (a refund pending for weeks, a
 * flood of webhooks, a merchant repeating a create while the provider is down, a hosted payment
 * with many provider events), each run's history measured, the state carried across runs.
 */
describe('payment and refund workflows stay bounded (time-skipping, stubbed activities)', () => {
  const testEnv = useTimeSkippingEnvironment();
  let counter = 0;

  // A workflow a failed test leaves running would keep the test server from skipping time.
  const started = terminatedAfterEachTest();

  const withWorker = <T>(activities: object, drive: (taskQueue: string) => Promise<T>) =>
    withShippedWorker(testEnv(), 'bounds-timeskip', activities, drive);

  /** The history length of every run of the chain, oldest first. */
  async function runLengths(workflowId: string): Promise<number[]> {
    return (await runHistories(testEnv(), workflowId)).map((events) => events.length);
  }

  /** When an event happened, in the test server's (skipped) time. */
  const eventTimeMs = (event: temporal.api.history.v1.IHistoryEvent | undefined) =>
    Number(event?.eventTime?.seconds ?? 0) * 1000 + Math.floor((event?.eventTime?.nanos ?? 0) / 1e6);

  /** When each activity of this type was scheduled across the chain (test server time). */
  async function scheduledTimes(workflowId: string, activityType: string): Promise<number[]> {
    return (await runHistories(testEnv(), workflowId))
      .flat()
      .filter((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === activityType)
      .map(eventTimeMs);
  }

  /** Waits (skipping time) until `check` holds; each step skips `stepMs` of workflow time. */
  async function skipUntil(check: () => boolean, stepMs: number, maxSteps = 400): Promise<void> {
    for (let i = 0; i < maxSteps && !check(); i++) await testEnv().sleep(stepMs);
    expect(check()).toBe(true);
  }

  /** A refund the provider holds `pending` until `settled()` says otherwise. */
  function refundActivities(settled: () => boolean) {
    return {
      attemptProviderRefund: jest.fn(async () => 'pending' as const),
      awaitRefundRecorded: jest.fn(async () => 'pending' as const),
      failRefundUnavailable: jest.fn(async () => undefined),
      reconcileProviderRefund: jest.fn(async () => (settled() ? ('settled' as const) : ('pending' as const))),
      undeliveredEventIds: jest.fn(async () => [] as string[]),
    };
  }

  function refundInput(overrides: Partial<RefundWorkflowInput> = {}): RefundWorkflowInput {
    return {
      refundId: `ref_bounds_${process.pid}_${++counter}`,
      paymentId: 'pay_bounds',
      merchantId: 'mer_bounds',
      callbackRetryInitialSeconds: 10,
      callbacks: false,
      pollInitialSeconds: 10,
      ...overrides,
    };
  }

  it('a refund pending at the provider for three weeks: polls hourly, each run under the default bound, then settles', async () => {
    let reconciles = 0;
    // 10 s doubling to an hour takes 9 polls (about 1.4 h); then one an hour for three weeks
    // (the default bound of 1,000 events is about four days of hourly polls: ~5 handovers).
    const settleAt = 9 + 21 * 24;
    const activities = refundActivities(() => ++reconciles >= settleAt);
    const input = refundInput();
    const wallStarted = Date.now();
    const result = await withWorker(activities, async (taskQueue) => {
      const handle = await testEnv().client.workflow.start<typeof refundWorkflowV2>('refundWorkflowV2', {
        taskQueue,
        workflowId: refundWorkflowId(input.refundId),
        args: [input],
      });
      started.push(handle);
      expect(await handle.executeUpdate(refundOutcomeUpdate)).toEqual({ kind: 'pending' });
      return handle.result();
    });
    const wallMs = Date.now() - wallStarted;
    expect(result).toEqual({ settled: true });
    expect(reconciles).toBe(settleAt);
    expect(activities.attemptProviderRefund).toHaveBeenCalledTimes(1);

    const runs = await runLengths(refundWorkflowId(input.refundId));
    // About 11 events a poll: a run of 1,000 events lasts about 4 days.
    expect(runs.length).toBeGreaterThanOrEqual(5);
    for (const events of runs) expect(events).toBeLessThanOrEqual(DEFAULT_HISTORY_EVENT_LIMIT + 20);
    // Hourly over three weeks of workflow time: no gap longer than an hour, none lost at a handover.
    const polls = await scheduledTimes(refundWorkflowId(input.refundId), 'reconcileProviderRefund');
    expect(polls).toHaveLength(settleAt);
    const gaps = polls.slice(1).map((at, i) => at - polls[i]!);
    expect(Math.max(...gaps)).toBeLessThanOrEqual(HOUR_MS + 1000);
    expect(gaps.slice(20).every((gap) => gap >= HOUR_MS - 1000)).toBe(true);
    expect(polls.at(-1)! - polls[0]!).toBeGreaterThanOrEqual(20 * DAY_MS);
    process.stderr.write(
      `[time-skipping] refund pending three weeks: ${reconciles} polls, ${runs.length} runs, longest ${Math.max(...runs)} events, ${wallMs} ms wall\n`,
    );
  }, 240_000);

  it('a refund receiving many webhooks continues as new; a repeat on a later run answers from the first outcome', async () => {
    let settled = false;
    const activities = refundActivities(() => settled);
    const input = refundInput({ historyEventLimit: 60, pollInitialSeconds: 3600 });
    await withWorker(activities, async (taskQueue) => {
      const handle = await testEnv().client.workflow.start<typeof refundWorkflowV2>('refundWorkflowV2', {
        taskQueue,
        workflowId: refundWorkflowId(input.refundId),
        args: [input],
      });
      started.push(handle);
      expect(await handle.executeUpdate(refundOutcomeUpdate)).toEqual({ kind: 'pending' });
      for (let i = 0; i < 60; i++) {
        await untilNoTimerDue(testEnv(), handle.workflowId);
        await handle.signal(providerRefundEventSignal);
        await testEnv().sleep(60_000);
      }
      await skipUntil(() => activities.reconcileProviderRefund.mock.calls.length >= 60, 60_000);
      // On a continued run: the first outcome, at once.
      expect((await runLengths(refundWorkflowId(input.refundId))).length).toBeGreaterThanOrEqual(3);
      expect(await handle.executeUpdate(refundOutcomeUpdate)).toEqual({ kind: 'pending' });
      settled = true;
      await untilNoTimerDue(testEnv(), handle.workflowId);
      await handle.signal(providerRefundEventSignal);
      expect(await handle.result()).toEqual({ settled: true });
    });
    expect(activities.attemptProviderRefund).toHaveBeenCalledTimes(1);
    const runs = await runLengths(refundWorkflowId(input.refundId));
    for (const events of runs) expect(events).toBeLessThanOrEqual(60 + 20);
  }, 180_000);

  /** A payment expiring in a day of the test server's time (earlier tests skipped it ahead). */
  async function paymentInput(overrides: Partial<PaymentWorkflowInput> = {}): Promise<PaymentWorkflowInput> {
    return {
      paymentId: `pay_bounds_${process.pid}_${++counter}`,
      merchantId: 'mer_bounds',
      expiresAt: new Date((await testEnv().currentTimeMs()) + DAY_MS).toISOString(),
      callbackRetryInitialSeconds: 10,
      callbacks: false,
      ...overrides,
    };
  }

  /** As the API does: a submit refused while the run hands over is sent again. */
  async function submit(
    handle: WorkflowHandle<typeof paymentWorkflowV2>,
  ): Promise<{ outcome: SubmitOutcome; refusals: number }> {
    for (let refusals = 0; ; refusals++) {
      try {
        return { outcome: await handle.executeUpdate(submitPaymentUpdate), refusals };
      } catch (err) {
        const handingOver =
          err instanceof WorkflowUpdateFailedError &&
          err.cause instanceof ApplicationFailure &&
          err.cause.type === PAYMENT_UPDATE_REFUSED.handingOver;
        if (!handingOver || refusals > 20) throw err;
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    }
  }

  it('a payment submitted again and again (in bursts) while the provider is down: every submit answered, runs bounded', async () => {
    let providerUp = false;
    let calls = 0;
    let timedOut = 0;
    let unreconciled = false;
    let attemptsWhileAmbiguous = 0;
    const activities = {
      // Down: mostly unreachable, every fourth call a timeout (ambiguous: reconciled, not_found).
      attemptProviderPayment: jest.fn(async () => {
        calls++;
        if (unreconciled) attemptsWhileAmbiguous++;
        if (providerUp) return { kind: 'settled' as const };
        if (calls % 4 !== 0) throw providerFailure('unavailable');
        timedOut++;
        unreconciled = true;
        throw providerFailure('timeout');
      }),
      reconcileProviderPayment: jest.fn(async () => {
        unreconciled = false;
        return 'not_found' as const;
      }),
      expireProviderPayment: jest.fn(async () => 'settled' as const),
      undeliveredEventIds: jest.fn(async () => [] as string[]),
    };
    const input = await paymentInput({ historyEventLimit: 60 });
    const answers: SubmitOutcome['kind'][] = [];
    let refusals = 0;
    const result = await withWorker(activities, async (taskQueue) => {
      const handle = await testEnv().client.workflow.start<typeof paymentWorkflowV2>('paymentWorkflowV2', {
        taskQueue,
        workflowId: paymentWorkflowId(input.paymentId),
        args: [input],
      });
      started.push(handle);
      // Repeats in bursts of three at once, so some arrive while a run hands over.
      for (let i = 0; i < 40; i++) {
        const burst = await Promise.all([submit(handle), submit(handle), submit(handle)]);
        for (const { outcome, refusals: refused } of burst) {
          answers.push(outcome.kind);
          refusals += refused;
        }
        await testEnv().sleep(60_000);
      }
      providerUp = true;
      expect((await submit(handle)).outcome).toEqual({ kind: 'settled' });
      return handle.result();
    });
    expect(result).toEqual({ state: 'settled' });
    expect(new Set(answers)).toEqual(new Set(['provider_unavailable', 'provider_timeout']));
    // Every ambiguous attempt was reconciled (not_found) before another was made.
    expect(timedOut).toBeGreaterThanOrEqual(5);
    expect(activities.reconcileProviderPayment).toHaveBeenCalledTimes(timedOut);
    expect(attemptsWhileAmbiguous).toBe(0);
    expect(answers).toHaveLength(120);
    expect(activities.attemptProviderPayment.mock.calls.length).toBeLessThanOrEqual(121);
    expect(activities.expireProviderPayment).not.toHaveBeenCalled();
    const runs = await runLengths(paymentWorkflowId(input.paymentId));
    expect(runs.length).toBeGreaterThanOrEqual(4);
    // Past the bound by at most the iteration under way: its attempt (or reconcile) and the
    // burst of Updates it answers (about 4 events each with their workflow task), and the
    // attempt's commit point (PROVIDER_CALL_AFTER_COMMIT: a timer and a workflow task, 6 events).
    for (const events of runs) expect(events).toBeLessThanOrEqual(60 + 40);
    process.stderr.write(
      `[time-skipping] payment 121 submits (${refusals} refused while handing over, sent again): runs ${JSON.stringify(runs)}\n`,
    );
  }, 180_000);

  it('a hosted payment with many provider events continues as new, keeps its expiry, then is paid', async () => {
    let paid = false;
    const activities = {
      attemptProviderPayment: jest.fn(async () => ({ kind: 'created' as const })),
      reconcileProviderPayment: jest.fn(async () => (paid ? ('settled' as const) : ('created' as const))),
      expireProviderPayment: jest.fn(async () => 'settled' as const),
      undeliveredEventIds: jest.fn(async () => [] as string[]),
    };
    const input = await paymentInput({ historyEventLimit: 60 });
    const result = await withWorker(activities, async (taskQueue) => {
      const handle = await testEnv().client.workflow.start<typeof paymentWorkflowV2>('paymentWorkflowV2', {
        taskQueue,
        workflowId: paymentWorkflowId(input.paymentId),
        args: [input],
      });
      started.push(handle);
      expect((await submit(handle)).outcome).toEqual({ kind: 'created' });
      for (let i = 0; i < 80; i++) {
        await untilNoTimerDue(testEnv(), handle.workflowId);
        await handle.signal(providerPaymentEventSignal);
        await testEnv().sleep(5 * 60_000);
      }
      await skipUntil(() => activities.reconcileProviderPayment.mock.calls.length >= 80, 60_000);
      // A repeat on a continued run: still waiting for the customer, no new attempt.
      expect((await submit(handle)).outcome).toEqual({ kind: 'created' });
      paid = true;
      await untilNoTimerDue(testEnv(), handle.workflowId);
      await handle.signal(providerPaymentEventSignal);
      return handle.result();
    });
    expect(result).toEqual({ state: 'settled' });
    expect(activities.attemptProviderPayment).toHaveBeenCalledTimes(1);
    expect(activities.expireProviderPayment).not.toHaveBeenCalled();
    const runs = await runLengths(paymentWorkflowId(input.paymentId));
    expect(runs.length).toBeGreaterThanOrEqual(4);
    for (const events of runs) expect(events).toBeLessThanOrEqual(60 + 20);
    process.stderr.write(`[time-skipping] hosted payment 81 events: runs ${JSON.stringify(runs)}\n`);
  }, 180_000);

  it('a hosted payment that crosses continue-as-new still expires at its original time', async () => {
    const activities = {
      attemptProviderPayment: jest.fn(async () => ({ kind: 'created' as const })),
      reconcileProviderPayment: jest.fn(async () => 'created' as const),
      expireProviderPayment: jest.fn(async () => 'settled' as const),
      undeliveredEventIds: jest.fn(async () => [] as string[]),
    };
    const input = await paymentInput({ historyEventLimit: 40 });
    const result = await withWorker(activities, async (taskQueue) => {
      const handle = await testEnv().client.workflow.start<typeof paymentWorkflowV2>('paymentWorkflowV2', {
        taskQueue,
        workflowId: paymentWorkflowId(input.paymentId),
        args: [input],
      });
      started.push(handle);
      expect((await submit(handle)).outcome).toEqual({ kind: 'created' });
      for (let i = 0; i < 30; i++) {
        await untilNoTimerDue(testEnv(), handle.workflowId);
        await handle.signal(providerPaymentEventSignal);
        await testEnv().sleep(60_000);
      }
      return handle.result();
    });
    expect(result).toEqual({ state: 'settled' });
    expect(activities.expireProviderPayment).toHaveBeenCalledTimes(1);
    expect((await runLengths(paymentWorkflowId(input.paymentId))).length).toBeGreaterThanOrEqual(2);
    // At the original deadline (test server time), not a day after the last handover.
    const [expiredAtMs] = await scheduledTimes(paymentWorkflowId(input.paymentId), 'expireProviderPayment');
    expect(expiredAtMs! - Date.parse(input.expiresAt)).toBeGreaterThanOrEqual(0);
    expect(expiredAtMs! - Date.parse(input.expiresAt)).toBeLessThan(60_000);
  }, 180_000);
});
