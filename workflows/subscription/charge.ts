import { condition, log, patched } from '@temporalio/workflow';
import type { ChargeOutcome, ChargeRequest, PeriodInvoiceInput } from '../../activities/subscriptions';
import type { OpenedInvoice } from '../../activities/subscriptions';
import { retryScheduleTotalMillis } from '../../src/rules/subscriptionPlan';
import { chargeRequestOf } from '../../src/rules/subscriptionCollection';
import { failureType, outcomeOfFailure, PROVIDER_FAILURE, PROVIDER_OUTCOME } from '../failures';
import {
  CUSTOMER_CHARGE_DEFAULT,
  RENEWAL_CHARGE_LOCAL,
  SUBSCRIPTION_HARD_DECLINES,
  SUBSCRIPTION_INVOICE_WAITS,
  SUBSCRIPTION_UNDECIDED_CANCEL,
  SUBSCRIPTION_UNDECIDED_CHARGE,
  SUBSCRIPTION_UNDECIDED_NOT_FOUND,
} from '../patches';
import { commitBeforeProviderCall, localAttempts, remoteAttempts } from '../providerActivities';
import type { Collection } from '../subscriptionApi';
import { attempts, openInvoice, records } from './activities';
import { answered, ask, markIfDue, reconcileCharge, stuckAtMs, trackUndecided, waitUnanswered } from './stuck';
import { openCardPageUntil } from './card';
import { follow } from './outbox';
import { customerCardsRead, nowMs, type SubscriptionState } from './state';
import { waitFor, waitForEither, waitUntilReal } from './waits';

/** While the provider is unreachable (nothing charged): wait, then try the same attempt again. */
export const unavailableBackoffMs = (streak: number) => Math.min(10_000 * 2 ** (streak - 1), 600_000);

export type CollectionResult = 'paid' | 'exhausted' | 'cancel' | 'discarded';

/**
 * Collects the period's invoice: the first attempt when due, then along the retry schedule while
 * declined. The next attempt starts only once the previous one is known declined (each has its
 * own idempotency key), so at most one attempt of an invoice can capture.
 */
export async function collect(s: SubscriptionState, made?: MadeAttempt): Promise<CollectionResult> {
  try {
    const result = await collectInvoice(s, made);
    // The collection is over (paid, exhausted, cancelled, discarded): nothing is unanswered.
    answered();
    return result;
  } finally {
    // A charge at once asked for this invoice is over with it.
    s.cardCharge = null;
  }
}

/** An attempt made before the collection began (with the opening of its invoice), and its outcome. */
export interface MadeAttempt {
  request: ChargeRequest;
  outcome: ChargeOutcome | 'try_later';
}

/** The attempt after `attempts` made (its key, its delay if declined): the one pure derivation. */
const nextRequest = (
  s: SubscriptionState,
  c: Pick<Collection, 'invoiceId' | 'attempts' | 'first' | 'retryBase'>,
): ChargeRequest => {
  const request = chargeRequestOf(s.input, c);
  // On a test clock the attempt's dates are the clock's (decision 0090).
  return s.clock ? { ...request, atMs: s.clock.nowMs } : request;
};

