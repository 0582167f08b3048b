import { retryDelayMillis, retryScheduleTotalMillis, type Plan } from './subscriptionPlan';

/**
 * An invoice's collection as pure rules: the request of each charge attempt (the workflow's, and
 * the sweeper's when it takes a lost run's collection up again: one derivation, decision 0061),
 * and where a collection stands from what PostgreSQL holds.
 */

export interface ChargeRequest {
  invoiceId: string;
  /** 1-based attempt number on this invoice; picks the provider idempotency key. */
  attempt: number;
  /** Delay to the next attempt if this one is declined; null when it is the last. */
  retryDelayMs: number | null;
  /** The subscription's very first charge (token flow): a refused token discards it. */
  discardOnReject: boolean;
  /**
   * The customer is present: the first attempt of the first invoice. Every other attempt (a
   * renewal, a retry) is an off-session charge. Absent (runs of older code): off-session.
   */
  onSession?: boolean;
  /**
   * How long an attempt answered `requires_action` waits for the customer (the retry schedule's
   * total): the deadline its email names. Absent (older runs): none named.
   */
  authenticationWaitMs?: number;
  /**
   * On a test clock: the clock's time when the attempt is made (decision 0090): the attempt's
   * dates and its next attempt's are clock time. Absent: real time.
   */
  atMs?: number;
}

/** An invoice being collected (charged, retried on declines, or waiting for the provider). */
export interface Collection {
  invoiceId: string;
  /** Attempts made (declined or paid) on this invoice. */
  attempts: number;
  /** When the next attempt is due, epoch milliseconds. */
  nextAttemptAtMs: number;
  /** Consecutive tries the provider was unreachable for (the backoff grows with it). */
  unavailableStreak: number;
  /** The subscription's very first period: its outcome is the create's answer. */
  first: boolean;
  /**
   * Attempts made before the retry schedule last restarted (a new card charged at once): the
   * next delay is the schedule's entry for the attempts since. Absent: 0.
   */
  retryBase?: number;
  /**
   * A hard decline: no retry with that card; the collection waits for a new card until then
   * (epoch ms), and cancels after (SUBSCRIPTION_HARD_DECLINES).
   */
  newCardByMs?: number;
  /**
   * An attempt the provider has not decided: asked about again by its key (no other attempt
   * starts), `polls` times so far (SUBSCRIPTION_UNDECIDED_CHARGE).
   */
  undecided?: {
    request: ChargeRequest;
    polls: number;
    /**
     * The invoice shows the wait (SUBSCRIPTION_INVOICE_WAITS): the customer authenticates, or
     * the processor decides later. `sinceMs`: when the attempt asked for authentication (the
     * reminders and the deadline count from it); `reminders`: reminder emails sent so far.
     */
    waiting?: 'requires_action' | 'processing';
    sinceMs?: number;
    reminders?: number;
    /**
     * Answered something the code cannot go by (SUBSCRIPTION_STUCK; decision 0062): since when
     * (epoch ms, the attempt's first such answer) and why (`invalid_response`, or the status);
     * past `stuckAfterSeconds` the run is marked `Stuck`.
     */
    unansweredSinceMs?: number;
    unanswered?: string;
  };
}

/** What a collection's requests depend on, besides where it stands. */
export interface CollectionTerms {
  plan: Plan;
  billingDaySeconds: number;
  /** The subscription began without a card (hosted authorization): its first charge is never discarded. */
  needsAuthorization: boolean;
}

/**
 * The attempt after `attempts` made on an invoice: its key (invoice and attempt), its delay if
 * declined, whether a refusal discards the subscription, whether the customer is present. The
 * same inputs always give the same request: the provider sees the same call under the same key.
 */
export function chargeRequestOf(
  terms: CollectionTerms,
  c: Pick<Collection, 'invoiceId' | 'attempts' | 'first' | 'retryBase'>,
): ChargeRequest {
  const { plan, billingDaySeconds, needsAuthorization } = terms;
  return {
    invoiceId: c.invoiceId,
    attempt: c.attempts + 1,
    retryDelayMs: retryDelayMillis(plan, c.attempts + 1 - (c.retryBase ?? 0), billingDaySeconds),
    discardOnReject: c.first && c.attempts === 0 && !needsAuthorization,
    onSession: c.first && c.attempts === 0,
    authenticationWaitMs: retryScheduleTotalMillis(plan, billingDaySeconds),
  };
}

