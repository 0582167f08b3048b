import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import type { ActivityInterceptors } from '@temporalio/worker';
import { ProviderCallLimiter, ProviderCallsLimitedError, type ProviderCallLimits } from '../providers/callLimits';
import { PROVIDER_CALLS_LIMITED } from '../rules/providerFailures';
import { workerMetrics } from '../metrics/worker';
import { DEFAULT_ACTIVITY_SLOTS_PER_CONNECTION } from './activitySlots';

/**
 * The limits of the environment (decision 0085): PROVIDER_CALLS_PER_SECOND_PER_MERCHANT,
 * PROVIDER_CALL_BURST_PER_MERCHANT, and PROVIDER_CALL_CONCURRENCY_PER_MERCHANT, whose 0 (the
 * default) is half the process's pool-sized activity slots (src/temporal/activitySlots.ts): one
 * merchant never holds more than half of them on provider calls.
 */
export function providerCallLimitsFromConfig(config: {
  PROVIDER_CALLS_PER_SECOND_PER_MERCHANT: number;
  PROVIDER_CALL_BURST_PER_MERCHANT: number;
  PROVIDER_CALL_CONCURRENCY_PER_MERCHANT: number;
  DATABASE_POOL_MAX: number;
  WORKER_ACTIVITY_SLOTS_PER_CONNECTION?: number;
}): ProviderCallLimits {
  const slots =
    config.DATABASE_POOL_MAX * (config.WORKER_ACTIVITY_SLOTS_PER_CONNECTION ?? DEFAULT_ACTIVITY_SLOTS_PER_CONNECTION);
  return {
    perSecond: config.PROVIDER_CALLS_PER_SECOND_PER_MERCHANT,
    burst: config.PROVIDER_CALL_BURST_PER_MERCHANT,
    concurrency: config.PROVIDER_CALL_CONCURRENCY_PER_MERCHANT || Math.max(1, Math.floor(slots / 2)),
  };
}

/**
 * The worker's per-merchant provider call limiter (decision 0085): a refused caller is recognised
 * when it comes back by its activity (workflow run and activity id; a local activity's retries run
 * in this process, a regular activity's usually do), so the turn it was given is kept for it.
 */
export function providerCallLimiter(limits: ProviderCallLimits): ProviderCallLimiter {
  return new ProviderCallLimiter(limits, { callerKey: activityCallerKey });
}

function activityCallerKey(): string | undefined {
  let info: Context['info'];
  try {
    info = Context.current().info;
  } catch {
    return undefined; // not in an activity
  }
  const run = info.workflowExecution;
  // A standalone activity (no workflow) is not recognised when it comes back.
  return run ? `${run.workflowId}/${run.runId}/${info.activityId}` : undefined;
}

/**
 * A provider call refused over its merchant's limit, as the activity's failure: retryable, type
 * PROVIDER_CALLS_LIMITED, with `nextRetryDelay` the limiter's answer: the activity gives its slot
 * back and Temporal runs it again then (never a bug: decision 0077 parks only ACTIVITY_BUG).
 */
export function providerCallLimitInterceptors(): ActivityInterceptors {
  return {
    inbound: {
      execute: async (input, next) => {
        try {
          return await next(input);
        } catch (err) {
          if (!(err instanceof ProviderCallsLimitedError)) throw err;
          workerMetrics.providerCallLimited(err.limit);
          throw ApplicationFailure.create({
            message: err.message,
            type: PROVIDER_CALLS_LIMITED,
            nextRetryDelay: Math.max(1, err.retryAfterMs),
            details: [{ merchantId: err.merchantId, limit: err.limit, retryAfterMs: err.retryAfterMs }],
          });
        }
      },
    },
  };
}
