import { patched } from '@temporalio/workflow';

/**
 * Workflow version markers (`patched(id)`). Each id guards a change to workflow code so that
 * histories recorded before it (test/replay/histories) still replay. A patch retires on the
 * calendar of decision 0084: `patched` -> `deprecatePatch` -> removed, each step once no run of
 * its type started before the previous step can still be open (a subscription run hands over at
 * 30 billing days, `workflows:hand-over` at once; sweeps last 10 minutes).
 */

/** Provider attempts as local activities; no event lookup when there is no callbackUrl. */
export const LOCAL_PROVIDER_ATTEMPT = 'local-provider-attempt-v1';

/**
 * The frozen legacy subscription workflow (workflows/subscription/legacy.ts) waits for its Update
 * handlers (`condition(allHandlersFinished)`) in `finish()` and before continuing as new. Its
 * histories recorded before awaited the boolean `allHandlersFinished()` there (a no-op); the wait
 * was added without a patch when the file was frozen (fd55be4; issue 44 item 2, decision 0082).
 */
export const LEGACY_HANDLERS_DRAINED = 'legacy-handlers-drained-v1';

/**
 * The subscription workflow as a state object and named steps (workflows/subscription/): regular
 * activities for database steps, a checkpoint before every wait (continue-as-new at any loop),
 * Update validators. Runs started before it go on in workflows/subscription/legacy.ts.
 */
export const SUBSCRIPTION_STEPS_V2 = 'subscription-steps-v2';

/**
 * The refund is committed before its workflow starts (API Update-with-Start, or the sweeper):
 * no visibility wait. A row still missing then means an API of the old code started the
 * workflow inside its transaction: waited for by a regular, heartbeating activity.
 */
export const REFUND_STARTED_AFTER_COMMIT = 'refund-started-after-commit-v1';

/** Update handlers drained (`condition(allHandlersFinished)`) before a run completes. */
export const HANDLERS_DRAINED = 'handlers-drained-v1';

/**
 * PaymentStatus / RefundStatus search attributes upserted as the workflow moves; Update
 * validators reject requests for a settled record (the API reads PostgreSQL).
 */
export const STATUS_SEARCH_ATTRIBUTES = 'status-search-attributes-v1';

/**
 * The orphan sweeper gives subscriptions left without a workflow theirs too.
 *
 * Deprecated (`deprecatePatch`, decision 0084): no sweep run without it can be open.
 */
export const SWEEP_SUBSCRIPTIONS = 'sweep-subscriptions-v1';

/**
 * Payment and refund runs continue as new at a wait once long (workflows/runBound.ts), carrying
 * their state in `resume`; a payment refuses an Update while it hands over (the API sends it again).
 */
export const BOUNDED_HISTORIES = 'bounded-histories-v1';

/**
 * The orphan sweeper relays outbox rows a lost run never handed on: emails never attempted and
 * merchant events never delivered, past the grace age, each to a workflow of its own.
 *
 * Deprecated (`deprecatePatch`, decision 0084): no sweep run without it can be open.
 */
export const SWEEP_OUTBOX_RELAY = 'sweep-outbox-relay-v1';

/**
 * A local provider call (payment attempt, invoice charge) runs only in a workflow task after the
 * one that decided on it has completed: the request (the submit Update's acceptance) or the
 * decision (the charge after the invoice opened) is in the history first. A worker that dies
 * during the call then loses only the call's marker: the retried task replays to the same call
 * (same idempotency key), instead of losing the Update or taking a cancellation's path while the
 * provider has already acted.
 */
export const PROVIDER_CALL_AFTER_COMMIT = 'provider-call-after-commit-v1';

/**
 * The committed provider call (payment attempt, invoice charge) is a regular activity instead
 * of a 1 ms timer then a local activity: scheduling it completes the deciding workflow task, so
 * the decision is in the history as before, without the timer, which the server fires only
 * about 1 s later (the token POST took ~1.05 s; found by the floor in `npm run bench`).
 */
export const PROVIDER_CALL_AS_ACTIVITY = 'provider-call-as-activity-v1';

/**
 * A payment run started by the API with the merchant's submit (`attemptOnStart`) makes that first
 * attempt itself: an admitted Update lost before acceptance (a worker or the history service
 * dying) no longer leaves the payment `created` until its expiry. Found by the 30-minute chaos run.
 */
export const ATTEMPT_ON_START = 'attempt-on-start-v1';

/**
 * A renewal in two workflow tasks instead of four: the invoice is opened by a local activity in
 * the task the period's timer wakes (then the charge is scheduled, so the decision to charge is
 * still committed before the provider is asked), and outbox emails are first tried by a local
 * activity in the task that records the charge. Either falls back to its regular activity (retried
 * through an outage) when the quick try fails. Found by the renewal storm of issue 12.
 */
