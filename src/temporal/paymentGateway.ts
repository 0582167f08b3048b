import {
  ApplicationFailure,
  WithStartWorkflowOperation,
  WorkflowUpdateFailedError,
  type Client,
  type WorkflowStartOptions,
} from '@temporalio/client';
import type { Payment } from '../db/entities';
import type { PaymentOutcomeHint } from '../domain/payments';
import { paymentWorkflowSummary } from '../rules/workflowSummaries';
import { paymentWorkflowV2 } from '../../workflows/payment';
import {
  PAYMENT_UPDATE_REFUSED,
  paymentWorkflowId,
  providerPaymentEventSignal,
  submitPaymentUpdate,
  type SubmitOutcome,
} from '../../workflows/paymentApi';
import { ExternalIdKey, MerchantIdKey, PaymentStatusKey } from '../../workflows/searchAttributes';
import {
  firstOfAnswerAndHint,
  signalAnswer,
  startAnswer,
  unansweredOutcome,
  reviveAnswer,
  withoutOutcome,
  workflowAnswerOf,
  type HintWait,
  type ReviveAnswer,
  type StartAnswer,
} from './workflowAnswers';

/** The payment a workflow is started for: as the API wrote it, or as the sweeper read it. */
export type PaymentStart = Pick<
  Payment,
  'id' | 'externalId' | 'expiresAt' | 'callbackUrl' | 'amountMinor' | 'currency' | 'environment'
> & { merchant: { id: string } };

export interface PaymentGatewaySettings {
  taskQueue: string;
  callbackRetryInitialSeconds: number;
  /** Bounded wait for a submit's outcome (PAYMENT_WAIT_MS); only the API submits. */
  paymentWaitMs?: number;
  /** A processing payment's first question to the provider without a webhook (PAYMENT_PROCESSING_POLL_SECONDS). */
  processingPollSeconds?: number;
  /** A provider question unanswered this long marks the run `Stuck` (WORKFLOW_STUCK_AFTER_SECONDS; absent: an hour). */
  stuckAfterSeconds?: number;
}

/** What a submit came to within the API's wait. */
export type SubmitResult =
  | SubmitOutcome
  | PaymentOutcomeHint
  /** Temporal is there but no outcome came in time (a busy or absent worker; it will follow). */
  | 'no_answer'
  /** The call ended without an outcome and Temporal does not answer. */
  | 'unreachable'
  /** Closed, or settled (the Update's validator refuses it): PostgreSQL has the outcome. */
  | 'closed';

/**
 * How a payment's workflow is started, by the API (Update-with-Start) and by the sweeper that
 * gives orphaned payments their workflow: the same id, input, policies, search attributes and
 * summary for the Temporal UI.
 */
function startOptions(
  payment: PaymentStart,
  settings: PaymentGatewaySettings,
  /** The API starting the run with the merchant's submit (see PaymentWorkflowInput). */
  { attemptOnStart = false, reconcileOnStart = false }: { attemptOnStart?: boolean; reconcileOnStart?: boolean } = {},
): WorkflowStartOptions<typeof paymentWorkflowV2> & { workflowIdConflictPolicy: 'USE_EXISTING' } {
  return {
    workflowId: paymentWorkflowId(payment.id),
    taskQueue: settings.taskQueue,
    args: [
      {
        paymentId: payment.id,
        merchantId: payment.merchant.id,
        expiresAt: payment.expiresAt.toISOString(),
        callbackRetryInitialSeconds: settings.callbackRetryInitialSeconds,
        callbacks: payment.callbackUrl !== null,
        ...(attemptOnStart ? { attemptOnStart: true } : {}),
        ...(reconcileOnStart ? { reconcileOnStart: true } : {}),
        ...(settings.stuckAfterSeconds ? { stuckAfterSeconds: settings.stuckAfterSeconds } : {}),
        ...(settings.processingPollSeconds ? { processingPollSeconds: settings.processingPollSeconds } : {}),
      },
    ],
    workflowIdConflictPolicy: 'USE_EXISTING',
    // A closed payment workflow is never started again: its payment is settled or discarded.
    workflowIdReusePolicy: 'REJECT_DUPLICATE',
    typedSearchAttributes: [
      { key: MerchantIdKey, value: payment.merchant.id },
      { key: ExternalIdKey, value: payment.externalId },
      { key: PaymentStatusKey, value: 'created' },
    ],
    ...paymentWorkflowSummary({
      id: payment.id,
      merchantId: payment.merchant.id,
      externalId: payment.externalId,
      amountMinor: payment.amountMinor,
      currency: payment.currency,
      environment: payment.environment,
      expiresAt: payment.expiresAt,
      callbacks: payment.callbackUrl !== null,
    }),
  };
}

