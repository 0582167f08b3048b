import type { Context } from '@temporalio/activity';
import { IllegalStateError } from '@temporalio/common';
import { GracefulShutdownPeriodExpiredError, type ActivityInterceptors, type WorkerOptions } from '@temporalio/worker';

/**
 * How long a stopping worker waits for its running tasks before it gives up on them (decision
 * 0075). Activities are cancelled at once (grace 0, the SDK's default); one that does not answer
 * its cancellation (a statement waiting on a lock, a socket without a deadline) would otherwise
 * keep the process alive for ever. Abandoning it is safe: every activity is idempotent and its
 * attempt times out on the server and is retried elsewhere. Under Kubernetes' default 30 s grace.
 */
export const WORKER_SHUTDOWN_FORCE_MS = 25_000;

export function workerShutdownOptions(
  forceMs = WORKER_SHUTDOWN_FORCE_MS,
): Pick<WorkerOptions, 'shutdownGraceTime' | 'shutdownForceTime'> {
  return { shutdownGraceTime: 0, shutdownForceTime: forceMs };
}

/** An activity attempt running in this process. */
export interface ActivityInFlight {
  activityType: string;
  workflowId: string | undefined;
  taskQueue: string;
  attempt: number;
  runningMs: number;
}

const running = new Map<Context, number>();

/** Records every activity attempt while it runs, so that a forced stop can say what it left behind. */
export function inFlightActivityInterceptors(ctx: Context): ActivityInterceptors {
  return {
    inbound: {
      execute: async (input, next) => {
        running.set(ctx, Date.now());
        try {
          return await next(input);
        } finally {
          running.delete(ctx);
        }
      },
    },
  };
}

/** The activity attempts running in this process now, longest first. */
export function activitiesInFlight(): ActivityInFlight[] {
  const now = Date.now();
  return [...running.entries()]
    .map(([ctx, startedAt]) => ({
      activityType: ctx.info.activityType,
      workflowId: ctx.info.workflowExecution?.workflowId,
      taskQueue: ctx.info.taskQueue,
      attempt: ctx.info.attempt,
      runningMs: now - startedAt,
    }))
    .sort((a, b) => b.runningMs - a.runningMs);
}

/**
 * Whether a worker's run() ended because its stop outlasted WORKER_SHUTDOWN_FORCE_MS: the SDK's
 * GracefulShutdownPeriodExpiredError or, as the SDK (1.24) reports it once its core refuses to
 * finalize a worker whose activities still run, an IllegalStateError in place of it.
 */
export function isForcedShutdown(err: unknown): boolean {
  return err instanceof GracefulShutdownPeriodExpiredError || err instanceof IllegalStateError;
}