export const RENEWAL_LOCAL_STEPS = 'renewal-local-steps-v1';

/**
 * Card updates (POST /subscriptions/{id}/payment-method): the `updatePaymentMethod` Update, a
 * hosted update watched beside the billing loop, and a past_due subscription's open invoice
 * charged at once with the new card (a new attempt with its own key; the retry schedule restarts
 * only if it is declined). Marked when a run first takes a card update, so that a later change of
 * these steps can tell the runs that took one under this code; runs without one never reach them.
 */
export const SUBSCRIPTION_CARD_UPDATE = 'subscription-card-update-v1';

/**
 * A renewal in one workflow task less: the period's invoice is opened by the activity that makes
 * its first charge attempt (`openAndChargeInvoice`), scheduled by the task its timer wakes, so
 * the decision to charge is still in the history before the provider is asked. If that activity
 * fails, the invoice is opened on its own (found: opening is idempotent) and the attempt is
 * settled as any failed attempt is (nothing charged: tried later; else asked by its key). Found
 * by the renewal storm of issue 12.
 */
export const RENEWAL_OPEN_IN_CHARGE = 'renewal-open-in-charge-v1';

/**
 * The first attempt of a payment run started with the merchant's request (`attemptOnStart`) is a
 * local activity in the run's first workflow task, as a refund's attempt is: that request is
 * committed by the start itself, so a worker dying mid-call leaves a retried task that replays to
 * the same call (same idempotency key), and the decision needs no task of its own. Later attempts
 * (a repeat after `provider_unavailable`, asked only by an Update) stay regular activities,
 * scheduled by the task that accepted their Update. Found by the floor in `npm run bench`: a token
 * POST was two workflow tasks and an activity task against the floor's one task.
 */
export const START_ATTEMPT_LOCAL = 'start-attempt-local-v1';

/**
 * A renewal in one workflow task, like a token payment: the period's invoice is opened and its
 * first attempt made by a local activity (`openAndChargeInvoice`) in the task the period's timer
 * (or, for the first period, the run's start) wakes, instead of a regular activity that task
 * schedules. What leads to the call is already in the history (the timer fired; the start), so a
 * worker dying mid-call leaves a retried task that replays to the same call (same idempotency
 * key), unless a cancellation arrived meanwhile: then the cancellation's step asks the provider
 * about the open invoice whose call was marked sent, and records a capture as paid before it
 * cancels (`settleChargeInDoubt`), so no charge is lost or voided. Found by the renewal storm of
 * issue 12: a renewal was two workflow tasks and an activity task against the floor's one task.
 */
export const RENEWAL_CHARGE_LOCAL = 'renewal-charge-local-v1';

// issue 42: subscriptions

/**
 * A hard decline (src/rules/declines.ts) ends the retries with that card: the customer is asked
 * for a new card (a hosted card update opened for it, its link in the email), the collection
 * waits for one until the retry schedule's total from the declined attempt, charges it at once
 * when it comes, else cancels (`payment_failed`). Reached only by an outcome with
 * `declineType: "hard"`, which no earlier history holds.
 */
export const SUBSCRIPTION_HARD_DECLINES = 'subscription-hard-declines-v1';

/**
 * An invoice attempt the provider has not decided (processing, requires_action, a status nobody
 * knows, an unreadable answer) keeps the invoice open: no other attempt starts, and the same
 * attempt is asked about by its key at growing intervals (at most daily) until decided, instead
 * of a failed activity failing the workflow. Reached only by an `undecided` outcome.
 */
export const SUBSCRIPTION_UNDECIDED_CHARGE = 'subscription-undecided-charge-v1';

/**
 * How a workflow asks whether a change applies to its run. `patched` answers for a type that has
 * runs from before the change, and records two history events per change in every run (a marker
 * and an upsert of `TemporalChangeVersion`); a type that began with the change needs neither.
 */
export type HasChange = (patchId: string) => boolean;

/**
 * The changes every run of `paymentWorkflowV2` and `refundWorkflowV2` began with: answered true
 * without a marker. Half of a token payment's or a refund's history was these markers and their
 * upserts (found by the floor in `npm run bench`). A change made after the V2 types goes behind
 * `patched()` as before; this set never grows.
 */
// eslint-disable-next-line no-restricted-syntax -- constant: read only, never written after load
const V2_BEGAN_WITH: ReadonlySet<string> = new Set([
  LOCAL_PROVIDER_ATTEMPT,
  REFUND_STARTED_AFTER_COMMIT,
  HANDLERS_DRAINED,
  STATUS_SEARCH_ATTRIBUTES,
  BOUNDED_HISTORIES,
  PROVIDER_CALL_AFTER_COMMIT,
  PROVIDER_CALL_AS_ACTIVITY,
  ATTEMPT_ON_START,
  START_ATTEMPT_LOCAL,
]);

