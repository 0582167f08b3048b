import { allHandlersFinished, condition, continueAsNew, patched, workflowInfo } from '@temporalio/workflow';
import { SUBSCRIPTION_RUN_AGE } from '../patches';
import type { SubscriptionWorkflowInput } from '../subscriptionApi';
import { cursorOf, type SubscriptionState } from './state';

/** How long a run about to continue as new lets its background sends finish. */
const SEND_DRAIN_MS = 30_000;

/**
 * A run hands over once it is this many billing days old (SUBSCRIPTION_RUN_AGE): no running code
 * is older than a month, whatever the billing interval (decision 0084).
 */
export const MAX_RUN_AGE_DAYS = 30;

/** When this run reaches the age bound (epoch ms). */
const runAgeBoundMs = (s: SubscriptionState): number =>
  workflowInfo().runStartTime.getTime() + MAX_RUN_AGE_DAYS * s.input.billingDaySeconds * 1000;

/**
 * The run is long enough to hand over to a new one: our history bound or the server's
 * suggestion; once age bounded, also the run's age or an operator's `handOver` signal.
 */
export function runIsLong(s: SubscriptionState): boolean {
  const info = workflowInfo();
  if (info.continueAsNewSuggested || info.historyLength >= s.historyLimit) return true;
  return s.ageBounded && (s.handOverAsked || Date.now() >= runAgeBoundMs(s));
}

/**
 * Every wait of the workflow goes through here, so every loop is bounded: before waiting, a long
 * (or old) run continues as new (carrying the state); while waiting, a run that grows long
 * (signals, Updates), reaches the age bound or is asked to hand over wakes up and does the same.
 * Returns when `untilMs` passes (null: no deadline), `wake()` holds, or a cancellation arrives;
 * the caller looks at which.
 *
 * Runs without the SUBSCRIPTION_RUN_AGE marker (histories recorded before it) wait exactly as
 * before: one timer to `untilMs`. The `handOver` signal only wakes them (a predicate makes no
 * command); the run then records the marker and hands over.
 */
export async function waitFor(s: SubscriptionState, wake: () => boolean, untilMs: number | null): Promise<void> {
  if (s.clock) return waitOnClock(s, wake, untilMs, null, true);
  for (;;) {
    // Asked at the wait, never in a predicate; once recorded it holds for the run.
    s.ageBounded ||= patched(SUBSCRIPTION_RUN_AGE);
    await handOverIfLong(s);
    if (s.cancel || wake()) return;
    const done = () => s.cancel !== null || wake() || runIsLong(s) || s.handOverAsked;
    if (!s.ageBounded) {
      if (untilMs === null) {
        await condition(done);
      } else {
        const ms = untilMs - Date.now();
        if (ms <= 0) return;
        await condition(done, ms);
      }
      if (s.cancel || (!runIsLong(s) && !s.handOverAsked)) return;
      continue;
    }
    if (untilMs !== null && untilMs <= Date.now()) return;
    const deadlineMs = Math.min(untilMs ?? Infinity, runAgeBoundMs(s));
    await condition(done, Math.max(deadlineMs - Date.now(), 1));
    // Woken by the age bound or a hand-over: the loop hands over; anything else is the caller's.
    if (s.cancel || wake() || (untilMs !== null && untilMs <= Date.now())) return;
  }
}

/** Waits until `atMs` unless cancelled; true when not cancelled. */
export async function waitUntil(s: SubscriptionState, atMs: number): Promise<boolean> {
  await waitFor(s, () => false, atMs);
  return s.cancel === null;
}

/**
 * A wait in real time whatever the subscription's clock (decision 0090): the provider
 * unreachable (backoff), an undecided attempt's polls, the stuck mark. Without a clock it is
 * exactly `waitFor`.
 */
export async function waitForReal(
  s: SubscriptionState,
  wake: () => boolean,
  realUntilMs: number,
  idle = false,
): Promise<void> {
  if (!s.clock) return waitFor(s, wake, realUntilMs);
  return waitOnClock(s, wake, null, realUntilMs, idle);
}

/** waitUntil in real time (see waitForReal); true when not cancelled. */
export async function waitUntilReal(s: SubscriptionState, realAtMs: number): Promise<boolean> {
  await waitForReal(s, () => false, realAtMs);
  return s.cancel === null;
}

/**
 * A wait with a deadline in the subscription's time (`untilMs`: clock time on a clock) and one in
 * real time (`realUntilMs`), whichever comes first. Without a clock both are real: one `waitFor`
 * to the earlier, the commands of before.
 */
export async function waitForEither(
  s: SubscriptionState,
  wake: () => boolean,
  untilMs: number,
  realUntilMs: number,
  idle: boolean,
): Promise<void> {
  if (!s.clock) return waitFor(s, wake, Math.min(untilMs, realUntilMs));
  return waitOnClock(s, wake, untilMs, realUntilMs, idle);
}

/**
 * A wait of a subscription on a test clock (TEST_CLOCK_TIME, decision 0090): no timer for a
 * clock deadline, which passes when the clock's advance says so (the `testClockTime` Update
 * raises `s.clock.nowMs`); a real deadline (and the run age bound) as a timer. While parked here
 * the run tells the clock what it waits for (`s.clockWait`): `idle` waits (nothing of the
 * advance's in flight, e.g. the customer's authentication) let the clock move on.
 */
async function waitOnClock(
  s: SubscriptionState,
  wake: () => boolean,
  untilMs: number | null,
  realUntilMs: number | null,
  idle: boolean,
): Promise<void> {
  const clock = s.clock!;
  const clockDue = () => untilMs !== null && clock.nowMs >= untilMs;
  const realDue = () => realUntilMs !== null && Date.now() >= realUntilMs;
  for (;;) {
    s.ageBounded ||= patched(SUBSCRIPTION_RUN_AGE);
    await handOverIfLong(s);
    if (s.cancel || wake() || clockDue() || realDue()) return;
    const done = () => s.cancel !== null || wake() || clockDue() || runIsLong(s) || s.handOverAsked;
    const deadlineMs = Math.min(realUntilMs ?? Infinity, runAgeBoundMs(s));
    s.clockWait = { untilMs, idle };
    try {
      await condition(done, Math.max(deadlineMs - Date.now(), 1));
    } finally {
      s.clockWait = null;
    }
    if (s.cancel || wake() || clockDue() || realDue()) return;
  }
}

/**
 * Continue-as-new when the run is long, at a wait, where the state object says everything:
 * a waiting first-outcome Update answers, background sends get a moment to finish (what is left
 * is resent by the next run), every handler has finished. A cancellation arriving meanwhile is
 * handled first (this run then ends), never carried over half-done.
 */
async function handOverIfLong(s: SubscriptionState): Promise<void> {
  if (!runIsLong(s) || s.cancel) return;
  s.closing = true;
  await condition(() => s.cancel !== null || (s.pendingSends === 0 && allHandlersFinished()), SEND_DRAIN_MS);
  await condition(() => s.cancel !== null || allHandlersFinished());
  if (s.cancel) {
    s.closing = false;
    return;
  }
  const next: SubscriptionWorkflowInput = { ...s.input, resume: cursorOf(s) };
  await continueAsNew<(input: SubscriptionWorkflowInput) => Promise<unknown>>(next);
}