async function collectInvoice(s: SubscriptionState, made?: MadeAttempt): Promise<CollectionResult> {
  const c = s.collection!;
  for (;;) {
    let request: ChargeRequest;
    let outcome: ChargeOutcome | 'try_later';
    if (made) {
      ({ request, outcome } = made);
      made = undefined;
    } else if (c.undecided?.waiting) {
      // The invoice shows the wait (SUBSCRIPTION_INVOICE_WAITS): see awaitDecision.
      const next = await awaitDecision(s, c);
      if (next === 'again') continue;
      if (typeof next === 'string') return next;
      request = c.undecided.request;
      outcome = next.outcome;
    } else if (c.undecided) {
      // The provider has not decided this attempt: ask again about it (its key), nothing else.
      // Unanswered for long: the run is marked stuck on the way (SUBSCRIPTION_STUCK).
      if (!(await waitUnanswered(s, c.undecided, c.nextAttemptAtMs))) {
        // A DELETE: the attempt may still capture (e.g. a customer authenticating it), so it is
        // cancelled at the processor first; what the processor answers wins (SUBSCRIPTION_UNDECIDED_CANCEL).
        if (patched(SUBSCRIPTION_UNDECIDED_CANCEL)) await cancelUndecidedAttempt(s, c.undecided);
        return 'cancel';
      }
      request = c.undecided.request;
      outcome = await reconcileCharge(s, request);
      // Never received (an attempt in doubt a revived run took up, decision 0061): the same
      // attempt, its key, after a pause; never discarded for it.
      if (outcome.kind === 'not_found' && patched(SUBSCRIPTION_UNDECIDED_NOT_FOUND)) {
        delete c.undecided;
        outcome = 'try_later';
      }
    } else {
      // A new card (past_due) wakes the wait: the next attempt is made now, and the retry
      // schedule restarts from it (it only matters if this attempt is declined too). After a
      // hard decline the wait is for a new card only, until the schedule's total has passed; a
      // new card of the subscription's customer ends it too (CUSTOMER_CHARGE_DEFAULT).
      const customerCard = () => c.newCardByMs !== undefined && s.customerCards.length > 0;
      await waitFor(s, () => s.cardCharge === 'requested' || customerCard(), c.newCardByMs ?? c.nextAttemptAtMs);
      if (s.cancel) return 'cancel';
      if (s.cardCharge !== 'requested' && customerCard() && patched(CUSTOMER_CHARGE_DEFAULT)) {
        // The customer's card is charged as a merchant's new card would be; the hosted page
        // opened for the wait is superseded (its watcher closes it).
        s.cardUpdate = null;
        s.cardCharge = 'requested';
      }
      if (s.cardCharge === 'requested') {
        s.cardCharge = 'charging';
        c.retryBase = c.attempts;
        delete c.newCardByMs;
      } else if (c.newCardByMs !== undefined) {
        return 'exhausted';
      }
      request = nextRequest(s, c);
      customerCardsRead(s);
      outcome = await chargeOnce(s, c.first, request);
    }
    if (outcome === 'try_later') {
      c.unavailableStreak++;
      if (s.clock) {
        // On a test clock the backoff is real time, and the attempt is due again at once on the
        // clock (decision 0090): the advance waits for it.
        if (!(await waitUntilReal(s, Date.now() + unavailableBackoffMs(c.unavailableStreak)))) return 'cancel';
        c.nextAttemptAtMs = nowMs(s);
        continue;
      }
      c.nextAttemptAtMs = Date.now() + unavailableBackoffMs(c.unavailableStreak);
      continue;
    }
    if (s.cardCharge === 'charging') s.cardCharge = null;
    c.unavailableStreak = 0;
    if (outcome.kind === 'undecided') {
      patched(SUBSCRIPTION_UNDECIDED_CHARGE);
      const waiting = outcome.waiting && patched(SUBSCRIPTION_INVOICE_WAITS) ? outcome.waiting : undefined;
      // The wait recorded: the subscription's status (past_due, or pending for a first charge
      // processing) is the create's answer, with the email and events.
      if (waiting) follow(s, outcome.outbox);
      // The create's answer: the outcome will follow (the subscription stays where it is).
      if (c.first) s.firstOutcome ??= { kind: PROVIDER_OUTCOME.invalid };
      const previous = c.undecided;
      const polls = (previous?.polls ?? 0) + 1;
      c.undecided = { request, polls };
      // An answer nobody can read about an attempt the invoice shows waiting: still that wait
      // (its reminders, its deadline, its cancellation at the processor), never a plain poll.
      const stillWaiting =
        !waiting &&
        previous?.waiting !== undefined &&
        previous.request.attempt === request.attempt &&
        patched(SUBSCRIPTION_UNDECIDED_CANCEL);
      if (stillWaiting) {
        c.undecided.waiting = previous.waiting;
        c.undecided.sinceMs = previous.sinceMs;
        c.undecided.reminders = previous.reminders;
      } else if (waiting) {
        // The authentication's reminders and deadline count from the attempt that asked.
        const same = previous?.waiting === 'requires_action' && previous.request.attempt === request.attempt;
        c.undecided.waiting = waiting;
        c.undecided.sinceMs = same ? previous.sinceMs : nowMs(s);
        c.undecided.reminders = same ? previous.reminders : 0;
        // A new card during `processing` only replaces the card: nothing is charged at once.
        if (waiting === 'processing' && s.cardCharge !== null) s.cardCharge = null;
      }
      // An answer the code cannot go by, unanswered for long: the run marked stuck (0062).
      trackUndecided(s, c.undecided, previous, outcome);
      c.nextAttemptAtMs = Date.now() + undecidedBackoffMs(polls);
      log.info('charge not decided by the provider; asking again later', {
        invoiceId: request.invoiceId,
        attempt: request.attempt,
        status: outcome.status,
        polls,
      });
      continue;
    }
    delete c.undecided;
    answered();
    switch (outcome.kind) {
      case 'paid':
        follow(s, outcome.outbox);
        c.attempts = request.attempt;
        return 'paid';
      case 'declined':
        follow(s, outcome.outbox);
        c.attempts = request.attempt;
        if (outcome.declineType === 'hard' && patched(SUBSCRIPTION_HARD_DECLINES)) {
          await askForNewCard(s, c);
          break;
        }
        if (outcome.nextAttemptAt === null) return 'exhausted';
        c.nextAttemptAtMs = Date.parse(outcome.nextAttemptAt);
        break;
      case 'void':
        follow(s, outcome.outbox);
        return 'cancel';
      case 'rejected':
        s.firstOutcome = { kind: 'rejected', code: outcome.code, message: outcome.message };
        return 'discarded';
      case 'missing':
      case 'not_found':
        return 'discarded';
    }
  }
}

