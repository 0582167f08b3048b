import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import type { Plan, SubscriptionStatus } from '../src/rules/subscriptionPlan';
import type { PROVIDER_OUTCOME } from '../src/rules/providerFailures';
import type { Collection } from '../src/rules/subscriptionCollection';

/**
 * The subscription workflow's messages, defined once for the API and the workflow.
 * Workflow id: `subscription-<subscriptionId>`, one execution chain (continue-as-new) for the
 * subscription's whole life.
 */
export const subscriptionWorkflowId = (subscriptionId: string) => `subscription-${subscriptionId}`;

export interface SubscriptionWorkflowInput {
  subscriptionId: string;
  merchantId: string;
  plan: Plan;
  /** No cardToken: the customer authorizes a card on the provider's hosted page first. */
  needsAuthorization: boolean;
  /** Seconds in a billing day (periods and retries); 86400 but in demos and tests. */
  billingDaySeconds: number;
  /** How long the customer has to authorize a card before the subscription is cancelled. */
  authorizationExpirySeconds: number;
  callbackRetryInitialSeconds: number;
  /** false when there is no callbackUrl: no merchant events to deliver. */
  callbacks: boolean;
  /** Continue-as-new at the first wait once a run's history reaches this many events (default 600). */
  historyEventLimit?: number;
  /**
   * WORKFLOW_STUCK_AFTER_SECONDS: a provider question unanswered (with something the code knows)
   * that long marks the run `Stuck` (decision 0062). Absent: an hour.
   */
  stuckAfterSeconds?: number;
  /** The subscription's externalId (search attribute of its callback workflows); absent in old inputs. */
  externalId?: string;
  /**
   * The test clock the subscription lives on (decision 0090): its waits are for the clock's time,
   * which starts at `startMs` (the clock's time at the create) and moves only by the clock's
   * advances (`testClockTimeUpdate`). Absent: real time.
   */
  testClock?: { id: string; startMs: number };
  /** Where the previous run left off (continue-as-new). */
  resume?: SubscriptionCursor;
}

/**
 * What a run hands to the next (continue-as-new): everything the workflow knows that is not in
 * its input. Runs before `subscription-steps-v2` carried only the first four fields, and always
 * between periods; the optional ones say where a run stopped in the middle of a step.
 */
export interface SubscriptionCursor {
  status: SubscriptionStatus;
  /** The period being billed, or next to bill. */
  periodIndex: number;
  /** Start of that period, epoch milliseconds. */
  periodStartMs: number;
  /** How many runs came before (operators see it in the query). */
  runs: number;
  /** Still waiting for the customer to authorize a card (no period billed yet). */
  authorization?: { expiresAtMs: number | null };
  /** The period's invoice is being collected: where its attempts stand. */
  collection?: Collection;
  /** A provider webhook arrived and was not looked at yet. */
  providerEvent?: boolean;
  /** A provider webhook about an invoice's charge arrived and was not looked at yet. */
  invoiceEvent?: boolean;
  /** A hosted card update waiting for the customer (the old card is charged meanwhile). */
  cardUpdate?: HostedCardUpdate;
  /** Hosted card update pages requested so far (the next one's provider key counts on). */
  cardPages?: number;
  /** A past_due subscription's new card is to be charged at once (not started yet). */
  chargeNow?: boolean;
  /**
   * Every email the previous run sent was confirmed sent: the next run need not look for unsent
   * ones (absent: it looks, as runs before this field always did).
   */
  emailsConfirmed?: boolean;
  /** On a test clock: the clock's time the previous run had reached. */
  clockNowMs?: number;
  /** Customer cards signalled and not looked at yet (CUSTOMER_CHARGE_DEFAULT). */
  customerCards?: string[];
  /** Customer cards already taken by an attempt (a repeated signal about them changes nothing). */
  customerCardsSeen?: string[];
}

/** A hosted card update's page at the provider, open until the customer completes it or it expires. */
export interface HostedCardUpdate {
  transactionId: string;
  expiresAtMs: number;
}

/** An invoice being collected: defined with its pure rules (src/rules/subscriptionCollection.ts). */
export type { Collection };

/** What the API answers a create with: the first thing the workflow established. */
export type StartOutcome =
  /** The subscription left `created` (pending, active, past_due or cancelled): read PostgreSQL. */
  | { kind: 'settled' }
  /** The provider refused the first charge (e.g. an unknown card token): nothing was kept. */
  | { kind: 'rejected'; code: string; message: string }
  /** The provider could not be reached; the workflow keeps trying. */
  | { kind: typeof PROVIDER_OUTCOME.unavailable }
  /** The provider may have acted; the workflow asks it until it knows. */
  | { kind: typeof PROVIDER_OUTCOME.invalid }
  | { kind: typeof PROVIDER_OUTCOME.timeout };

export interface SubscriptionWorkflowResult {
  status: SubscriptionStatus;
  /** What the API would have been answered (null: the run was a continuation, or nothing happened). */
  firstOutcome: StartOutcome | null;
}

/** Waits for the first outcome (bounded by the caller's deadline). */
export const subscriptionStartedUpdate = defineUpdate<StartOutcome>('subscriptionStarted');

export interface CancelRequest {
  reason: string;
  notify: boolean;
}

/** The limits of a cancel request, checked by the API's schema and by the Update's validator. */
export const CANCEL_REASON_MAX_LENGTH = 500;

export function isCancelRequest(value: unknown): value is CancelRequest {
  const req = value as Partial<CancelRequest> | null | undefined;
  return (
    typeof req?.reason === 'string' &&
    req.reason.length >= 1 &&
    req.reason.length <= CANCEL_REASON_MAX_LENGTH &&
    typeof req.notify === 'boolean'
  );
}