/** `HasChange` of the V2 types. */
export const hasChangeSinceV2: HasChange = (patchId) => V2_BEGAN_WITH.has(patchId) || patched(patchId);

// issue 42: payments

/**
 * A payment the processor decides later (`processing`) waits for its webhook and, without one,
 * asks the provider at doubling intervals (1 minute to a day), with no expiry
 * (workflows/payment/waits.ts `waitForProcessor`). Marked when a run first takes this wait, so
 * that a later change of it can tell the runs that took it under this code; runs of older code
 * never reach it (no provider answered `processing` before).
 */
export const PAYMENT_PROCESSING_WAIT = 'payment-processing-wait-v1';

// issue 42: disputes

/**
 * The orphan sweeper gives open disputes left without a workflow theirs too (a webhook whose
 * workflow start failed every time; decision 0056). A sweep begun before keeps its kinds.
 *
 * Deprecated (`deprecatePatch`, decision 0084): no sweep run without it can be open.
 */
export const SWEEP_DISPUTES = 'sweep-disputes-v1';

// issue 42: invoices

/**
 * An invoice attempt the processor answered `requires_action` or `processing` (decision 0060):
 * the invoice shows the wait; no other attempt starts; a webhook (`providerInvoiceEvent`) or a
 * poll asks about the attempt; while the customer authenticates, reminders at the retry
 * schedule's dates, the attempt cancelled at the processor on a DELETE, a new card or the
 * schedule's end. Reached only by an `undecided` outcome carrying `waiting`, which no earlier
 * history holds.
 */
export const SUBSCRIPTION_INVOICE_WAITS = 'subscription-invoice-waits-v1';

// issue 42: never fail closed

/**
 * A question to the provider (payment reconciliation and expiry, refund reconciliation) that
 * has not been answered with something the code knows within `stuckAfterSeconds` (default an
 * hour), or that failed outright (a non-retryable failure), no longer fails the workflow: the
 * run marks itself `Stuck` (search attribute, the failure's type), asks again at doubling
 * intervals up to an hourly, and clears the mark once answered (workflows/untilKnown.ts).
 * Marked only where a question first failed: runs whose questions were all answered carry no marker.
 */
export const NEVER_FAIL_CLOSED = 'never-fail-closed-v1';

/**
 * An outbox email whose sending gave up (a day of retries) no longer fails its workflow: the row
 * keeps its attempts and last error, and the run completes (workflows/outboxEmail.ts).
 */
export const EMAIL_GIVE_UP_QUIETLY = 'email-give-up-quietly-v1';

// issue 42: undecided attempts cancelled

/**
 * A DELETE while an invoice attempt is undecided (an answer nobody could read) cancels the attempt
 * at the processor before the cancellation voids the invoice, and an unreadable answer about an
 * attempt the invoice shows waiting (`requires_action`, `processing`) keeps that wait: before, the
 * invoice could be voided while its attempt went on to capture (the chaos run's invariant 1; decision
 * 0060). Marked only in runs that reach either path.
 */
export const SUBSCRIPTION_UNDECIDED_CANCEL = 'subscription-undecided-cancel-v1';

// issue 42: gaps

/**
 * A dispute check without an answer the code knows (a status nobody knows, the processor down, no
 * provider) is asked again at once through untilKnown (`Stuck` past `stuckAfterSeconds`), instead
 * of waiting for the deadline, the next interval or a webhook (workflows/dispute). Asked only where
 * a check answered `unknown`.
 */
export const DISPUTE_UNTIL_KNOWN = 'dispute-until-known-v1';

/**
 * A question stuck for long (workflows/untilKnown.ts `handOver`) continues as new once its run is
 * long (runBound.ts: 1,000 events or the server's suggestion), with the state its workflow carries
 * over at its waits, instead of growing its history without bound. Asked only when a stuck run
 * is long, which no recorded history reaches.
 */
export const UNTIL_KNOWN_HAND_OVER = 'until-known-hand-over-v1';

// issue 42: subscriptions never fail closed

/**
 * A subscription's provider question without an answer the code knows for longer than
 * `stuckAfterSeconds` marks its run `Stuck` (decision 0062): an attempt the provider has not
 * decided (an unreadable answer, `Collection.undecided` without `waiting`) from its first such
 * answer, and every patient question (an attempt's reconciliation and cancellation, the card
 * authorization's and the card update's checks and closes) asked through untilKnown; the mark is
 * cleared once the answer is known. Asked where an attempt is first answered undecided, or a
 * question first goes unanswered that long: runs that never meet either carry no marker.
 */