/** How long to wait before sending again a submit refused by a run handing over to a new one. */
const HANDOVER_RETRY_MS = 100;

/** The payment workflow's validator refused the submit: its run is continuing as new. */
function isHandingOver(err: unknown): boolean {
  return (
    err instanceof WorkflowUpdateFailedError &&
    err.cause instanceof ApplicationFailure &&
    err.cause.type === PAYMENT_UPDATE_REFUSED.handingOver
  );
}

/** The API's and the sweeper's side of the payment workflow: how it is started and sent messages. */
export function createPaymentGateway(deps: {
  client: Client;
  settings: PaymentGatewaySettings;
  /** Hints of settled payment attempts (absent: the submit waits for the workflow's Update). */
  outcomes?: { waitFor(paymentId: string): HintWait<PaymentOutcomeHint> };
}) {
  const { client, settings, outcomes } = deps;

  /**
   * The Update's outcome: with a listener, whichever comes first of the Update's answer and the
   * worker's hint that the attempt's outcome is committed (firstOfAnswerAndHint). A run the API
   * starts makes its attempt in its first workflow task (START_ATTEMPT_LOCAL), so the Update
   * usually completes there and its answer comes in the one call.
   */
  function updateOutcome(op: WithStartWorkflowOperation<typeof paymentWorkflowV2>, paymentId: string) {
    const ask = () => client.workflow.executeUpdateWithStart(submitPaymentUpdate, { startWorkflowOperation: op });
    return outcomes ? firstOfAnswerAndHint(ask, outcomes.waitFor(paymentId)) : ask();
  }

  return {
    workflowId: paymentWorkflowId,

    /**
     * Starts the payment's workflow without the merchant's submit (the sweeper: it only waits
     * for the expiry and voids). A running one is left alone; a closed one is never started again.
     */
    start(payment: PaymentStart): Promise<StartAnswer> {
      return startAnswer(() => client.workflow.start(paymentWorkflowV2, startOptions(payment, settings)));
    },

    /**
     * A live payment whose workflow ended (completed, failed, terminated) gets a new run (the
     * sweeper; decision 0059), which first asks the provider what became of the payment and takes
     * up its wait from there. A running one is left alone.
     */
    revive(payment: PaymentStart): Promise<ReviveAnswer> {
      return reviveAnswer(client, paymentWorkflowId(payment.id), () =>
        client.workflow.start(paymentWorkflowV2, {
          ...startOptions(payment, settings, { reconcileOnStart: true }),
          workflowIdReusePolicy: 'ALLOW_DUPLICATE',
        }),
      );
    },

    /**
     * Update-with-Start: starts `payment-<id>` if needed, with the merchant's submit, and waits
     * (bounded) for the outcome. A run handing over to a new one (continue-as-new) refuses the
     * Update: it is sent again.
     */
    async submit(payment: PaymentStart): Promise<SubmitResult> {
      const deadline = Date.now() + (settings.paymentWaitMs ?? 0);
      for (;;) {
        const op = new WithStartWorkflowOperation(
          paymentWorkflowV2,
          startOptions(payment, settings, { attemptOnStart: true }),
        );
        try {
          return await client.withDeadline(deadline, () => updateOutcome(op, payment.id));
        } catch (err) {
          if (isHandingOver(err) && Date.now() + HANDOVER_RETRY_MS < deadline) {
            await new Promise((resolve) => setTimeout(resolve, HANDOVER_RETRY_MS));
            continue;
          }
          if (isHandingOver(err)) return 'no_answer';
          const answer = workflowAnswerOf(err);
          if (answer === 'already_started' || answer === 'update_refused') return 'closed';
          // An Update aborted with its workflow task (a worker died mid-task) has no outcome either.
          if (withoutOutcome(answer)) return unansweredOutcome(client, answer);
          throw err;
        }
      }
    },

    /** The provider's webhook: the workflow asks the provider itself. A closed run has settled already. */
    providerEvent(paymentId: string): Promise<'delivered' | 'not_found'> {
      return signalAnswer(() =>
        client.workflow.getHandle(paymentWorkflowId(paymentId)).signal(providerPaymentEventSignal),
      );
    },
  };
}

export type PaymentGateway = ReturnType<typeof createPaymentGateway>;
