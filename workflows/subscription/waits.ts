import { allHandlersFinished, condition, makeContinueAsNewFunc, workflowInfo } from '@temporalio/workflow';
import type { SubscriptionWorkflowInput } from '../subscriptionApi';
import { cursorOf, type SubscriptionState } from './state';

/** How long a run about to continue as new lets its background sends finish. */
const SEND_DRAIN_MS = 30_000;
/**
 * The same for a first run moving to the subscription queue: its activation email and receipt
 * usually take milliseconds; with SMTP down, the move does not wait on them for long (the next
 * run sends what is left, each email once).
 */
const MOVE_DRAIN_MS = 2_000;

/** The run is long enough to hand over to a new one (our bound, or the server's suggestion). */
export function runIsLong(s: SubscriptionState): boolean {
  const info = workflowInfo();
  return info.continueAsNewSuggested || info.historyLength >= s.historyLimit;
}

/**
 * A first run started on the main task queue (`moveToTaskQueue`) whose create has its answer: it
 * moves to the subscription queue at its next wait. Before the answer it stays, so the create's
 * Update is answered by this run, not handed over unanswered.
 */
function dueToMove(s: SubscriptionState): boolean {
  return s.input.moveToTaskQueue !== undefined && s.firstOutcome !== null;
}

/**
 * Every wait of the workflow goes through here, so every loop is bounded: before waiting, a long
 * run continues as new (carrying the state), and a first run on the main queue moves to the
 * subscription queue; while waiting, a run that grows long (signals, Updates) wakes up and hands
 * over the same way. Returns when `untilMs` passes (null: no deadline), `wake()` holds, or a
 * cancellation arrives; the caller looks at which.
 */
export async function waitFor(s: SubscriptionState, wake: () => boolean, untilMs: number | null): Promise<void> {
  for (;;) {
    await handOverIfDue(s);
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
 * Continue-as-new when the run is long or due to move, at a wait, where the state object says
 * everything: a waiting first-outcome Update answers, background sends get a moment to finish
 * (what is left is resent by the next run), every handler has finished. A cancellation arriving
 * meanwhile is handled first (this run then ends), never carried over half-done.
 */
async function handOverIfDue(s: SubscriptionState): Promise<void> {
  const moving = dueToMove(s);
  if (!(moving || runIsLong(s)) || s.cancel) return;
  s.closing = true;
  await condition(
    () => s.cancel !== null || (s.pendingSends === 0 && allHandlersFinished()),
    moving ? MOVE_DRAIN_MS : SEND_DRAIN_MS,
  );
  await condition(() => s.cancel !== null || allHandlersFinished());
  if (s.cancel) {
    s.closing = false;
    return;
  }
  const { moveToTaskQueue, ...input } = s.input;
  const next: SubscriptionWorkflowInput = { ...input, resume: cursorOf(s) };
  // The same type, search attributes and memo; the subscription queue when moving.
  const continueOn = makeContinueAsNewFunc<(input: SubscriptionWorkflowInput) => Promise<unknown>>(
    moveToTaskQueue ? { taskQueue: moveToTaskQueue } : {},
  );
  await continueOn(next);
}
