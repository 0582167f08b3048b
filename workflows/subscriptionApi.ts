import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import type { Plan, SubscriptionStatus } from '../src/domain/subscriptionPlan';

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
  /** Continue-as-new once a run's history reaches this many events (default 600; at most 1,000). */
  historyEventLimit?: number;
  /** Where the previous run left off (continue-as-new): the next period to bill. */
  resume?: SubscriptionCursor;
}

export interface SubscriptionCursor {
  status: SubscriptionStatus;
  periodIndex: number;
  /** Start of that period, epoch milliseconds. */
  periodStartMs: number;
  /** How many runs came before (operators see it in the query). */
  runs: number;
}

/** What the API answers a create with: the first thing the workflow established. */
export type StartOutcome =
  /** The subscription left `created` (pending, active, past_due or cancelled): read PostgreSQL. */
  | { kind: 'settled' }
  /** The provider refused the first charge (e.g. an unknown card token): nothing was kept. */
  | { kind: 'rejected'; code: string; message: string }
  /** The provider could not be reached; the workflow keeps trying. */
  | { kind: 'provider_unavailable' }
  /** The provider may have acted; the workflow asks it until it knows. */
  | { kind: 'provider_invalid' }
  | { kind: 'provider_timeout' };

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

/** Cancels now; answers once the subscription is cancelled (a charge in flight finishes first). */
export const cancelSubscriptionUpdate = defineUpdate<SubscriptionStatus, [CancelRequest]>('cancelSubscription');

/** The provider reported a change of the card authorization (verified webhook). */
export const providerSubscriptionEventSignal = defineSignal('providerSubscriptionEvent');

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

/** Live state for operators (the API reads PostgreSQL). */
export const subscriptionStateQuery = defineQuery<SubscriptionLiveState>('state');
