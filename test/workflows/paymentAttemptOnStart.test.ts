import { Context } from '@temporalio/activity';
import { WithStartWorkflowOperation, type WorkflowHandle } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import { paymentWorkflowV2 } from '../../workflows/payment';
import { paymentWorkflowId, submitPaymentUpdate, type PaymentWorkflowInput } from '../../workflows/paymentApi';
import { useTimeSkippingEnvironment, withShippedWorker, terminatedAfterEachTest } from '../helpers/timeSkipping';

const { EventType } = temporal.api.enums.v1;

/**
 * The API starts a payment's run together with the merchant's submit (Update-with-Start). An
 * Update is durable only once accepted: a worker or history service dying before that drops it.
 * (30-minute chaos run, 2026-11-23: a token payment's run started, its Update gone, the payment
 * left `created` with nothing attempted until its 24 h expiry, though the merchant had been told
 * "the outcome will follow".) So a run the API starts makes that first attempt itself.
 */
describe('payment: the attempt asked for at start is made even without its Update (time-skipping, stubbed activities)', () => {
  const testEnv = useTimeSkippingEnvironment();
  let counter = 0;
  const started = terminatedAfterEachTest();

  function stubbedActivities() {
    return {
      attemptProviderPayment: jest.fn(async () => ({ kind: 'settled' as const })),
      reconcileProviderPayment: jest.fn(async () => 'settled' as const),
      expireProviderPayment: jest.fn(async () => 'settled' as const),
      undeliveredEventIds: jest.fn(async () => [] as string[]),
    };
  }

  const withWorker = <T>(activities: object, drive: (taskQueue: string) => Promise<T>) =>
    withShippedWorker(testEnv(), 'attempt-on-start', activities, drive);

  // Expiring a day from the server's time: a test that skips to an expiry moves it for the next.
  const inputFor = async (paymentId: string, attemptOnStart?: boolean): Promise<PaymentWorkflowInput> => ({
    paymentId,
    merchantId: 'mer_on_start',
    expiresAt: new Date((await testEnv().currentTimeMs()) + 86_400_000).toISOString(),
    callbackRetryInitialSeconds: 10,
    callbacks: false,
    ...(attemptOnStart === undefined ? {} : { attemptOnStart }),
  });

  /** Starts a run with a plain start (no Update) and waits for its result. */
  const runWithoutUpdate = (paymentId: string, activities: object, attemptOnStart?: boolean) =>
    withWorker(activities, async (taskQueue) => {
      const handle = await testEnv().client.workflow.start(paymentWorkflowV2, {
        taskQueue,
        workflowId: paymentWorkflowId(paymentId),
        args: [await inputFor(paymentId, attemptOnStart)],
      });
      started.push(handle);
      return handle.result();
    });

  it('a run started with attemptOnStart and no Update (the Update lost) attempts once and settles', async () => {
    const paymentId = `pay_on_start_${process.pid}_${++counter}`;
    const activities = stubbedActivities();
    const result = await runWithoutUpdate(paymentId, activities, true);
    expect(result).toEqual({ state: 'settled' });
    expect(activities.attemptProviderPayment).toHaveBeenCalledTimes(1);
    expect(activities.attemptProviderPayment).toHaveBeenCalledWith(paymentId);
    expect(activities.expireProviderPayment).not.toHaveBeenCalled();
  });

  /** Update-with-Start as the API sends it; answers the Update's outcome and the run's history. */
  const submitWithStart = (
    paymentId: string,
    activities: object,
    then?: (handle: WorkflowHandle) => Promise<unknown>,
  ) =>
    withWorker(activities, async (taskQueue) => {
      const startWorkflowOperation = new WithStartWorkflowOperation(paymentWorkflowV2, {
        taskQueue,
        workflowId: paymentWorkflowId(paymentId),
        args: [await inputFor(paymentId, true)],
        workflowIdConflictPolicy: 'USE_EXISTING',
      });
      const outcome = await testEnv().client.workflow.executeUpdateWithStart(submitPaymentUpdate, {
        startWorkflowOperation,
      });
      const handle = await startWorkflowOperation.workflowHandle();
      started.push(handle);
      const later = await then?.(handle);
      return { outcome, later, events: (await handle.fetchHistory()).events ?? [] };
    });

  it('with its Update delivered too (Update-with-Start), still exactly one attempt, answered to the Update', async () => {
    const paymentId = `pay_on_start_${process.pid}_${++counter}`;
    const activities = stubbedActivities();
    const { outcome } = await submitWithStart(paymentId, activities, (handle) => handle.result());
    expect(outcome).toEqual({ kind: 'settled' });
    expect(activities.attemptProviderPayment).toHaveBeenCalledTimes(1);
  });

  it('a run the sweeper starts (no attemptOnStart) attempts nothing and voids at its expiry', async () => {
    const paymentId = `pay_on_start_${process.pid}_${++counter}`;
    const activities = stubbedActivities();
    const result = await runWithoutUpdate(paymentId, activities);
    expect(result).toEqual({ state: 'settled' });
    expect(activities.attemptProviderPayment).not.toHaveBeenCalled();
    expect(activities.expireProviderPayment).toHaveBeenCalledTimes(1);
  });
  // The start commits the request, so the call needs no task of its own first (START_ATTEMPT_LOCAL):
  // one workflow task answers the merchant, as a refund's does.
  it('the attempt asked for at start is a local activity in the first workflow task', async () => {
    const paymentId = `pay_on_start_${process.pid}_${++counter}`;
    const calledLocally: boolean[] = [];
    const activities = {
      ...stubbedActivities(),
      attemptProviderPayment: jest.fn(async () => {
        calledLocally.push(Context.current().info.isLocal);
        return { kind: 'settled' as const };
      }),
    };
    const { outcome, events } = await submitWithStart(paymentId, activities, (handle) => handle.result());
    expect(outcome).toEqual({ kind: 'settled' });
    expect(calledLocally).toEqual([true]);
    const types = events.map((e) => e.eventType);
    expect(types).not.toContain(EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED);
    // Accepted, answered and completed by the run's one workflow task.
    expect(types.filter((t) => t === EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED)).toHaveLength(1);
    expect(types).toContain(EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_COMPLETED);
    expect(types.at(-1)).toBe(EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED);
  });

  it('a repeat asked only by its Update is a regular activity, scheduled once the Update is accepted', async () => {
    const paymentId = `pay_on_start_${process.pid}_${++counter}`;
    const calls: { isLocal: boolean; acceptedUpdates: number }[] = [];
    const activities = {
      ...stubbedActivities(),
      attemptProviderPayment: jest.fn(async () => {
        const { isLocal } = Context.current().info;
        const history = await testEnv().client.workflow.getHandle(paymentWorkflowId(paymentId)).fetchHistory();
        const acceptedUpdates = (history.events ?? []).filter(
          (e) => e.eventType === EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED,
        ).length;
        calls.push({ isLocal, acceptedUpdates });
        if (calls.length === 1) throw ApplicationFailure.nonRetryable('down', 'unavailable');
        return { kind: 'settled' as const };
      }),
    };
    const { outcome, later } = await submitWithStart(paymentId, activities, async (handle) => {
      const repeat = await handle.executeUpdate(submitPaymentUpdate);
      await handle.result();
      return repeat;
    });
    expect(outcome).toEqual({ kind: 'provider_unavailable' });
    expect(later).toEqual({ kind: 'settled' });
    // The first from the start's task (its Update not in the history yet); the repeat after its
    // Update's acceptance was saved.
    expect(calls).toEqual([
      { isLocal: true, acceptedUpdates: 0 },
      { isLocal: false, acceptedUpdates: 2 },
    ]);
  });
});
