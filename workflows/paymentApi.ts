import { defineSignal, defineUpdate } from '@temporalio/workflow';

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
}

/** The outcome the API answers with: what the latest provider attempt established. */
export type SubmitOutcome =
  /** The payment has a final outcome (succeeded, failed, voided...): read it from PostgreSQL. */
  | { kind: 'settled' }
  /** Accepted by the provider, waiting for the customer on the hosted page. */
  | { kind: 'created' }
  /** The provider refused the request; the payment was discarded (its externalId stays free). */
  | { kind: 'rejected'; code: string; message: string }
  /** The provider did nothing on every try. The payment stays `created`. */
  | { kind: 'provider_unavailable' }
  /** The provider may have acted; the workflow asks it until it knows. */
  | { kind: 'provider_timeout' }
  | { kind: 'provider_invalid' };

export const paymentWorkflowId = (paymentId: string) => `payment-${paymentId}`;

/** A merchant request for this payment: attempt it if nothing is known yet, then answer. */
export const submitPaymentUpdate = defineUpdate<SubmitOutcome>('submitPayment');

/** The provider reported a change (verified webhook): look at the provider's state. */
export const providerPaymentEventSignal = defineSignal('providerPaymentEvent');
