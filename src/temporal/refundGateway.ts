import { WithStartWorkflowOperation, type Client, type WorkflowStartOptions } from '@temporalio/client';
import type { RefundOutcomeHint } from '../domain/refunds';
import { refundWorkflowSummary } from '../rules/workflowSummaries';
import { refundWorkflowV2 } from '../../workflows/refund';
import {
  providerRefundEventSignal,
  refundOutcomeUpdate,
  refundWorkflowId,
  type RefundOutcome,
  type RefundWorkflowInput,
} from '../../workflows/refundApi';
import { ExternalIdKey, MerchantIdKey, PaymentIdKey, RefundStatusKey } from '../../workflows/searchAttributes';
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

/** The refund a workflow is started for (committed by the API, or found by the sweeper). */
export interface RefundStart {
  id: string;
  externalId: string;
  paymentId: string;
  merchantId: string;
  amountMinor: number;
  currency: string;
  /** The payment's: the refund's callbacks go where its payment's go. */
  callbackUrl: string | null;
}

export interface RefundGatewaySettings {
  taskQueue: string;
  callbackRetryInitialSeconds: number;
  refundPollInitialSeconds: number;
  /** Bounded wait for the first outcome (REFUND_WAIT_MS); only the API waits. */
  refundWaitMs?: number;
  /** A provider question unanswered this long marks the run `Stuck` (WORKFLOW_STUCK_AFTER_SECONDS; absent: an hour). */
  stuckAfterSeconds?: number;
}

/** What a refund's start came to within the API's wait. */
export type RefundStartResult = RefundOutcome | RefundOutcomeHint | 'no_answer' | 'unreachable';

/**
 * How a refund's workflow is started, by the API (Update-with-Start, after the refund is
 * committed) and by the sweeper that gives a refund left without one its workflow: the same id,
 * input, policies, search attributes and summary for the Temporal UI.
 */
function startOptions(
  refund: RefundStart,
  settings: RefundGatewaySettings,
): WorkflowStartOptions<typeof refundWorkflowV2> & {
  workflowIdConflictPolicy: 'USE_EXISTING';
  workflowIdReusePolicy: 'REJECT_DUPLICATE';
} {
  const input: RefundWorkflowInput = {
    refundId: refund.id,
    paymentId: refund.paymentId,
    merchantId: refund.merchantId,
    callbackRetryInitialSeconds: settings.callbackRetryInitialSeconds,
    callbacks: refund.callbackUrl !== null,
    pollInitialSeconds: settings.refundPollInitialSeconds,
    ...(settings.stuckAfterSeconds ? { stuckAfterSeconds: settings.stuckAfterSeconds } : {}),
  };
  return {
    workflowId: refundWorkflowId(refund.id),
    taskQueue: settings.taskQueue,
    args: [input],
    workflowIdConflictPolicy: 'USE_EXISTING',
    // A closed refund workflow is never started again: its refund is settled.
    workflowIdReusePolicy: 'REJECT_DUPLICATE',
    typedSearchAttributes: [
      { key: MerchantIdKey, value: refund.merchantId },
      { key: ExternalIdKey, value: refund.externalId },
      { key: PaymentIdKey, value: refund.paymentId },
      { key: RefundStatusKey, value: 'pending' },
    ],
    ...refundWorkflowSummary({
      id: refund.id,
      paymentId: refund.paymentId,
      merchantId: refund.merchantId,
      externalId: refund.externalId,
      amountMinor: refund.amountMinor,
      currency: refund.currency,
      callbacks: refund.callbackUrl !== null,
    }),
  };
}

/** The API's and the sweeper's side of the refund workflow: how it is started and sent messages. */
export function createRefundGateway(deps: {
  client: Client;
  settings: RefundGatewaySettings;
  /** Hints of settled refunds (absent: the API waits for the workflow's Update). */
  outcomes?: { waitForRefund(refundId: string): HintWait<RefundOutcomeHint> };
}) {
  const { client, settings, outcomes } = deps;
  return {
    workflowId: refundWorkflowId,

    /** Starts the refund's workflow (the sweeper); a running one is left alone, a closed one never started again. */
    start(refund: RefundStart): Promise<StartAnswer> {
      return startAnswer(() => client.workflow.start(refundWorkflowV2, startOptions(refund, settings)));
    },

    /**
     * A pending refund whose workflow ended (completed, failed, terminated) gets a new run (the
     * sweeper; decision 0059). It starts where a run that met an ambiguous answer is: it asks the
     * provider what became of the refund (by its key; sent again with that key if never received),
     * then polls until settled. A running one is left alone.
     */
    revive(refund: RefundStart): Promise<ReviveAnswer> {
      const options = startOptions(refund, settings);
      const [input] = options.args;
      return reviveAnswer(client, refundWorkflowId(refund.id), () =>
        client.workflow.start(refundWorkflowV2, {
          ...options,
          args: [
            {
              ...input,
              resume: {
                first: { kind: 'pending' },
                pollSeconds: settings.refundPollInitialSeconds,
                nextPollAtMs: Date.now() + settings.refundPollInitialSeconds * 1000,
                ambiguous: true,
                providerEvent: false,
                runs: 0,
              },
            },
          ],
          workflowIdReusePolicy: 'ALLOW_DUPLICATE',
        }),
      );
    },

    /**
     * One round trip: Update-with-Start of `refund-<id>` (the refund is committed), waiting
     * (bounded) for its first outcome; a replay of a closed workflow reads the row.
     */
    async startAndAwaitOutcome(refund: RefundStart): Promise<RefundStartResult> {
      const op = new WithStartWorkflowOperation(refundWorkflowV2, startOptions(refund, settings));
      const ask = () => client.workflow.executeUpdateWithStart(refundOutcomeUpdate, { startWorkflowOperation: op });
      try {
        return await client.withDeadline(Date.now() + (settings.refundWaitMs ?? 0), () =>
          // The hint comes when the refund's settlement commits, before the workflow task that
          // completes the Update: the answer is then the refund it carries (or read from PostgreSQL).
          outcomes ? firstOfAnswerAndHint(ask, outcomes.waitForRefund(refund.id)) : ask(),
        );
      } catch (err) {
        const answer = workflowAnswerOf(err);
        // Closed, or settled (the Update's validator rejects it): PostgreSQL has the outcome.
        if (answer === 'already_started' || answer === 'update_refused') return { kind: 'settled' };
        // No answer in time with Temporal there: the refund is in flight (200 pending).
        // An Update aborted with its workflow task (a worker died mid-task) has no outcome either.
        if (withoutOutcome(answer)) return unansweredOutcome(client, answer);
        throw err;
      }
    },

    /** The provider's webhook: the workflow asks the provider itself. A closed run has settled already. */
    providerEvent(refundId: string): Promise<'delivered' | 'not_found'> {
      return signalAnswer(() =>
        client.workflow.getHandle(refundWorkflowId(refundId)).signal(providerRefundEventSignal),
      );
    },
  };
}

export type RefundGateway = ReturnType<typeof createRefundGateway>;
