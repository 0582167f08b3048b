import { ApplicationFailure } from '@temporalio/common';
import type { paymentWorkflowV2 } from '../../workflows/payment';
import type { refundWorkflowV2 } from '../../workflows/refund';
import { paymentWorkflowId, submitPaymentUpdate, type PaymentWorkflowInput } from '../../workflows/paymentApi';
import { refundWorkflowId } from '../../workflows/refundApi';
import type { outboxEmailWorkflow } from '../../workflows/outboxEmail';
import type { disputeWorkflow } from '../../workflows/dispute';
import { disputeWorkflowId } from '../../workflows/disputeApi';
import { DEFAULT_HISTORY_EVENT_LIMIT } from '../../workflows/runBound';
import { StuckKey } from '../../workflows/searchAttributes';
import {
  runHistories,
  terminatedAfterEachTest,
  useTimeSkippingEnvironment,
  withShippedWorker,
} from '../helpers/timeSkipping';

const MINUTE_MS = 60_000;
const HOUR_MS = 60 * MINUTE_MS;
const DAY_MS = 24 * HOUR_MS;

/**
 * Never fail closed (decision 0059), on the shipped workflow code with stubbed activities and the
 * time-skipping test server: a provider question answered with something the code does not know
 * for over an hour (the default WORKFLOW_STUCK_AFTER_SECONDS) marks the run `Stuck` and is asked
 * again; a non-retryable failure never fails the run; a known answer settles it and clears the mark.
 * An outbox email given up after a day of failed sends completes its run (`gave_up`).
 */
