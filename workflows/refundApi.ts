import { defineSignal, defineUpdate } from '@temporalio/workflow';
import type { PROVIDER_OUTCOME } from '../src/rules/providerFailures';

/** The refund workflow's messages, defined once for the API and the workflow. Id: `refund-<refundId>`. */
export interface RefundWorkflowInput {
  refundId: string;
  paymentId: string;
  merchantId: string;
  callbackRetryInitialSeconds: number;
  /** false when there is no callbackUrl, so there is nothing to deliver (absent: look). */
  callbacks?: boolean;
  /** How often a refund the provider holds `pending` is polled, at first (doubles to an hour). */
  pollInitialSeconds: number;
  /** Continue-as-new at a wait once a run has this many events (default 1,000; tests lower it). */
  historyEventLimit?: number;
  /**
   * A question to the provider without an answer the code knows for this long marks the run
   * `Stuck` (default 3,600; tests lower it); it is asked again, never failed (workflows/untilKnown.ts).
   */
  stuckAfterSeconds?: number;
  /**
   * Set by continue-as-new: where the previous run stopped. The sweeper also starts a run for a
   * pending refund whose workflow ended with one (ambiguous: the provider is asked first).
   */
  resume?: RefundCursor;
}

/** What a continued run of a refund needs to go on where the previous one stopped (phase 2). */
export interface RefundCursor {
  /** The first outcome, already given to the API: a repeat of the request is answered with it. */
  first: RefundOutcome;
  /** The poll interval reached (it doubles to an hour) and when the next poll is due (epoch ms). */
  pollSeconds: number;
  nextPollAtMs: number;
  /** The last answer was ambiguous: ask the provider at once. */
  ambiguous: boolean;
  /** A provider webhook not looked at yet. */
  providerEvent: boolean;
  /** Runs before this one. */
  runs: number;
}

export type RefundOutcome =
  /** Succeeded or failed (declined): read it from PostgreSQL. */
  | { kind: 'settled' }
  /** In flight: the provider answered pending, or no answer yet. */
  | { kind: 'pending' }
  /** The provider did nothing on every try; the refund was failed, the balance untouched. */
  | { kind: typeof PROVIDER_OUTCOME.unavailable }
  /** The provider answered garbage; the workflow asks it by reference_id until it knows. */
  | { kind: typeof PROVIDER_OUTCOME.invalid };

export const refundWorkflowId = (refundId: string) => `refund-${refundId}`;

/** Waits (bounded by the caller) for the first outcome of the refund. */
export const refundOutcomeUpdate = defineUpdate<RefundOutcome>('refundOutcome');

/** The provider reported a change of this refund (verified webhook). */
export const providerRefundEventSignal = defineSignal('providerRefundEvent');
