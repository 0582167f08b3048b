import { patched } from '@temporalio/workflow';
import type { ChargeOutcome } from '../../activities/subscriptions';
import { PROVIDER_FAILURE } from '../failures';
import { SUBSCRIPTION_STUCK } from '../patches';
import type { Collection } from '../subscriptionApi';
import { markStuck, stuckAfterMs, stuckMark, untilKnown, type UntilKnownOptions } from '../untilKnown';
import type { SubscriptionState } from './state';
import { waitUntilReal } from './waits';

type Questions = Parameters<Parameters<typeof untilKnown>[0]>[0];
type Undecided = NonNullable<Collection['undecided']>;

/**
 * Never fail closed, subscriptions (issue 42 item 6; decision 0062): how the subscription's
 * provider questions are asked, and when its run is marked `Stuck` (workflows/untilKnown.ts).
 *
 * A question (an attempt's reconciliation or cancellation, the card authorization's and the card
 * update's checks and closes) is asked as patiently as before, but a call is bounded by
 * `stuckAfterSeconds`: past it, the run is marked `Stuck` (the failure's type) and the question
 * asked again, the mark cleared once it is answered (SUBSCRIPTION_STUCK). An answer that is not
 * one the code knows (`known` false: a charge answered with a status nobody knows) leaves the
 * mark to the caller.
 */
export function ask<T>(
  s: SubscriptionState,
  question: (q: Questions) => Promise<T>,
  known?: (answer: T) => boolean,
): Promise<T> {
  const options: UntilKnownOptions<T> = { patchId: SUBSCRIPTION_STUCK, ...(known ? { known } : {}) };
  return untilKnown(question, s.input.stuckAfterSeconds, undefined, options);
}

/**
 * Why an answer about an attempt is one the code cannot go by (a status nobody knows:
 * `invalid_response`; a status it does not settle on, e.g. `pending`, `canceled`: that status),
 * or null: decided, or a wait the code knows (`requires_action`, `processing`: decision 0060).
 */
export function unknownAnswer(o: ChargeOutcome): string | null {
  if (o.kind !== 'undecided' || o.waiting) return null;
  if (o.status === 'processing' || o.status === 'requires_action') return null;
  return o.status === 'unknown' ? PROVIDER_FAILURE.invalidResponse : o.status;
}

/** What became of an attempt, asked by its key (a charge answered `unknownAnswer` is not known). */
export const reconcileCharge = (s: SubscriptionState, request: Undecided['request']) =>
  ask(
    s,
    (q) => q.reconcileInvoiceCharge(request),
    (o) => unknownAnswer(o) === null,
  );

/**
 * An attempt just answered undecided (`u`, replacing `previous`): an answer the code cannot go by
 * starts (or, about the same attempt, goes on) the time it has gone without one; past
 * `stuckAfterSeconds`, or with the run marked already (a question before it went unanswered
 * that long), the run is marked with its reason. A known wait clears the mark. Runs that began
 * before SUBSCRIPTION_STUCK and never got such an answer under it keep polling unmarked.
 */
export function trackUndecided(
  s: SubscriptionState,
  u: Undecided,
  previous: Undecided | undefined,
  outcome: ChargeOutcome,
): void {
  const reason = unknownAnswer(outcome);
  const since = previous?.request.attempt === u.request.attempt ? previous.unansweredSinceMs : undefined;
  if (reason === null) {
    delete u.unansweredSinceMs;
    delete u.unanswered;
    markStuck(null);
    return;
  }
  if (since === undefined && !patched(SUBSCRIPTION_STUCK)) return;
  u.unansweredSinceMs = since ?? Date.now();
  u.unanswered = reason;
  if (stuckMark() !== null || Date.now() >= stuckAtMs(s, u)) markStuck(reason);
}

/** When an undecided attempt's run is to be marked stuck (Infinity: not tracked, or marked already). */
export function stuckAtMs(s: SubscriptionState, u: Undecided | undefined): number {
  if (u?.unansweredSinceMs === undefined || stuckMark() !== null) return Infinity;
  return u.unansweredSinceMs + stuckAfterMs(s.input.stuckAfterSeconds);
}

/** Marks the run stuck if an undecided attempt's time is up. */
export function markIfDue(s: SubscriptionState, u: Undecided | undefined): void {
  if (u?.unanswered !== undefined && Date.now() >= stuckAtMs(s, u)) markStuck(u.unanswered);
}

/**
 * Waits until `atMs`, real time (as waitUntilReal: false when cancelled), marking the run stuck on the way
 * when the undecided attempt's time is up first.
 */
export async function waitUnanswered(s: SubscriptionState, u: Undecided, atMs: number): Promise<boolean> {
  const stuckAt = stuckAtMs(s, u);
  if (stuckAt < atMs) {
    if (!(await waitUntilReal(s, stuckAt))) return false;
    markIfDue(s, u);
  }
  return waitUntilReal(s, atMs);
}

/** The question is answered (decided, cancelled, a known wait): the mark goes. */
export const answered = (): void => markStuck(null);