/**
 * An attempt the invoice shows waiting (decision 0060), until something happens:
 * - a webhook about it, or its poll (10 s doubling to daily): the attempt is asked about;
 * - `requires_action`: a DELETE, a new card or the retry schedule's total from the attempt that
 *   asked cancel it at the processor first (what the processor answers wins: a capture just
 *   before pays the invoice); each earlier date of the schedule sends a reminder instead of a retry;
 * - `processing`: a DELETE ends the collection; the invoice waits on after the cancellation (finish).
 * Answers an outcome to record, `again` (look again), or how the collection ends.
 */
async function awaitDecision(
  s: SubscriptionState,
  c: Collection,
): Promise<{ outcome: ChargeOutcome | 'try_later' } | CollectionResult | 'again'> {
  const u = c.undecided!;
  const { plan, billingDaySeconds, subscriptionId } = s.input;
  const auth = u.waiting === 'requires_action';
  const deadlineMs = auth ? (u.sinceMs ?? 0) + retryScheduleTotalMillis(plan, billingDaySeconds) : Infinity;
  const reminderMs = auth ? reminderDateMs(s, u.sinceMs ?? 0, (u.reminders ?? 0) + 1) : Infinity;
  const newCard = () => auth && s.cardCharge === 'requested';
  // An unreadable answer about the waiting attempt, unanswered for long: marked on the way (0062).
  const stuckAt = stuckAtMs(s, u);
  // The authentication's reminders and deadline are the subscription's time (a test clock's on a
  // clock); the polls and the stuck mark real time. Waiting for the customer lets a clock move on.
  await waitForEither(
    s,
    () => s.invoiceEvent || newCard(),
    Math.min(deadlineMs, reminderMs),
    Math.min(c.nextAttemptAtMs, stuckAt),
    auth,
  );
  if (s.cancel) {
    if (!auth) return 'cancel';
    // The attempt first: the cancellation then voids the invoice (unless it was captured first).
    const ended = await cancelAttempt(s, { request: u.request, release: false });
    if (ended.kind === 'undecided' && ended.waiting === 'processing') u.waiting = 'processing';
    else if ('outbox' in ended) follow(s, ended.outbox);
    return 'cancel';
  }
  if (newCard() || (auth && nowMs(s) >= deadlineMs)) {
    // A new card: the attempt over, the new card charged next (a key of its own). The deadline:
    // cancelled (payment_failed), the invoice uncollectible. Captured first: the invoice is paid.
    const release = newCard();
    const ended = await cancelAttempt(s, { request: u.request, release });
    if (ended.kind !== 'canceled') return { outcome: ended };
    if (!release) return 'exhausted';
    c.attempts = u.request.attempt;
    delete c.undecided;
    c.nextAttemptAtMs = nowMs(s);
    return 'again';
  }
  if (Date.now() >= stuckAt) markIfDue(s, u);
  if (auth && nowMs(s) >= reminderMs) {
    u.reminders = (u.reminders ?? 0) + 1;
    const outbox = await records.remindInvoiceAuthentication({
      subscriptionId,
      invoiceId: u.request.invoiceId,
      attempt: u.request.attempt,
      reminder: u.reminders,
      cancelAt: new Date(deadlineMs).toISOString(),
    });
    follow(s, outbox);
    return 'again';
  }
  if (!s.invoiceEvent && Date.now() < c.nextAttemptAtMs) return 'again';
  s.invoiceEvent = false;
  return { outcome: await reconcileCharge(s, u.request) };
}

