import { WithStartWorkflowOperation, type WorkflowHandle } from '@temporalio/client';
import { paymentWorkflow } from '../../workflows/payment';
import { paymentWorkflowId, submitPaymentUpdate, type PaymentWorkflowInput } from '../../workflows/paymentApi';
import { useTimeSkippingEnvironment, withShippedWorker } from '../helpers/timeSkipping';

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
  const started: WorkflowHandle[] = [];
  afterEach(async () => {
    for (const handle of started.splice(0)) await handle.terminate('test over').catch(() => undefined);
  });

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

  const inputFor = (paymentId: string, attemptOnStart?: boolean): PaymentWorkflowInput => ({
    paymentId,
    merchantId: 'mer_on_start',
    expiresAt: new Date(Date.now() + 86_400_000).toISOString(),
    callbackRetryInitialSeconds: 10,
    callbacks: false,
    ...(attemptOnStart === undefined ? {} : { attemptOnStart }),
  });

  /** Starts a run with a plain start (no Update) and waits for its result. */
  const runWithoutUpdate = (paymentId: string, activities: object, attemptOnStart?: boolean) =>
    withWorker(activities, async (taskQueue) => {
      const handle = await testEnv().client.workflow.start(paymentWorkflow, {
        taskQueue,
        workflowId: paymentWorkflowId(paymentId),
        args: [inputFor(paymentId, attemptOnStart)],
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

  it('with its Update delivered too (Update-with-Start), still exactly one attempt, answered to the Update', async () => {
    const paymentId = `pay_on_start_${process.pid}_${++counter}`;
    const activities = stubbedActivities();
    const answer = await withWorker(activities, async (taskQueue) => {
      const startWorkflowOperation = new WithStartWorkflowOperation(paymentWorkflow, {
        taskQueue,
        workflowId: paymentWorkflowId(paymentId),
        args: [inputFor(paymentId, true)],
        workflowIdConflictPolicy: 'USE_EXISTING',
      });
      const outcome = await testEnv().client.workflow.executeUpdateWithStart(submitPaymentUpdate, {
        startWorkflowOperation,
      });
      const handle = await startWorkflowOperation.workflowHandle();
      started.push(handle);
      await handle.result();
      return outcome;
    });
    expect(answer).toEqual({ kind: 'settled' });
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
});
