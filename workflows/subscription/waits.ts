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