/**
 * Why an Update's validator refused it (the ApplicationFailure type the API reads; a refused
 * Update writes nothing to the workflow's history).
 */
export const UPDATE_REFUSED = {
  /** The subscription left `created` already: read it from PostgreSQL. */
  settled: 'already_settled',
  /** Cancelled already (or discarded): nothing to apply. */
  cancelled: 'already_cancelled',
  invalid: 'invalid_request',
  /** Neither active nor past_due: its card cannot be replaced. */
  notUpdatable: 'not_updatable',
} as const;

/** Cancels now; answers once the subscription is cancelled (a charge in flight finishes first). */
export const cancelSubscriptionUpdate = defineUpdate<SubscriptionStatus, [CancelRequest]>('cancelSubscription');

/** A merchant's card update: a new card token, or (none) a hosted page for the customer. */
export interface PaymentMethodRequest {
  cardToken?: string;
}

export const CARD_TOKEN_MAX_LENGTH = 255;

export function isPaymentMethodRequest(value: unknown): value is PaymentMethodRequest {
  if (typeof value !== 'object' || value === null) return false;
  const req = value as Record<string, unknown>;
  if (Object.keys(req).some((k) => k !== 'cardToken')) return false;
  return (
    req.cardToken === undefined ||
    (typeof req.cardToken === 'string' && req.cardToken.length >= 1 && req.cardToken.length <= CARD_TOKEN_MAX_LENGTH)
  );
}

/** What a card update came to (the API then answers the subscription from PostgreSQL). */
export type PaymentMethodOutcome =
  /** The card is replaced (a past_due subscription's charge at once made), or was that card already. */
  | { kind: 'updated' }
  /** A hosted page waits for the customer (the subscription's `redirectUrl`). */
  | { kind: 'hosted' }
  /** The subscription left active / past_due meanwhile. */
  | { kind: 'not_updatable' }
  /** The provider refused the card (or the page): nothing changed. */
  | { kind: 'rejected'; code: string; message: string }
  /** The provider could not be asked in time: nothing changed. */
  | { kind: typeof PROVIDER_OUTCOME.unavailable };

/**
 * Replaces the subscription's card (`active` or `past_due`); a `past_due` one is charged at once
 * with it (the open invoice's next attempt). Update ids are derived from the request (see the
 * API's gateway); the validator refuses a subscription in any other state.
 */
export const updatePaymentMethodUpdate = defineUpdate<PaymentMethodOutcome, [PaymentMethodRequest]>(
  'updatePaymentMethod',
);

/** The provider reported a change of the card authorization (verified webhook). */
export const providerSubscriptionEventSignal = defineSignal('providerSubscriptionEvent');

/** The provider reported a change of one of the subscription's invoice charges (verified webhook). */
export const providerInvoiceEventSignal = defineSignal('providerInvoiceEvent');

/** A new usable card of the subscription's customer (attached, set up, made the default). */
export interface CustomerCardSignal {
  paymentMethodId: string;
}

/**
 * The subscription's customer has a new usable card (decision 0088): a subscription waiting for a
 * new card after a hard decline charges the customer's card at once (CUSTOMER_CHARGE_DEFAULT);
 * any other state only notes it (its next attempt reads the customer's cards anyway).
 */
export const customerCardSignal = defineSignal<[CustomerCardSignal]>('customerCard');

export const isCustomerCardSignal = (v: unknown): v is CustomerCardSignal =>
  typeof v === 'object' && v !== null && typeof (v as CustomerCardSignal).paymentMethodId === 'string';

export interface SubscriptionLiveState {
  status: SubscriptionStatus;
  periodIndex: number;
  currentPeriodStart: string | null;
  currentPeriodEnd: string | null;
  invoiceId: string | null;
  /** Attempts made on the open invoice; the next one is due at `nextAttemptAt`. */
  attempts: number;
  nextAttemptAt: string | null;
  cancelRequested: boolean;
  runs: number;
}

/**
 * Operators (`workflows:hand-over`): hand this run over to a new one (continue-as-new) at once,
 * e.g. a run asleep in a timer longer than the run age bound (decision 0084). Harmless anywhere:
 * a run that is closing or cancelled ignores it.
 */
export const handOverSignal = defineSignal('handOver');

/** Live state for operators (the API reads PostgreSQL). */
export const subscriptionStateQuery = defineQuery<SubscriptionLiveState>('state');

/** The workflow id of a test clock's advance (decision 0090): one run per advance. */
export const testClockWorkflowId = (clockId: string) => `test-clock-${clockId}`;

/** A test clock's time reached by its advance (epoch ms). */
export interface ClockTimeRequest {
  nowMs: number;
}

export function isClockTimeRequest(value: unknown): value is ClockTimeRequest {
  const req = value as Partial<ClockTimeRequest> | null | undefined;
  return typeof req?.nowMs === 'number' && Number.isFinite(req.nowMs);
}

/**
 * What a subscription on a clock answers once quiet at the clock's time: when it is next due in
 * clock time (null: nothing due, e.g. cancelled or waiting for the customer without a deadline),
 * or `again` (the run is handing over: ask the next run).
 */
export type ClockTimeAnswer = { nextDueMs: number | null } | { again: true };

/**
 * A test clock's advance reached `nowMs` (decision 0090): the subscription does everything due by
 * then, and answers once quiet (parked in a clock wait later than `nowMs`, or waiting for the
 * customer), with its next due time. Refused by a subscription not on a clock.
 */
export const testClockTimeUpdate = defineUpdate<ClockTimeAnswer, [ClockTimeRequest]>('testClockTime');
