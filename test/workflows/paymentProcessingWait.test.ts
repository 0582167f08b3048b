import type { temporal } from '@temporalio/proto';
import type { paymentWorkflowV2 } from '../../workflows/payment';
import {
  paymentWorkflowId,
  providerPaymentEventSignal,
  submitPaymentUpdate,
  type PaymentWorkflowInput,
} from '../../workflows/paymentApi';
import {
  runHistories,
  terminatedAfterEachTest,
  untilNoTimerDue,
  useTimeSkippingEnvironment,
  withShippedWorker,
} from '../helpers/timeSkipping';

const MINUTE_MS = 60_000;
const DAY_MS = 24 * 60 * MINUTE_MS;

/**
 * A payment the processor decides later (`processing`; PRODUCT.md, "Processor lifecycle"), on the
 * shipped workflow code with stubbed activities and the time-skipping test server: no expiry, the
 * processor asked at doubling intervals up to daily when no webhook comes, runs handed over as
 * their histories grow, and a webhook heard at once.
 */
describe('a processing payment waits for the processor (time-skipping, stubbed activities)', () => {
  const testEnv = useTimeSkippingEnvironment();
  let counter = 0;
  const started = terminatedAfterEachTest();

  const eventTimeMs = (event: temporal.api.history.v1.IHistoryEvent | undefined) =>
    Number(event?.eventTime?.seconds ?? 0) * 1000 + Math.floor((event?.eventTime?.nanos ?? 0) / 1e6);

  async function reconcileTimes(workflowId: string): Promise<number[]> {
    return (await runHistories(testEnv(), workflowId))
      .flat()
      .filter((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'reconcileProviderPayment')
      .map(eventTimeMs);
  }

  async function paymentInput(overrides: Partial<PaymentWorkflowInput> = {}): Promise<PaymentWorkflowInput> {
    return {
      paymentId: `pay_processing_${process.pid}_${++counter}`,
      merchantId: 'mer_processing',
      // Expires in an hour: a processing payment has no expiry, it is never voided.
      expiresAt: new Date((await testEnv().currentTimeMs()) + 60 * MINUTE_MS).toISOString(),
      callbackRetryInitialSeconds: 10,
      callbacks: false,
      ...overrides,
    };
  }

  it('decided after three weeks without a webhook: asked at 1, 2, 4... minutes then daily; runs bounded; never expired', async () => {
    let decided = false;
    const activities = {
      attemptProviderPayment: jest.fn(async () => ({ kind: 'processing' as const })),
      reconcileProviderPayment: jest.fn(async () => (decided ? ('settled' as const) : ('processing' as const))),
      expireProviderPayment: jest.fn(async () => 'settled' as const),
      undeliveredEventIds: jest.fn(async () => [] as string[]),
    };
    const input = await paymentInput({ historyEventLimit: 40 });
    const startedAt = await testEnv().currentTimeMs();
    const result = await withShippedWorker(testEnv(), 'processing-timeskip', activities, async (taskQueue) => {
      const handle = await testEnv().client.workflow.start<typeof paymentWorkflowV2>('paymentWorkflowV2', {
        taskQueue,
        workflowId: paymentWorkflowId(input.paymentId),
        args: [input],
      });
      started.push(handle);
      // The API reads the payment (`processing`): no further answer to wait for.
      expect(await handle.executeUpdate(submitPaymentUpdate)).toEqual({ kind: 'settled' });
      while ((await testEnv().currentTimeMs()) - startedAt < 21 * DAY_MS) await testEnv().sleep(DAY_MS / 2);
      decided = true;
      return handle.result();
    });
    expect(result).toEqual({ state: 'settled' });
    expect(activities.attemptProviderPayment).toHaveBeenCalledTimes(1);
    expect(activities.expireProviderPayment).not.toHaveBeenCalled();

    const times = await reconcileTimes(paymentWorkflowId(input.paymentId));
    const gaps = times.slice(1).map((t, i) => Math.round((t - times[i]!) / MINUTE_MS));
    // 2, 4, ... 1024 minutes, then a day (1440) each time.
    expect(gaps.slice(0, 10)).toEqual([2, 4, 8, 16, 32, 64, 128, 256, 512, 1024]);
    for (const gap of gaps.slice(10)) expect(gap).toBe(1440);
    expect(Math.round((times[0]! - startedAt) / MINUTE_MS)).toBe(1);
    expect(times.length).toBeGreaterThanOrEqual(28);

    const runs = (await runHistories(testEnv(), paymentWorkflowId(input.paymentId))).map((events) => events.length);
    expect(runs.length).toBeGreaterThanOrEqual(4);
    for (const events of runs) expect(events).toBeLessThanOrEqual(40 + 20);
    process.stderr.write(
      `[time-skipping] processing payment, ${times.length} questions: runs ${JSON.stringify(runs)}\n`,
    );
  }, 180_000);

  it('a webhook is heard at once, whatever the next question is due', async () => {
    let decided = false;
    const activities = {
      attemptProviderPayment: jest.fn(async () => ({ kind: 'processing' as const })),
      reconcileProviderPayment: jest.fn(async () => (decided ? ('settled' as const) : ('processing' as const))),
      expireProviderPayment: jest.fn(async () => 'settled' as const),
      undeliveredEventIds: jest.fn(async () => [] as string[]),
    };
    const input = await paymentInput({ processingPollSeconds: 3600 });
    const result = await withShippedWorker(testEnv(), 'processing-webhook', activities, async (taskQueue) => {
      const handle = await testEnv().client.workflow.start<typeof paymentWorkflowV2>('paymentWorkflowV2', {
        taskQueue,
        workflowId: paymentWorkflowId(input.paymentId),
        args: [input],
      });
      started.push(handle);
      expect(await handle.executeUpdate(submitPaymentUpdate)).toEqual({ kind: 'settled' });
      decided = true;
      await untilNoTimerDue(testEnv(), handle.workflowId);
      await handle.signal(providerPaymentEventSignal);
      return handle.result();
    });
    expect(result).toEqual({ state: 'settled' });
    expect(activities.reconcileProviderPayment).toHaveBeenCalledTimes(1);
    expect(activities.expireProviderPayment).not.toHaveBeenCalled();
  }, 60_000);
});