/**
 * The n-th date of the retry schedule from `sinceMs` (1-based; Infinity when it is the schedule's
 * last date, which is the deadline itself, or past it).
 */
function reminderDateMs(s: SubscriptionState, sinceMs: number, n: number): number {
  const days = s.input.plan.retryScheduleDays;
  if (n >= days.length) return Infinity;
  const sum = days.slice(0, n).reduce((total, d) => total + d, 0);
  return sinceMs + sum * s.input.billingDaySeconds * 1000;
}

/**
 * A DELETE while the processor has not decided an attempt: cancelled there first. Captured (or
 * failed) just before: recorded so; `processing`: the invoice waits on after the cancellation
 * (settleAfterCancel); cancelled or never found: the cancellation voids the invoice.
 */
async function cancelUndecidedAttempt(s: SubscriptionState, u: NonNullable<Collection['undecided']>): Promise<void> {
  const ended = await cancelAttempt(s, { request: u.request, release: false });
  if (ended.kind === 'undecided' && ended.waiting === 'processing') u.waiting = 'processing';
  else if ('outbox' in ended) follow(s, ended.outbox);
}

/**
 * After a DELETE, an invoice `processing` stays so until the processor decides: its webhook, else
 * the same polls. A capture then counts (the invoice paid, the subscription stays cancelled); a
 * failure voids it.
 */
export async function settleAfterCancel(s: SubscriptionState): Promise<void> {
  const c = s.collection;
  const u = c?.undecided;
  if (!c || u?.waiting !== 'processing') return;
  for (;;) {
    const ms = c.nextAttemptAtMs - Date.now();
    if (ms > 0 && !s.invoiceEvent) await condition(() => s.invoiceEvent, ms);
    s.invoiceEvent = false;
    const outcome = await reconcileCharge(s, u.request);
    if (outcome.kind !== 'undecided') {
      if ('outbox' in outcome) follow(s, outcome.outbox);
      break;
    }
    // Still `processing` (a wait the code knows), or an unreadable answer: marked once unanswered long.
    trackUndecided(s, u, u, outcome);
    u.polls++;
    c.nextAttemptAtMs = Date.now() + undecidedBackoffMs(u.polls);
  }
  answered();
  s.collection = null;
}

/** Asking the provider again about an undecided attempt: 10 s, doubling, at most daily. */
export const undecidedBackoffMs = (polls: number) => Math.min(10_000 * 2 ** Math.min(polls - 1, 20), 86_400_000);

/**
 * A hard decline: never retried with that card. The customer is asked for a new card (a hosted
 * card update opened for it, its link in the email) until the retry schedule's total has passed
 * from this attempt; a new card (a merchant's token, or the page completed) is charged at once.
 */
async function askForNewCard(s: SubscriptionState, c: Collection): Promise<void> {
  const { plan, billingDaySeconds, subscriptionId } = s.input;
  const waitMs = retryScheduleTotalMillis(plan, billingDaySeconds);
  const cancelAtMs = nowMs(s) + waitMs;
  c.newCardByMs = cancelAtMs;
  // A new card on its way already (a merchant's update, a new card of the customer signalled while
  // this attempt ran): it is charged next, nothing to ask. No retries at all in the plan
  // (`retryScheduleDays: []`): nothing to wait for, cancelled at once.
  const customerCard = () => s.customerCards.length > 0 && patched(CUSTOMER_CHARGE_DEFAULT);
  const newCardComing = () => s.cardCharge === 'requested' || s.cancel !== null || customerCard();
  if (newCardComing() || waitMs === 0) return;
  const withLink = await openCardPageUntil(s, cancelAtMs);
  if (newCardComing()) return;
  const outbox = await records.requestNewCard({
    subscriptionId,
    invoiceId: c.invoiceId,
    attempt: c.attempts,
    withLink,
    cancelAt: new Date(cancelAtMs).toISOString(),
  });
  if (outbox) follow(s, outbox);
}

/**
 * One attempt, its ambiguity resolved: a timeout, a garbled answer or any failure after the
 * provider may have acted is asked about by the attempt's key (before anything else, a
 * cancellation included), never retried blindly. `try_later`: nothing was charged.
 */
