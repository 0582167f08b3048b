import {
  allHandlersFinished,
  ApplicationFailure,
  isCancellation,
  log,
  patched,
  proxyActivities,
  sleep,
  upsertSearchAttributes,
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
 * carry over) and asks again at once.
 */
export async function untilKnown<T>(
  ask: (questions: Questions) => Promise<T>,
  stuckAfterSeconds: number | undefined,
  handOver?: HandOver,
): Promise<T> {
  const seconds =
    stuckAfterSeconds !== undefined && stuckAfterSeconds > 0 ? stuckAfterSeconds : DEFAULT_STUCK_AFTER_SECONDS;
  const questions = questionsFor(seconds);
  try {
    return await ask(questions);
  } catch (err) {
    if (isCancellation(err) || !patched(NEVER_FAIL_CLOSED)) throw err;
    let reason = stuckReason(err);
    upsertSearchAttributes([{ key: StuckKey, value: reason }]);
    log.warn('stuck: no answer the code knows; asking again later', { reason });
    // Asked again at once, as patiently as before but bounded by an hour per call; a call that
    // fails is followed by a wait, doubling up to an hour.
    const patient = questionsFor(STUCK_RETRY_MAX_MS / 1000);
    for (let delayMs = STUCK_RETRY_FIRST_MS; ; delayMs = Math.min(delayMs * 2, STUCK_RETRY_MAX_MS)) {
      try {
        const answer = await ask(patient);
        upsertSearchAttributes([{ key: StuckKey, value: null }]);
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
