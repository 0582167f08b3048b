import { noopMetricMeter } from '@temporalio/common';
import { DefaultLogger } from '@temporalio/worker';
import { compileWorkerOptions, toNativeWorkerOptions } from '@temporalio/worker/lib/worker-options';
import { loadConfig } from '../../src/config';
import {
  workflowCacheOptions,
  workflowCacheSettings,
  type WorkflowCacheSettings,
} from '../../src/temporal/workflowCache';
import { subscriptionTaskQueue } from '../../src/temporal/taskQueues';

/** What the SDK hands its core for the worker of `taskQueue`: the cache and sticky timeout it really runs. */
function nativeCache(settings: WorkflowCacheSettings, taskQueue: string) {
  const compiled = compileWorkerOptions(
    { taskQueue, workflowBundle: { code: '' }, ...workflowCacheOptions(settings, taskQueue, 'payments') },
    new DefaultLogger('ERROR'),
    noopMetricMeter,
  );
  const native = toNativeWorkerOptions({ ...compiled, buildId: 'test' });
  return { maxCachedWorkflows: native.maxCachedWorkflows, stickyTimeoutMs: native.stickyQueueScheduleToStartTimeout };
}

/** The settings src/main/worker.ts reads from the environment. */
const settingsFromEnv = (env: Record<string, string>) => workflowCacheSettings(loadConfig(env));

describe('workflow cache per task queue', () => {
  const subscriptions = subscriptionTaskQueue('payments');

  it("by default both queues cache 1,000 runs and keep the SDK's 10 s sticky timeout", () => {
    const settings = settingsFromEnv({});
    expect(nativeCache(settings, subscriptions)).toEqual({ maxCachedWorkflows: 1000, stickyTimeoutMs: 10_000 });
    expect(nativeCache(settings, 'payments')).toEqual({ maxCachedWorkflows: 1000, stickyTimeoutMs: 10_000 });
  });

  it('takes each queue from its own variable', () => {
    const settings = settingsFromEnv({
      WORKER_MAX_CACHED_WORKFLOWS: '200',
      WORKER_SUBSCRIPTION_MAX_CACHED_WORKFLOWS: '8000',
      WORKER_SUBSCRIPTION_STICKY_TIMEOUT_SECONDS: '300',
    });
    expect(nativeCache(settings, subscriptions)).toEqual({ maxCachedWorkflows: 8000, stickyTimeoutMs: 300_000 });
    expect(nativeCache(settings, 'payments')).toEqual({ maxCachedWorkflows: 200, stickyTimeoutMs: 10_000 });
    expect(nativeCache(settingsFromEnv({ WORKER_MAX_CACHED_WORKFLOWS: '200' }), subscriptions)).toEqual({
      maxCachedWorkflows: 200,
      stickyTimeoutMs: 10_000,
    });
  });

  it("a queue that is not the main queue's subscription queue is treated as a payments queue", () => {
    const settings = settingsFromEnv({});
    expect(nativeCache(settings, subscriptionTaskQueue('other'))).toEqual({
      maxCachedWorkflows: 1000,
      stickyTimeoutMs: 10_000,
    });
  });

  it('refuses a sticky timeout outside 1 s to an hour, and a negative cache', () => {
    for (const bad of ['0', '3601', '1.5', 'soon']) {
      expect(() => loadConfig({ WORKER_SUBSCRIPTION_STICKY_TIMEOUT_SECONDS: bad })).toThrow(
        /^Invalid configuration:\n {2}WORKER_SUBSCRIPTION_STICKY_TIMEOUT_SECONDS: /,
      );
    }
    expect(() => loadConfig({ WORKER_SUBSCRIPTION_MAX_CACHED_WORKFLOWS: '-1' })).toThrow(
      /^Invalid configuration:\n {2}WORKER_SUBSCRIPTION_MAX_CACHED_WORKFLOWS: /,
    );
  });
});
