import type { WorkerOptions } from '@temporalio/worker';
import type { Config } from '../config';
import { subscriptionTaskQueue } from './taskQueues';

/**
 * How a worker process caches workflow runs (README, Configuration; docs/decisions.md, "Performance"
 * and "The subscription worker's cache and sticky timeout").
 */
export interface WorkflowCacheSettings {
  /** Runs one SDK worker keeps in memory (WORKER_MAX_CACHED_WORKFLOWS). */
  maxCachedWorkflows: number;
  /** The subscription queue's worker instead (WORKER_SUBSCRIPTION_MAX_CACHED_WORKFLOWS). */
  subscriptionMaxCachedWorkflows: number;
  /** The subscription queue's sticky schedule-to-start timeout (WORKER_SUBSCRIPTION_STICKY_TIMEOUT_SECONDS). */
  subscriptionStickyTimeoutSeconds: number;
}

/** The settings of the environment (src/config.ts), each default resolved here. */
export function workflowCacheSettings(
  config: Pick<
    Config,
    | 'WORKER_MAX_CACHED_WORKFLOWS'
    | 'WORKER_SUBSCRIPTION_MAX_CACHED_WORKFLOWS'
    | 'WORKER_SUBSCRIPTION_STICKY_TIMEOUT_SECONDS'
  >,
): WorkflowCacheSettings {
  return {
    maxCachedWorkflows: config.WORKER_MAX_CACHED_WORKFLOWS,
    subscriptionMaxCachedWorkflows:
      config.WORKER_SUBSCRIPTION_MAX_CACHED_WORKFLOWS ?? config.WORKER_MAX_CACHED_WORKFLOWS,
    subscriptionStickyTimeoutSeconds: config.WORKER_SUBSCRIPTION_STICKY_TIMEOUT_SECONDS,
  };
}

type WorkflowCacheOptions = Pick<WorkerOptions, 'maxCachedWorkflows' | 'stickyQueueScheduleToStartTimeout'>;

/**
 * The cache options of the SDK worker that polls `taskQueue`, in a process whose main queue is
 * `mainTaskQueue`. Payments and refunds keep the SDK's 10 s sticky timeout: a checkout whose worker
 * died goes to another worker after 10 s. The subscription queue may cache more and wait longer: a
 * renewal storm's backlog then drains from the sticky queue of the worker that holds each run,
 * instead of timing out to the normal queue and replaying (docs/decisions.md, "The subscription
 * worker's cache and sticky timeout").
 */
export function workflowCacheOptions(
  settings: WorkflowCacheSettings,
  taskQueue: string,
  mainTaskQueue: string,
): WorkflowCacheOptions {
  if (taskQueue !== subscriptionTaskQueue(mainTaskQueue)) return { maxCachedWorkflows: settings.maxCachedWorkflows };
  return {
    maxCachedWorkflows: settings.subscriptionMaxCachedWorkflows,
    stickyQueueScheduleToStartTimeout: `${settings.subscriptionStickyTimeoutSeconds}s`,
  };
}
