import { defineSignal, defineUpdate } from '@temporalio/workflow';
import type { PROVIDER_OUTCOME } from '../src/rules/providerFailures';

/**
 * The payment workflow's messages, defined once for the API and the workflow.
 * Workflow id: `payment-<paymentId>`.
 */
export interface PaymentWorkflowInput {
  paymentId: string;
  merchantId: string;
  /** When an unpaid payment is voided (ISO timestamp). */
  expiresAt: string;
  /** First merchant-callback retry delay; doubles up to an hour, for up to 3 days. */
  callbackRetryInitialSeconds: number;
  /** false when there is no callbackUrl, so there is nothing to deliver (absent: look). */
  callbacks?: boolean;
  /**
   * Set when the API starts the run with the merchant's submit (Update-with-Start): the run makes
   * that first attempt itself, so it happens even if the Update is lost (an Update is durable only
   * once accepted; a worker or history service dying before that drops it). Absent when the
   * sweeper starts a run for an orphan (nothing is attempted without a request).
   */
  attemptOnStart?: boolean;
  /**
   * A `processing` payment without a webhook asks the provider after this long, then at doubling
   * intervals up to daily (default 60; tests lower it).
   */
  processingPollSeconds?: number;
  /** Continue-as-new at a wait once a run has this many events (default 1,000; tests lower it). */
  historyEventLimit?: number;
  /**
   * A question to the provider without an answer the code knows for this long marks the run
   * `Stuck` (default 3,600; tests lower it); it is asked again, never failed (workflows/untilKnown.ts).
   */
  stuckAfterSeconds?: number;
  /**
   * Set when the sweeper starts a run for a live payment whose workflow ended (decision 0059): the
   * run first asks the provider what became of it (as after an ambiguous attempt), so it takes
   * up the wait the payment is in (the customer, the authentication, the processor).
   */
  reconcileOnStart?: boolean;
  /** Set by continue-as-new: where the previous run stopped. */
  resume?: PaymentCursor;
}

/** What a continued run of a payment needs to go on where the previous one stopped. */
export interface PaymentCursor {
  state: 'awaiting_attempt' | 'awaiting_customer' | 'awaiting_authentication' | 'awaiting_processor';
  /** Provider attempts made so far (all runs). */
  completedAttempts: number;
  /** What the latest attempt established (a repeat is answered with it when nothing is tried). */
  lastOutcome: SubmitOutcome;
  /** The provider may have acted: reconcile before anything else. */
  ambiguous: boolean;
  /** A provider webhook not looked at yet. */
  providerEvent: boolean;
  /** While `awaiting_processor`: the next wait before the provider is asked (absent: the first). */
  pollDelayMs?: number;
  /** A move to `requires_action` / `processing` whose merchant event is still to be sent (absent: none). */
  announce?: boolean;
  /** Runs before this one. */
  runs: number;
}

/** The outcome the API answers with: what the latest provider attempt established. */
export type SubmitOutcome =
  /** The payment has a final outcome (succeeded, failed, voided...): read it from PostgreSQL. */
  | { kind: 'settled' }
  /** Accepted by the provider, waiting for the customer (hosted page, authentication). */
  | { kind: 'created' }
  /** The provider refused the request; the payment was discarded (its externalId stays free). */
  | { kind: 'rejected'; code: string; message: string }
  /** The provider did nothing on every try. The payment stays `created`. */
  | { kind: typeof PROVIDER_OUTCOME.unavailable }
  /** The provider may have acted; the workflow asks it until it knows. */
  | { kind: typeof PROVIDER_OUTCOME.timeout }
  | { kind: typeof PROVIDER_OUTCOME.invalid };

export const paymentWorkflowId = (paymentId: string) => `payment-${paymentId}`;

/**
 * Why the payment workflow's validator refused a submit Update (the failure's type). A refusal
 * costs no history and changes nothing.
 */
export const PAYMENT_UPDATE_REFUSED = {
  /** The payment is settled: read it from PostgreSQL. */
  settled: 'already_settled',
  /** The run is handing over to a new one (continue-as-new): send the same request again. */
  handingOver: 'handing_over',
} as const;

/** A merchant request for this payment: attempt it if nothing is known yet, then answer. */
export const submitPaymentUpdate = defineUpdate<SubmitOutcome>('submitPayment');

/** The provider reported a change (verified webhook): look at the provider's state. */
export const providerPaymentEventSignal = defineSignal('providerPaymentEvent');
