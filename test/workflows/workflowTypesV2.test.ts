import { WithStartWorkflowOperation } from '@temporalio/client';
import type { temporal } from '@temporalio/proto';
import { paymentWorkflow, paymentWorkflowV2 } from '../../workflows/payment';
import { paymentWorkflowId, submitPaymentUpdate } from '../../workflows/paymentApi';
import { refundWorkflowV2 } from '../../workflows/refund';
import { providerRefundEventSignal, refundOutcomeUpdate, refundWorkflowId } from '../../workflows/refundApi';
import {
  runHistories,
  useTimeSkippingEnvironment,
  withShippedWorker,
  terminatedAfterEachTest,
  untilNoTimerDue,
} from '../helpers/timeSkipping';

type HistoryEvent = temporal.api.history.v1.IHistoryEvent;

/** What a `patched()` call adds to a run's history: its marker and the TemporalChangeVersion upsert. */
const patchEvents = (events: HistoryEvent[]) =>
  events.filter(
    (e) =>
      e.markerRecordedEventAttributes?.markerName === 'core_patch' ||
      Object.keys(e.upsertWorkflowSearchAttributesEventAttributes?.searchAttributes?.indexedFields ?? {}).includes(
        'TemporalChangeVersion',
      ),
  );

/**
 * Payments and refunds start as `paymentWorkflowV2` / `refundWorkflowV2`: the same code as the
 * types they replace, begun with every change those carry behind markers, so their histories
 * have none (half a token payment's or a refund's events before). The old types stay registered
 * for runs started before (their recorded histories replay in test/integration/replay.test.ts).
 */
describe('the V2 payment and refund types record no patch markers (time-skipping, stubbed activities)', () => {
  const testEnv = useTimeSkippingEnvironment();
  let counter = 0;
  const started = terminatedAfterEachTest();

  const withWorker = <T>(activities: object, drive: (taskQueue: string) => Promise<T>) =>
    withShippedWorker(testEnv(), 'types-v2', activities, drive);

  const paymentActivities = () => ({
    attemptProviderPayment: jest.fn(async () => ({ kind: 'settled' as const })),
    reconcileProviderPayment: jest.fn(async () => 'settled' as const),
    expireProviderPayment: jest.fn(async () => 'settled' as const),
    undeliveredEventIds: jest.fn(async () => [] as string[]),
  });

  /** A token payment as the API sends it (Update-with-Start with the attempt), to its end. */
  async function tokenPayment(workflow: typeof paymentWorkflowV2 | typeof paymentWorkflow) {
    const paymentId = `pay_types_${process.pid}_${++counter}`;
    const activities = paymentActivities();
    return withWorker(activities, async (taskQueue) => {
      const startWorkflowOperation = new WithStartWorkflowOperation(workflow, {
        taskQueue,
        workflowId: paymentWorkflowId(paymentId),
        args: [
          {
            paymentId,
            merchantId: 'mer_types',
            expiresAt: new Date((await testEnv().currentTimeMs()) + 86_400_000).toISOString(),
            callbackRetryInitialSeconds: 10,
            callbacks: false,
            attemptOnStart: true,
          },
        ],
        workflowIdConflictPolicy: 'USE_EXISTING',
      });
      const outcome = await testEnv().client.workflow.executeUpdateWithStart(submitPaymentUpdate, {
        startWorkflowOperation,
      });
      const handle = await startWorkflowOperation.workflowHandle();
      started.push(handle);
      const result = await handle.result();
      const events = (await handle.fetchHistory()).events ?? [];
      return { outcome, result, events, attempts: activities.attemptProviderPayment.mock.calls.length };
    });
  }

  it('a token payment of paymentWorkflowV2: the same outcome, no patch marker, one workflow task', async () => {
    const v2 = await tokenPayment(paymentWorkflowV2);
    expect(v2.outcome).toEqual({ kind: 'settled' });
    expect(v2.result).toEqual({ state: 'settled' });
    expect(v2.attempts).toBe(1);
    expect(patchEvents(v2.events)).toEqual([]);
    // Started, one workflow task (3), the Update accepted, the attempt's marker, PaymentStatus,
    // the Update completed, completed.
    expect(v2.events.length).toBeLessThanOrEqual(10);
    expect(v2.events[0]?.workflowExecutionStartedEventAttributes?.workflowType?.name).toBe('paymentWorkflowV2');
  });

  it('the type it replaces, for runs started before, still runs and still marks each change', async () => {
    const legacy = await tokenPayment(paymentWorkflow);
    expect(legacy.outcome).toEqual({ kind: 'settled' });
    expect(legacy.result).toEqual({ state: 'settled' });
    expect(legacy.attempts).toBe(1);
    expect(patchEvents(legacy.events).length).toBeGreaterThanOrEqual(10);
  });

  it('a refund of refundWorkflowV2 records no patch marker, and continues as new as the same type', async () => {
    const refundId = `ref_types_${process.pid}_${++counter}`;
    let settled = false;
    const activities = {
      attemptProviderRefund: jest.fn(async () => 'pending' as const),
      awaitRefundRecorded: jest.fn(async () => 'pending' as const),
      failRefundUnavailable: jest.fn(async () => undefined),
      reconcileProviderRefund: jest.fn(async () => (settled ? ('settled' as const) : ('pending' as const))),
      undeliveredEventIds: jest.fn(async () => [] as string[]),
    };
    await withWorker(activities, async (taskQueue) => {
      const handle = await testEnv().client.workflow.start(refundWorkflowV2, {
        taskQueue,
        workflowId: refundWorkflowId(refundId),
        args: [
          {
            refundId,
            paymentId: 'pay_types',
            merchantId: 'mer_types',
            callbackRetryInitialSeconds: 10,
            callbacks: false,
            pollInitialSeconds: 3600,
            // Small enough that a few webhooks hand the run over.
            historyEventLimit: 30,
          },
        ],
      });
      started.push(handle);
      expect(await handle.executeUpdate(refundOutcomeUpdate)).toEqual({ kind: 'pending' });
      for (let i = 0; i < 12; i++) {
        await untilNoTimerDue(testEnv(), handle.workflowId);
        await handle.signal(providerRefundEventSignal);
        await testEnv().sleep(60_000);
      }
      settled = true;
      await untilNoTimerDue(testEnv(), handle.workflowId);
      await handle.signal(providerRefundEventSignal);
      expect(await handle.result()).toEqual({ settled: true });
    });
    const runs = await runHistories(testEnv(), refundWorkflowId(refundId));
    expect(runs.length).toBeGreaterThanOrEqual(2);
    for (const events of runs) {
      expect(events[0]?.workflowExecutionStartedEventAttributes?.workflowType?.name).toBe('refundWorkflowV2');
      expect(patchEvents(events)).toEqual([]);
    }
  }, 60_000);
});