/** A live subscription and its latest invoice as PostgreSQL holds them (the sweeper reads them). */
export interface SubscriptionRecordForRevival {
  status: 'created' | 'pending' | 'active' | 'past_due' | 'cancelled';
  /** Set by a hosted card authorization (or a later card-update page). */
  setupTransactionId: string | null;
  /** A card is on file (the merchant's token, or the one the hosted authorization saved). */
  hasCard: boolean;
  /** The subscription's last change (a hosted authorization's page recorded, while `pending`). */
  updatedAtMs: number;
  /** The latest period's invoice (none yet: null). */
  invoice: {
    id: string;
    periodIndex: number;
    periodStartMs: number;
    periodEndMs: number;
    status: 'open' | 'requires_action' | 'processing' | 'paid' | 'void' | 'uncollectible';
    /** Attempts recorded (decided, or released for a new card). */
    attempts: number;
    declineType: 'hard' | 'soft' | null;
    nextAttemptAtMs: number | null;
    /** An attempt's call was sent and its outcome is not recorded. */
    callSent: boolean;
    /** The invoice's last change: a decline's, or the wait's record (epoch ms). */
    updatedAtMs: number;
  } | null;
  /**
   * Dedupe keys of the emails recorded for this invoice's waiting attempt
   * (`<subscriptionId>:email:action_required:<invoiceId>:<attempt>:<reminder>`).
   */
  actionRequiredEmailKeys: string[];
  /** A DELETE recorded and not applied yet (decision 0076): a revived run takes it first. */
  cancelRequest?: { reason: string; notify: boolean } | null;
}

/**
 * Where a lost run is taken up (decision 0061): the subscription's status, the period being billed
 * (or next to bill) and, while its invoice is being collected, the collection rebuilt from the
 * record. Null: no run can be resumed from here (an operator looks).
 */
export type RevivedCursor = {
  status: 'pending' | 'active' | 'past_due';
  periodIndex: number;
  periodStartMs: number;
  collection?: Collection;
  /** Still waiting for the customer to authorize a card on the hosted page (no period billed yet). */
  authorization?: { expiresAtMs: number | null };
  /** The input's: the first attempt's request depends on it. */
  needsAuthorization?: boolean;
};

/** Where a live subscription is taken up: `created` starts over; any other, a cursor. */
export type SubscriptionRevival = { status: 'created' } | RevivedCursor;

/**
 * The collection of an invoice as the record shows it (decision 0061):
 * - `processing` / `requires_action`: that attempt (the one after those recorded) is undecided and
 *   waits; the new run asks the processor about it by its key, the same request, and never
 *   charges another meanwhile. An authentication wait keeps its start (the invoice's last change:
 *   the wait's record) and its reminders (the emails recorded);
 * - open with a call sent and no outcome recorded: that attempt is in doubt: undecided, asked about;
 * - open, nothing attempted: the first attempt, now;
 * - a hard decline: the wait for a new card, until the schedule's total from the declined attempt;
 * - a soft decline with a next attempt: that date; the schedule's position read from the recorded
 *   delay (a new card charged at once restarts it);
 * - a soft decline without one: the schedule ran out (the lost run did not cancel yet): a wait for
 *   a new card that is over, so the new run cancels (payment_failed) as the lost one would have;
 * - an attempt released for a new card (authentication cancelled at the processor): the new card
 *   charged now, the schedule restarted from it.
 */
export function collectionOf(
  invoice: NonNullable<SubscriptionRecordForRevival['invoice']>,
  actionRequiredEmailKeys: string[],
  terms: CollectionTerms,
  nowMs: number,
): Collection {
  const first = invoice.periodIndex === 0;
  const base = { invoiceId: invoice.id, attempts: invoice.attempts, unavailableStreak: 0, first };
  const retryBase = retryBaseOf(invoice, terms);
  const request = () => chargeRequestOf(terms, { ...base, ...(retryBase ? { retryBase } : {}) });
  const withBase = retryBase ? { retryBase } : {};
  if (invoice.status === 'processing') {
    return {
      ...base,
      ...withBase,
      nextAttemptAtMs: nowMs,
      undecided: { request: request(), polls: 1, waiting: 'processing' },
    };
  }
  if (invoice.status === 'requires_action') {
    return {
      ...base,
      ...withBase,
      nextAttemptAtMs: nowMs,
      undecided: {
        request: request(),
        polls: 1,
        waiting: 'requires_action',
        sinceMs: invoice.updatedAtMs,
        reminders: remindersSent(actionRequiredEmailKeys, invoice.attempts + 1),
      },
    };
  }
  if (invoice.callSent) {
    return { ...base, ...withBase, nextAttemptAtMs: nowMs, undecided: { request: request(), polls: 0 } };
  }
  if (invoice.attempts === 0) return { ...base, nextAttemptAtMs: nowMs };
  if (invoice.declineType === 'hard') {
    const newCardByMs = invoice.updatedAtMs + retryScheduleTotalMillis(terms.plan, terms.billingDaySeconds);
    return { ...base, ...withBase, nextAttemptAtMs: newCardByMs, newCardByMs };
  }
  if (invoice.declineType === 'soft') {
    if (invoice.nextAttemptAtMs !== null) return { ...base, ...withBase, nextAttemptAtMs: invoice.nextAttemptAtMs };
    return { ...base, ...withBase, nextAttemptAtMs: invoice.updatedAtMs, newCardByMs: invoice.updatedAtMs };
  }
  return { ...base, retryBase: invoice.attempts, nextAttemptAtMs: nowMs };
}

