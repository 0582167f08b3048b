import {
  allHandlersFinished,
  ApplicationFailure,
  isCancellation,
  log,
  patched,
  proxyActivities,
  sleep,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { Activities } from '../activities';
import { LOOKUP_HEARTBEAT_TIMEOUT } from './providerActivities';
import { NEVER_FAIL_CLOSED, UNTIL_KNOWN_HAND_OVER } from './patches';
import { runIsLong } from './runBound';
import { StuckKey } from './searchAttributes';

/** How long a question may go without an answer the code knows before its run is marked stuck. */
export const DEFAULT_STUCK_AFTER_SECONDS = 3600;
/** While stuck: the first wait before asking again, doubling up to the longest. */
const STUCK_RETRY_FIRST_MS = 60_000;
const STUCK_RETRY_MAX_MS = 3_600_000;

type Questions = ReturnType<typeof proxyActivities<Activities>>;

/**
 * How a stuck run hands over to a new one once it is long (workflows/runBound.ts): the caller's
 * continue-as-new with its state, such that the new run asks the same question again at once.
 */
export interface HandOver {
  historyEventLimit?: number | undefined;
  /** Whether the caller's state may be handed over now (e.g. no attempt requested meanwhile); default yes. */
  ready?: () => boolean;
  continueAsNew: () => Promise<never>;
}

/** How a caller other than payments and refunds asks (workflows/subscription). */
export interface UntilKnownOptions<T> {
  /** The patch that marks runs taking the stuck path (default NEVER_FAIL_CLOSED). */
  patchId?: string;
  /**
   * Whether an answer is one the code knows (default: every answer). One that is not (e.g. a
   * charge the provider answered with a status nobody knows) leaves the mark as it is: the
   * caller goes on asking and marks or clears it itself.
   */
  known?: (answer: T) => boolean;
}

/**
 * The provider questions (reconciliation, expiry) as patient as before (backing off to once a
 * minute), but bounded: after `seconds` without an answer the code knows, the call ends and
 * the caller (untilKnown) marks its run stuck.
 */
function questionsFor(seconds: number): Questions {
  return proxyActivities<Activities>({
    startToCloseTimeout: '15 seconds',
    heartbeatTimeout: LOOKUP_HEARTBEAT_TIMEOUT,
    scheduleToCloseTimeout: `${seconds} seconds`,
    retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute' },
  });
}

/** `stuckAfterSeconds` as given in a workflow's input (absent or not positive: the default hour). */
export function stuckAfterMs(stuckAfterSeconds: number | undefined): number {
  return (
    (stuckAfterSeconds !== undefined && stuckAfterSeconds > 0 ? stuckAfterSeconds : DEFAULT_STUCK_AFTER_SECONDS) * 1000
  );
}

/** The run's `Stuck` mark (inherited over continue-as-new), or null. */
export function stuckMark(): string | null {
  return workflowInfo().typedSearchAttributes.get(StuckKey) ?? null;
}

/**
 * Sets the run's `Stuck` mark to `reason` (null: clears it); nothing is written when it says
 * that already. For callers that track a question's time themselves (workflows/subscription).
 */
export function markStuck(reason: string | null): void {
  if (stuckMark() === reason) return;
  upsertSearchAttributes([{ key: StuckKey, value: reason }]);
  if (reason) log.warn('stuck: no answer the code knows; asking again later', { reason });
}

/**
 * Why a question failed, for the `Stuck` search attribute: the type of the first ApplicationFailure
 * down its causes (an activity out of time carries its last attempt's failure), else `timeout`.
 */
function stuckReason(err: unknown): string {
  for (let failure: unknown = err; failure instanceof Error; failure = failure.cause) {
    if (failure instanceof ApplicationFailure && failure.type) return failure.type;
  }
  return 'timeout';
}

/**
 * Asks `ask` until it answers: never fails the workflow on an answer the code does not know
 * (issue 42, "never fail closed"). The record stays where it is meanwhile. Past `stuckAfterSeconds`
 * without an answer (or on a failure retrying cannot fix, e.g. a non-retryable one), the run is
 * marked `Stuck` (the failure's type) and asks again at doubling intervals, up to hourly; the mark
 * is cleared once answered. Runs started before NEVER_FAIL_CLOSED, whose histories record such
 * a failure, fail as they did. Given `handOver`, a stuck run that has grown long (a failed call
 * and a timer at most hourly: weeks stuck) continues as new through it, so each run's history
 * stays bounded (UNTIL_KNOWN_HAND_OVER); the new run keeps the `Stuck` mark (search attributes
 * carry over) and asks again at once. `options` (workflows/subscription, decision 0062): its own
 * patch for the stuck path, and answers that are not known (the mark is then the caller's).
 */
export async function untilKnown<T>(
  ask: (questions: Questions) => Promise<T>,
  stuckAfterSeconds: number | undefined,
  handOver?: HandOver,
  options: UntilKnownOptions<T> = {},
): Promise<T> {
  const questions = questionsFor(stuckAfterMs(stuckAfterSeconds) / 1000);
  try {
    return await ask(questions);
  } catch (err) {
    if (isCancellation(err) || !patched(options.patchId ?? NEVER_FAIL_CLOSED)) throw err;
    let reason = stuckReason(err);
    upsertSearchAttributes([{ key: StuckKey, value: reason }]);
    log.warn('stuck: no answer the code knows; asking again later', { reason });
    // Asked again at once, as patiently as before but bounded by an hour per call; a call that
    // fails is followed by a wait, doubling up to an hour.
    const patient = questionsFor(STUCK_RETRY_MAX_MS / 1000);
    for (let delayMs = STUCK_RETRY_FIRST_MS; ; delayMs = Math.min(delayMs * 2, STUCK_RETRY_MAX_MS)) {
      try {
        const answer = await ask(patient);
        if (options.known?.(answer) ?? true) upsertSearchAttributes([{ key: StuckKey, value: null }]);
        return answer;
      } catch (again) {
        if (isCancellation(again)) throw again;
        if (stuckReason(again) !== reason) {
          reason = stuckReason(again);
          upsertSearchAttributes([{ key: StuckKey, value: reason }]);
        }
      }
      // Only with no handler running (one may wait on what follows this answer): else next time.
      if (
        handOver &&
        allHandlersFinished() &&
        (handOver.ready?.() ?? true) &&
        runIsLong(handOver.historyEventLimit) &&
        patched(UNTIL_KNOWN_HAND_OVER)
      ) {
        log.info('stuck for long: continuing as new', { reason });
        await handOver.continueAsNew();
      }
      await sleep(delayMs);
    }
  }
}
