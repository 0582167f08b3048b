import {
  ActivityFailure,
  ApplicationFailure,
  defaultPayloadConverter,
  log,
  patched,
  proxyActivities,
  proxyLocalActivities,
  sleep,
  workflowInfo,
  type ActivityInput,
  type Headers,
  type LocalActivityInput,
  type WorkflowInterceptors,
  type WorkflowInterceptorsFactory,
} from '@temporalio/workflow';
import { readRequestId, REQUEST_ID_HEADER, REQUEST_ID_MEMO } from './requestId';
import { ACTIVITY_BUG } from './activityBug';
import { ACTIVITY_BUG_PARK, LOCAL_ACTIVITY_BUG_PARK } from './patches';
import { markStuck, stuckMark } from './untilKnown';

/** A parked call (a bug): the first wait before asking again, doubling up to the longest (as untilKnown's). */
const PARKED_RETRY_FIRST_MS = 60_000;
const PARKED_RETRY_MAX_MS = 3_600_000;

/**
 * Did the activity fail on a bug (src/temporal/activityErrors.ts)? By the failure's type only. A
 * regular activity's failure arrives wrapped in an ActivityFailure; a local activity's arrives as
 * the ApplicationFailure itself (sdk-core wraps only a local activity's timeout or cancellation).
 */
export function isActivityBug(err: unknown): boolean {
  const failure = err instanceof ActivityFailure ? err.cause : err;
  return failure instanceof ApplicationFailure && failure.type === ACTIVITY_BUG;
}

type AnyActivities = Record<string, (...args: unknown[]) => Promise<unknown>>;

/**
 * Workflow interceptors, bundled with the workflows (src/workflowBundle.ts). They carry the
 * request id of the API request that started the run (workflows/requestId.ts) on to what the run
 * schedules, and into its own log lines. Headers are not part of a command's identity, so this
 * changes nothing a replay compares.
 *
 * They also park a call that failed on a bug (issue 44, item 5; decision 0077; ACTIVITY_BUG_PARK):
 * rather than failing the run (the caller would see a non-retryable failure), the run is marked
 * `Stuck: activity_bug` (counted by `workflows_stuck`, alerted by WorkflowsStuck and
 * ActivityBugsParked), waits a minute, doubling up to hourly, and the same activity is scheduled
 * again with the same arguments and options, until a fixed worker answers it; the caller then sees
 * that answer (or a failure that is not a bug) and the mark is cleared once nothing is parked.
 * Local activities park alike, asked again as local activities (LOCAL_ACTIVITY_BUG_PARK).
 */
export const interceptors: WorkflowInterceptorsFactory = (): WorkflowInterceptors => {
  let fromHeader: string | undefined;
  /** The start's header, else the memo (a run started before this interceptor, continued as new). */
  const requestId = (): string | undefined => {
    if (fromHeader !== undefined) return fromHeader;
    const memo = workflowInfo().memo?.[REQUEST_ID_MEMO];
    return typeof memo === 'string' ? memo : undefined;
  };
  const withRequestId = (headers: Headers): Headers => {
    const id = requestId();
    if (id === undefined || headers[REQUEST_ID_HEADER]) return headers;
    return { ...headers, [REQUEST_ID_HEADER]: defaultPayloadConverter.toPayload(id) };
  };
  /** Calls parked now, and the next wait per activity type (both per run: the factory is per run). */
  let parked = 0;
  const nextWaitMs = new Map<string, number>();
  /**
   * A call that failed on a bug: the run marked `Stuck: activity_bug`, a wait, then the same
   * activity scheduled again (by `again`'s proxy, with the same options and arguments) until it
   * answers; the mark cleared once nothing of the run is parked.
   */
  const park = async (input: ActivityInput | LocalActivityInput, again: () => AnyActivities): Promise<unknown> => {
    parked += 1;
    try {
      markStuck(ACTIVITY_BUG);
      const waitMs = nextWaitMs.get(input.activityType) ?? PARKED_RETRY_FIRST_MS;
      nextWaitMs.set(input.activityType, Math.min(waitMs * 2, PARKED_RETRY_MAX_MS));
      log.error('activity bug: run parked, asking again later', { activityType: input.activityType, waitMs });
      await sleep(waitMs);
      const answer = await again()[input.activityType]!(...input.args);
      nextWaitMs.delete(input.activityType);
      return answer;
    } finally {
      parked -= 1;
      if (parked === 0 && stuckMark() === ACTIVITY_BUG) markStuck(null);
    }
  };
  return {
    inbound: [
      {
        execute: (input, next) => {
          fromHeader = readRequestId(input.headers);
          return next(input);
        },
      },
    ],
    outbound: [
      {
        scheduleActivity: async (input, next) => {
          try {
            return await next({ ...input, headers: withRequestId(input.headers) });
          } catch (err) {
            if (!isActivityBug(err) || !patched(ACTIVITY_BUG_PARK)) throw err;
            // Scheduled anew (a new command, through these interceptors: parked again on the same bug).
            return park(input, () => proxyActivities<AnyActivities>(input.options));
          }
        },
        // Local activities (provider attempts, a renewal's quick steps) park alike, under a patch of
        // their own (LOCAL_ACTIVITY_BUG_PARK): a run that parked a regular call under
        // ACTIVITY_BUG_PARK and then took a local call's bug to its caller replays unchanged.
        scheduleLocalActivity: async (input, next) => {
          try {
            return await next({ ...input, headers: withRequestId(input.headers) });
          } catch (err) {
            if (!isActivityBug(err) || !patched(LOCAL_ACTIVITY_BUG_PARK)) throw err;
            return park(input, () => proxyLocalActivities<AnyActivities>(input.options));
          }
        },
        startChildWorkflowExecution: (input, next) => next({ ...input, headers: withRequestId(input.headers) }),
        continueAsNew: (input, next) => next({ ...input, headers: withRequestId(input.headers) }),
        getLogAttributes: (input, next) => {
          const id = requestId();
          return next(id === undefined ? input : { ...input, requestId: id });
        },
      },
    ],
  };
};