async function chargeOnce(
  s: SubscriptionState,
  first: boolean,
  request: ChargeRequest,
): Promise<ChargeOutcome | 'try_later'> {
  // The charge is decided in the history before the provider is asked: a cancellation arriving
  // while the call is under way waits for it, even when the worker dies mid-call.
  const calls = (await commitBeforeProviderCall()) === 'activity' ? remoteAttempts : attempts;
  try {
    return await calls.chargeInvoice(request);
  } catch (err) {
    return afterFailedAttempt(s, first, request, err);
  }
}

/** An attempt that failed: `try_later` when nothing was charged, else what the provider did. */
async function afterFailedAttempt(
  s: SubscriptionState,
  first: boolean,
  request: ChargeRequest,
  err: unknown,
): Promise<ChargeOutcome | 'try_later'> {
  const type = failureType(err);
  if (type === PROVIDER_FAILURE.unavailable) {
    if (first) s.firstOutcome ??= { kind: PROVIDER_OUTCOME.unavailable };
    return 'try_later';
  }
  if (first) s.firstOutcome ??= { kind: outcomeOfFailure(type) };
  log.info('charge outcome unknown; asking the provider', { invoiceId: request.invoiceId, type });
  const found = await reconcileCharge(s, request);
  // not_found: the provider never saw it; the same attempt (same key) after a pause.
  return found.kind === 'not_found' ? 'try_later' : found;
}

/** An attempt cancelled at the processor (asked until it answers; stuck past `stuckAfterSeconds`). */
const cancelAttempt = (s: SubscriptionState, input: { request: ChargeRequest; release: boolean }) =>
  ask(s, (q) => q.cancelInvoiceAttempt(input));

/**
 * A period's invoice opened together with its first attempt (RENEWAL_OPEN_IN_CHARGE): one
 * activity; since RENEWAL_CHARGE_LOCAL a local one in the task the period's timer woke (its cause
 * is in the history; a cancellation taken by a retried task settles a call marked sent first),
 * before that a regular one that this task schedules. If the activity fails, the invoice is
 * opened on its own (found: opening is idempotent) and the attempt settled as any failed attempt:
 * an attempt already recorded is answered from the record, one the provider may have seen is
 * asked about by its key.
 */
export async function openAndCharge(
  s: SubscriptionState,
  period: PeriodInvoiceInput,
): Promise<{ opened: OpenedInvoice; made?: MadeAttempt }> {
  s.opening = true;
  try {
    const result = await openAndChargeOnce(s, period);
    // Nothing to collect (paid, void, cancelled): a charge at once asked meanwhile is over.
    if (result.opened.kind !== 'open') s.cardCharge = null;
    return result;
  } finally {
    s.opening = false;
  }
}

async function openAndChargeOnce(
  s: SubscriptionState,
  period: PeriodInvoiceInput,
): Promise<{ opened: OpenedInvoice; made?: MadeAttempt }> {
  // The attempt reads the customer's cards: those signalled so far are in it.
  customerCardsRead(s);
  const first = s.periodIndex === 0;
  // Attempt 1, or the last one recorded when an invoice already has attempts.
  const requestFor = (invoiceId: string, attempts: number) =>
    nextRequest(s, { invoiceId, attempts: Math.max(1, attempts) - 1, first });
  const planned = requestFor('', 0);
  // Since RENEWAL_CHARGE_LOCAL in the task that woke for the period; before, a regular activity.
  const calls = patched(RENEWAL_CHARGE_LOCAL) ? localAttempts : remoteAttempts;
  try {
    const { opened, charged } = await calls.openAndChargeInvoice({
      period,
      retryDelayMs: planned.retryDelayMs,
      discardOnReject: planned.discardOnReject,
    });
    if (!charged || opened.kind !== 'open') return { opened };
    // The attempt made, or the last one recorded before (the step answered it from the record).
    return { opened, made: { request: requestFor(opened.invoiceId, opened.attempts), outcome: charged } };
  } catch (err) {
    const opened = await openInvoice(period);
    if (opened.kind !== 'open') return { opened };
    const request = requestFor(opened.invoiceId, opened.attempts);
    // Recorded before the failure (e.g. a lost answer): the record says what it came to.
    const outcome =
      opened.attempts > 0 ? await reconcileCharge(s, request) : await afterFailedAttempt(s, first, request, err);
    return { opened, made: { request, outcome } };
  }
}