export const SUBSCRIPTION_STUCK = 'subscription-stuck-v1';

// issue 42: collections revived (decision 0061)

/**
 * An attempt asked about by its key (undecided) that the provider never received (`not_found`) is
 * made again, the same attempt under the same key, after a pause, instead of ending the run as
 * discarded: the sweeper resumes an attempt in doubt (its call marked sent, no outcome recorded)
 * as undecided, and the lost run may never have sent it. Asked only on that answer.
 */
export const SUBSCRIPTION_UNDECIDED_NOT_FOUND = 'subscription-undecided-not-found-v1';

// issue 43: deliveries on their own queue (decision 0069)

/**
 * A record's workflow no longer delivers its events (its own queue's slots, retried for days):
 * every event's deliveries are delivery jobs, written with the event, and delivered by the
 * merchant's delivery workflow on the delivery queue. Asked where a run would hand its events
 * on (deliverEvents at a payment's, refund's or dispute's end, a payment's announce, a
 * subscription's follow): runs that reached none of them before carry no marker.
 */
export const EVENT_DELIVERY_QUEUE = 'event-delivery-queue-v1';

// issue 44 item 4: a cancel cannot be lost (decision 0076)

/**
 * A period's invoice step that found a DELETE recorded (the subscription's `cancel_requested_at`,
 * no workflow having taken it: its Update lost to failing workflow tasks) applies the
 * cancellation itself and answers `cancelled` with its outbox: the run follows it (the
 * cancellation's email) before it ends. Asked only on that answer.
 */
export const SUBSCRIPTION_CANCEL_INTENT = 'subscription-cancel-intent-v1';

// issue 44, item 5: bugs park (decision 0077)

/**
 * An activity failing on a bug (non-retryable `activity_bug`, src/temporal/activityErrors.ts) no
 * longer fails its run: the call is parked (workflows/interceptors.ts): the run marked
 * `Stuck: activity_bug`, the same call asked again after a minute, doubling up to hourly, until a
 * fixed worker answers it; the mark is cleared then. Asked only where such a failure reaches the
 * workflow: runs that never meet one carry no marker.
 */
export const ACTIVITY_BUG_PARK = 'activity-bug-park-v1';

/**
 * A local activity (a provider attempt, a renewal's quick step) failing on a bug parks its call as
 * a regular one does (ACTIVITY_BUG_PARK), instead of handing the failure to the workflow's code
 * (which took it as an ambiguous provider answer, or fell back to the regular activity): asked
 * again locally after a minute, doubling up to hourly, the run `Stuck: activity_bug` meanwhile.
 * An id of its own: a run that parked a regular call and later took a local call's bug to its
 * caller must replay that path. Asked only where such a failure reaches the workflow.
 */
export const LOCAL_ACTIVITY_BUG_PARK = 'local-activity-bug-park-v1';

// issue 44, item 1: runs that stay young (decision 0084)

/**
 * A subscription run hands over (continue-as-new with its cursor) once it is 30 billing days old,
 * not only once its history is long: every wait's timer is capped at the run's start plus that
 * age, and a `handOver` signal (the `workflows:hand-over` operator command) wakes a run asleep in
 * a timer started before this to hand over at once. Asked at each wait of a run (kept once true):
 * histories recorded before it have no marker and replay their old timers.
 */
export const SUBSCRIPTION_RUN_AGE = 'subscription-run-age-v1';

/**
 * The frozen legacy subscription workflow (workflows/subscription/legacy.ts) takes the `handOver`
 * signal: between periods it continues as new at once, with the legacy cursor, into the current
 * code, so no legacy run is left waiting for its next history limit (decision 0084). Asked only
 * once the signal arrived: histories without it replay unchanged.
 */
export const LEGACY_HAND_OVER = 'legacy-hand-over-v1';

// issue 45, item 2: test clocks (decision 0090)

/**
 * A subscription on a test clock waits for the clock's time, not for timers: its clock waits end
 * when the clock's advance raises its time (`testClockTime` Update); real waits (provider backoff,
 * polls) stay timers. Asked only by runs whose input names a clock: no recorded history without
 * one asks it.
 */
export const TEST_CLOCK_TIME = 'test-clock-time-v1';

// issue 45, item 1 (continued): a customer's new card ends the wait for a new card (decision 0088)

/**
 * A subscription of a customer waiting for a new card after a hard decline (its fallback round
 * charged every card the customer had) is charged at once when the customer gets a new usable
 * card (an attach, a setup page, a new default): the `customerCard` signal wakes the wait, and
 * the next attempt (a key of its own) charges the customer's card at that moment. Asked only once
 * such a signal arrived: no recorded history before it has one.
 */
export const CUSTOMER_CHARGE_DEFAULT = 'customer-charge-default-v1';
