import { allHandlersFinished, condition, continueAsNew, workflowInfo } from '@temporalio/workflow';
import type { SubscriptionWorkflowInput } from '../subscriptionApi';
import { cursorOf, type SubscriptionState } from './state';

/** How long a run about to continue as new lets its background sends finish. */
const SEND_DRAIN_MS = 30_000;

/** The run is long enough to hand over to a new one (our bound, or the server's suggestion). */
export function runIsLong(s: SubscriptionState): boolean {
  const info = workflowInfo();
  return info.continueAsNewSuggested || info.historyLength >= s.historyLimit;
}

/**
 * Every wait of the workflow goes through here, so every loop is bounded: before waiting, a long
 * run continues as new (carrying the state); while waiting, a run that grows long (signals,
 * Updates) wakes up and does the same. Returns when `untilMs` passes (null: no deadline), `wake()`
 * holds, or a cancellation arrives; the caller looks at which.
 */
export async function waitFor(s: SubscriptionState, wake: () => boolean, untilMs: number | null): Promise<void> {
  for (;;) {
    await handOverIfLong(s);
    if (s.cancel || wake()) return;
    const done = () => s.cancel !== null || wake() || runIsLong(s);
    if (untilMs === null) {
      await condition(done);
    } else {
      const ms = untilMs - Date.now();
      if (ms <= 0) return;
      await condition(done, ms);
    }
    if (s.cancel || !runIsLong(s)) return;
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