/**
 * Attempts made before the retry schedule last restarted. A soft decline recorded its next date
 * from its own time (`nextAttemptAt - updatedAt` is the delay it was given): the schedule's
 * position that gave it, preferring none restarted (0). Unknown otherwise: 0.
 */
function retryBaseOf(
  invoice: NonNullable<SubscriptionRecordForRevival['invoice']>,
  { plan, billingDaySeconds }: CollectionTerms,
): number {
  if (invoice.status !== 'open' || invoice.declineType !== 'soft' || invoice.nextAttemptAtMs === null) return 0;
  const delay = invoice.nextAttemptAtMs - invoice.updatedAtMs;
  for (let since = invoice.attempts; since >= 1; since--) {
    if (retryDelayMillis(plan, since, billingDaySeconds) === delay) return invoice.attempts - since;
  }
  return 0;
}

/** The reminders recorded for one attempt's authentication (the first email is reminder 0). */
function remindersSent(keys: string[], attempt: number): number {
  let most = 0;
  for (const key of keys) {
    const parts = key.split(':');
    const [n, a] = [Number(parts[parts.length - 1]), Number(parts[parts.length - 2])];
    if (a === attempt && Number.isInteger(n) && n > most) most = n;
  }
  return most;
}

/**
 * Where a live subscription whose workflow ended is taken up (decision 0059, widened by 0061):
 * `created` starts over; `active` with its latest invoice paid waits for the next period; a
 * latest invoice being collected (`open`, `requires_action`, `processing`; the subscription
 * `pending`, `active` or `past_due`) is collected on from where the record shows it; a `pending`
 * one without an invoice waits on for its hosted card authorization (authorizationOf). Null: a
 * record this code does not expect (an operator looks).
 */
export function subscriptionRevivalOf(
  record: SubscriptionRecordForRevival,
  terms: Omit<CollectionTerms, 'needsAuthorization'> & { authorizationExpirySeconds: number },
  nowMs: number,
): SubscriptionRevival | null {
  if (record.status === 'created') return { status: 'created' };
  const { invoice } = record;
  if (record.status === 'cancelled') return null;
  if (!invoice)
    return record.status === 'pending' ? authorizationOf(record, terms.authorizationExpirySeconds, nowMs) : null;
  if (invoice.status === 'paid') {
    if (record.status !== 'active') return null;
    return { status: 'active', periodIndex: invoice.periodIndex + 1, periodStartMs: invoice.periodEndMs };
  }
  if (invoice.status !== 'open' && invoice.status !== 'requires_action' && invoice.status !== 'processing') return null;
  // Only the first attempt of the first invoice depends on it: a hosted authorization's card is
  // never discarded on a refusal (its page is the record's only setup then).
  const needsAuthorization = record.setupTransactionId !== null;
  return {
    status: record.status,
    periodIndex: invoice.periodIndex,
    periodStartMs: invoice.periodStartMs,
    collection: collectionOf(invoice, record.actionRequiredEmailKeys, { ...terms, needsAuthorization }, nowMs),
    needsAuthorization,
  };
}

/**
 * A `pending` subscription without an invoice: its hosted card authorization. Its page recorded
 * (`setup_transaction_id`, with the subscription's last change): the customer is waited for until
 * that change plus the authorization's expiry, as the lost run did (it set the expiry right after
 * recording the page); the card saved already: billing begins now (the first invoice and its
 * on-session charge, never discarded). No page recorded: requested again (the subscription's id
 * is its key, so the same page).
 */
function authorizationOf(
  record: SubscriptionRecordForRevival,
  authorizationExpirySeconds: number,
  nowMs: number,
): RevivedCursor {
  const base = { status: 'pending' as const, periodIndex: 0, needsAuthorization: true };
  if (record.hasCard) return { ...base, periodStartMs: nowMs };
  const expiresAtMs =
    record.setupTransactionId === null ? null : record.updatedAtMs + authorizationExpirySeconds * 1000;
  return { ...base, periodStartMs: 0, authorization: { expiresAtMs } };
}
