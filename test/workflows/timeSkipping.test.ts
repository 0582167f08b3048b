import path from 'node:path';
import { bundleWorkflowCode, Worker, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { WorkflowFailedError } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { useTimeSkippingEnvironment } from '../helpers/timeSkipping';
import type { MonthlyActivities } from '../fixtures/timeskip/activities';
import { monthlyCharges, upsertsPlatformSearchAttributes } from '../fixtures/timeskip/workflows';
import { MerchantIdKey, SubscriptionStatusKey } from '../../workflows/searchAttributes';

const DAY_MS = 24 * 60 * 60 * 1000;

/**
 * Workflow tests on the Java time-skipping test server: timers of months run in seconds, with
 * activities stubbed by jest.fn. The pattern for testing the subscription workflow over years.
 */
describe('time-skipping workflow environment', () => {
  const testEnv = useTimeSkippingEnvironment();
  let workflowBundle: WorkflowBundleWithSourceMap;
  let queueCounter = 0;

  beforeAll(async () => {
    workflowBundle = await bundleWorkflowCode({
      workflowsPath: path.join(__dirname, '../fixtures/timeskip/workflows.ts'),
      logger: { log() {}, trace() {}, debug() {}, info() {}, warn() {}, error() {} },
    });
  }, 120_000);

  async function workerWith(activities: MonthlyActivities): Promise<{ worker: Worker; taskQueue: string }> {
    const taskQueue = `timeskip-${process.pid}-${++queueCounter}`;
    const worker = await Worker.create({
      connection: testEnv().nativeConnection,
      taskQueue,
      workflowBundle,
      activities,
    });
    return { worker, taskQueue };
  }

  it('runs 60 monthly charges (5 years of timers) in seconds of wall time', async () => {
    const env = testEnv();
    // Declines every 7th month, so the stub's results visibly reach the workflow.
    const chargeMonth = jest.fn(async (month: number) => (month % 7 === 0 ? ('declined' as const) : ('paid' as const)));
    const { worker, taskQueue } = await workerWith({ chargeMonth });
    const workflowId = `monthly-${Date.now()}`;
    const serverStart = await env.currentTimeMs();
    const wallStart = Date.now();

    const result = await worker.runUntil(
      env.client.workflow.execute(monthlyCharges, { taskQueue, workflowId, args: [60] }),
    );

    const wallMs = Date.now() - wallStart;
    expect(wallMs).toBeLessThan(30_000);
    expect(chargeMonth).toHaveBeenCalledTimes(60);
    expect(chargeMonth.mock.calls.map(([month]) => month)).toEqual(Array.from({ length: 60 }, (_, i) => i + 1));
    expect(result.outcomes.filter((o) => o === 'declined')).toHaveLength(8);
    // Each charge happened 30 days of workflow time after the previous one.
    const gaps = result.chargedAt.slice(1).map((t, i) => t - result.chargedAt[i]!);
    for (const gap of gaps) expect(gap).toBeGreaterThanOrEqual(30 * DAY_MS);
    expect(await env.currentTimeMs()).toBeGreaterThanOrEqual(serverStart + 60 * 30 * DAY_MS);

    // Started + first workflow task (4); per month: timer started/fired, workflow task (3),
    // activity scheduled/started/completed, workflow task (3) = 11; completed (1).
    const history = await env.client.workflow.getHandle(workflowId).fetchHistory();
    const events = history.events ?? [];
    const { EventType } = temporal.api.enums.v1;
    const count = (type: temporal.api.enums.v1.EventType) => events.filter((e) => e.eventType === type).length;
    expect(count(EventType.EVENT_TYPE_TIMER_FIRED)).toBe(60);
    expect(count(EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED)).toBe(60);
    expect(count(EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED)).toBe(1);
    expect(events).toHaveLength(4 + 60 * 11 + 1);
    process.stderr.write(`[time-skipping] 60 months in ${wallMs} ms of wall time, ${events.length} events\n`);
  });

  it('skips time on env.sleep() while nobody waits for a result', async () => {
    const env = testEnv();
    const chargeMonth = jest.fn(async () => 'paid' as const);
    const { worker, taskQueue } = await workerWith({ chargeMonth });
    await worker.runUntil(async () => {
      const handle = await env.client.workflow.start(monthlyCharges, {
        taskQueue,
        workflowId: `monthly-sleep-${Date.now()}`,
        args: [3],
      });
      // Not awaiting the result: time stands still until env.sleep skips it.
      await env.sleep(45 * DAY_MS);
      await waitFor(() => chargeMonth.mock.calls.length === 1);
      expect(chargeMonth).toHaveBeenCalledTimes(1);
      await env.sleep(30 * DAY_MS);
      await waitFor(() => chargeMonth.mock.calls.length === 2);
      await handle.result();
      expect(chargeMonth).toHaveBeenCalledTimes(3);
    });
  });

  it('accepts the platform search attributes (registered by the helper)', async () => {
    const env = testEnv();
    const { worker, taskQueue } = await workerWith({ chargeMonth: jest.fn() });
    const workflowId = `upsert-${Date.now()}`;
    await worker.runUntil(async () => {
      const handle = await env.client.workflow.start(upsertsPlatformSearchAttributes, {
        taskQueue,
        workflowId,
        args: ['mer_timeskip'],
        typedSearchAttributes: [{ key: MerchantIdKey, value: 'mer_timeskip' }],
      });
      await expect(handle.result()).resolves.toBe(workflowId);
      const description = await handle.describe();
      expect(description.typedSearchAttributes.get(SubscriptionStatusKey)).toBe('active');
      expect(description.typedSearchAttributes.get(MerchantIdKey)).toBe('mer_timeskip');
    });
  });

  it('reports a failed activity as a failed workflow', async () => {
    const env = testEnv();
    const chargeMonth = jest.fn(async (month: number) => {
      if (month === 2) throw new Error('provider unreachable');
      return 'paid' as const;
    });
    const { worker, taskQueue } = await workerWith({ chargeMonth });
    await expect(
      worker.runUntil(
        env.client.workflow.execute(monthlyCharges, { taskQueue, workflowId: `monthly-fail-${Date.now()}`, args: [3] }),
      ),
    ).rejects.toBeInstanceOf(WorkflowFailedError);
    expect(chargeMonth).toHaveBeenCalledTimes(2);
  });
});

async function waitFor(condition: () => boolean, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 50));
  }
}