describe('never fail closed (time-skipping, stubbed activities)', () => {
  const testEnv = useTimeSkippingEnvironment();
  let counter = 0;
  const started = terminatedAfterEachTest();

  async function paymentInput(): Promise<PaymentWorkflowInput> {
    return {
      paymentId: `pay_neverfail_${process.pid}_${++counter}`,
      merchantId: 'mer_neverfail',
      expiresAt: new Date((await testEnv().currentTimeMs()) + 30 * 24 * HOUR_MS).toISOString(),
      callbackRetryInitialSeconds: 10,
      callbacks: false,
      attemptOnStart: true,
    };
  }

  it('a payment whose provider answers an unknown status for 3 hours: stuck after an hour, running, then settled', async () => {
    let known = false;
    const activities = {
      // The attempt's answer is not one we know: ambiguous, reconciled.
      attemptProviderPayment: jest.fn(async () => {
        throw ApplicationFailure.nonRetryable('unknown status "on_hold"', 'invalid_response');
      }),
      reconcileProviderPayment: jest.fn(async () => {
        if (!known) throw ApplicationFailure.retryable('unknown status "on_hold"', 'invalid_response');
        return 'settled' as const;
      }),
      expireProviderPayment: jest.fn(async () => 'settled' as const),
      undeliveredEventIds: jest.fn(async () => [] as string[]),
    };
    const input = await paymentInput();
    const result = await withShippedWorker(testEnv(), 'neverfail-payment', activities, async (taskQueue) => {
      const handle = await testEnv().client.workflow.start<typeof paymentWorkflowV2>('paymentWorkflowV2', {
        taskQueue,
        workflowId: paymentWorkflowId(input.paymentId),
        args: [input],
      });
      started.push(handle);
      expect(await handle.executeUpdate(submitPaymentUpdate)).toEqual({ kind: 'provider_invalid' });
      const stuck = () => handle.describe().then((d) => d.typedSearchAttributes.get(StuckKey));
      await testEnv().sleep(50 * MINUTE_MS);
      expect(await stuck()).toBeUndefined();
      await testEnv().sleep(20 * MINUTE_MS);
      expect(await stuck()).toBe('invalid_response');
      await testEnv().sleep(2 * HOUR_MS);
      expect((await handle.describe()).status.name).toBe('RUNNING');
      known = true;
      await testEnv().sleep(2 * MINUTE_MS);
      const done = await handle.result();
      expect(await stuck()).toBeUndefined();
      return done;
    });
    expect(result).toEqual({ state: 'settled' });
  }, 120_000);

  it('a refund whose reconciliation fails outright (non-retryable) is never failed: stuck at once, asked again, settled', async () => {
    let calls = 0;
    const activities = {
      attemptProviderRefund: jest.fn(async () => {
        throw ApplicationFailure.nonRetryable('garbled', 'invalid_response');
      }),
      reconcileProviderRefund: jest.fn(async () => {
        if (++calls <= 3) throw ApplicationFailure.nonRetryable('not ours', 'reconciliation_mismatch');
        return 'settled' as const;
      }),
      failRefundUnavailable: jest.fn(async () => undefined),
      undeliveredEventIds: jest.fn(async () => [] as string[]),
    };
    const refundId = `re_neverfail_${process.pid}_${++counter}`;
    const result = await withShippedWorker(testEnv(), 'neverfail-refund', activities, async (taskQueue) => {
      const handle = await testEnv().client.workflow.start<typeof refundWorkflowV2>('refundWorkflowV2', {
        taskQueue,
        workflowId: refundWorkflowId(refundId),
        args: [
          {
            refundId,
            paymentId: 'pay_neverfail',
            merchantId: 'mer_neverfail',
            callbackRetryInitialSeconds: 10,
            callbacks: false,
            pollInitialSeconds: 30,
          },
        ],
      });
      started.push(handle);
      return handle.result();
    });
    expect(result).toEqual({ settled: true });
    // The first failure, then again at once, then after 1 and 2 minutes: the fourth answers.
    expect(activities.reconcileProviderRefund).toHaveBeenCalledTimes(4);
  }, 120_000);

  it('a dispute question unanswered for 30 days: stuck, continued as new with each run bounded, then decided', async () => {
    let known = false;
    const activities = {
      // No answer to go by: the check is `unknown`, and the patient question fails outright
      // (not ours: an operator must look), so it is asked again at most hourly.
      checkDispute: jest.fn(async () => (known ? ('closed' as const) : ('unknown' as const))),
      askDispute: jest.fn(async () => {
        if (!known) throw ApplicationFailure.nonRetryable('not ours', 'reconciliation_mismatch');
        return 'closed' as const;
      }),
      disputeEvidenceDueSoon: jest.fn(async () => true),
      undeliveredEventIds: jest.fn(async () => [] as string[]),
    };
    const disputeId = `dp_neverfail_${process.pid}_${++counter}`;
    const workflowId = disputeWorkflowId(disputeId);
    const nowMs = await testEnv().currentTimeMs();
    const result = await withShippedWorker(testEnv(), 'neverfail-dispute', activities, async (taskQueue) => {
      const handle = await testEnv().client.workflow.start<typeof disputeWorkflow>('disputeWorkflow', {
        taskQueue,
        workflowId,
        args: [
          {
            disputeId,
            paymentId: 'pay_neverfail',
            merchantId: 'mer_neverfail',
            openedAtMs: nowMs,
            evidenceDueByMs: nowMs + 90 * DAY_MS,
            callbackRetryInitialSeconds: 10,
            callbacks: false,
          },
        ],
      });
      started.push(handle);
      await testEnv().sleep(30 * DAY_MS);
      const latest = testEnv().client.workflow.getHandle(workflowId);
      const described = await latest.describe();
      expect(described.status.name).toBe('RUNNING');
      expect(described.typedSearchAttributes.get(StuckKey)).toBe('reconciliation_mismatch');
      const runs = await runHistories(testEnv(), workflowId);
      // About 11 events an hour: a run reaches the bound in some four days, then hands over.
      expect(runs.length).toBeGreaterThanOrEqual(5);
      for (const events of runs) expect(events.length).toBeLessThanOrEqual(DEFAULT_HISTORY_EVENT_LIMIT + 20);
      for (const events of runs.slice(0, -1)) {
        expect(events.at(-1)?.workflowExecutionContinuedAsNewEventAttributes).toBeTruthy();
      }
      // Asked hourly throughout (no call lost at a hand-over), nothing else happened.
      expect(activities.askDispute.mock.calls.length).toBeGreaterThanOrEqual(30 * 24 - 10);
      expect(activities.disputeEvidenceDueSoon).not.toHaveBeenCalled();

      known = true;
      await testEnv().sleep(2 * HOUR_MS);
      const done = await latest.result();
      expect((await latest.describe()).typedSearchAttributes.get(StuckKey)).toBeUndefined();
      return done;
    });
    expect(result).toEqual({ closed: true });
  }, 300_000);

  /** A chain stuck for `days`: running, marked, handed over at the bound, no run past it. */
  async function boundedWhileStuck(workflowId: string, reason: string, minRuns: number): Promise<void> {
    const described = await testEnv().client.workflow.getHandle(workflowId).describe();
    expect(described.status.name).toBe('RUNNING');
    expect(described.typedSearchAttributes.get(StuckKey)).toBe(reason);
    const runs = await runHistories(testEnv(), workflowId);
    expect(runs.length).toBeGreaterThanOrEqual(minRuns);
    for (const events of runs) expect(events.length).toBeLessThanOrEqual(DEFAULT_HISTORY_EVENT_LIMIT + 20);
    for (const events of runs.slice(0, -1)) {
      expect(events.at(-1)?.workflowExecutionContinuedAsNewEventAttributes).toBeTruthy();
    }
  }

  it('a payment reconciliation unanswered for 12 days continues as new, each run bounded, then settles once', async () => {
    let known = false;
    const activities = {
      attemptProviderPayment: jest.fn(async () => {
        throw ApplicationFailure.nonRetryable('unknown status "on_hold"', 'invalid_response');
      }),
      reconcileProviderPayment: jest.fn(async () => {
        if (!known) throw ApplicationFailure.nonRetryable('not ours', 'reconciliation_mismatch');
        return 'settled' as const;
      }),
      expireProviderPayment: jest.fn(async () => 'settled' as const),
      undeliveredEventIds: jest.fn(async () => [] as string[]),
    };
    const input = {
      ...(await paymentInput()),
      expiresAt: new Date((await testEnv().currentTimeMs()) + 60 * DAY_MS).toISOString(),
    };
    const workflowId = paymentWorkflowId(input.paymentId);
    const result = await withShippedWorker(testEnv(), 'neverfail-payment-long', activities, async (taskQueue) => {
      const handle = await testEnv().client.workflow.start<typeof paymentWorkflowV2>('paymentWorkflowV2', {
        taskQueue,
        workflowId,
        args: [input],
      });
      started.push(handle);
      expect(await handle.executeUpdate(submitPaymentUpdate)).toEqual({ kind: 'provider_invalid' });
      await testEnv().sleep(12 * DAY_MS);
      await boundedWhileStuck(workflowId, 'reconciliation_mismatch', 3);
      known = true;
      await testEnv().sleep(2 * HOUR_MS);
      return testEnv().client.workflow.getHandle(workflowId).result();
    });
    expect(result).toEqual({ state: 'settled' });
    // One attempt in all: the continued runs only asked.
    expect(activities.attemptProviderPayment).toHaveBeenCalledTimes(1);
    expect(activities.expireProviderPayment).not.toHaveBeenCalled();
  }, 300_000);

  it('a refund reconciliation unanswered for 12 days continues as new, each run bounded, then settles', async () => {
    let known = false;
    const activities = {
      attemptProviderRefund: jest.fn(async () => {
        throw ApplicationFailure.nonRetryable('garbled', 'invalid_response');
      }),
      reconcileProviderRefund: jest.fn(async () => {
        if (!known) throw ApplicationFailure.nonRetryable('not ours', 'reconciliation_mismatch');
        return 'settled' as const;
      }),
      failRefundUnavailable: jest.fn(async () => undefined),
      undeliveredEventIds: jest.fn(async () => [] as string[]),
    };
    const refundId = `re_neverfail_long_${process.pid}_${++counter}`;
    const workflowId = refundWorkflowId(refundId);
    const result = await withShippedWorker(testEnv(), 'neverfail-refund-long', activities, async (taskQueue) => {
      const handle = await testEnv().client.workflow.start<typeof refundWorkflowV2>('refundWorkflowV2', {
        taskQueue,
        workflowId,
        args: [
          {
            refundId,
            paymentId: 'pay_neverfail',
            merchantId: 'mer_neverfail',
            callbackRetryInitialSeconds: 10,
            callbacks: false,
            pollInitialSeconds: 30,
          },
        ],
      });
      started.push(handle);
      await testEnv().sleep(12 * DAY_MS);
      await boundedWhileStuck(workflowId, 'reconciliation_mismatch', 3);
      known = true;
      await testEnv().sleep(2 * HOUR_MS);
      return testEnv().client.workflow.getHandle(workflowId).result();
    });
    expect(result).toEqual({ settled: true });
    expect(activities.attemptProviderRefund).toHaveBeenCalledTimes(1);
  }, 300_000);

  it('an outbox email whose sending fails for a day gives up without failing its run', async () => {
    const activities = {
      sendEmail: jest.fn(async () => {
        throw ApplicationFailure.retryable('SMTP refused', 'email_failed');
      }),
    };
    const emailId = `em_neverfail_${process.pid}_${++counter}`;
    const result = await withShippedWorker(testEnv(), 'neverfail-email', activities, async (taskQueue) => {
      const handle = await testEnv().client.workflow.start<typeof outboxEmailWorkflow>('outboxEmailWorkflow', {
        taskQueue,
        workflowId: `email-relay-${emailId}`,
        args: [{ emailId }],
      });
      started.push(handle);
      return handle.result();
    });
    expect(result).toBe('gave_up');
    expect(activities.sendEmail.mock.calls.length).toBeGreaterThan(10);
  }, 120_000);
});
