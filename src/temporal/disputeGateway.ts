import { WorkflowExecutionAlreadyStartedError, type Client } from '@temporalio/client';
import { disputeWorkflow } from '../../workflows/dispute';
import { disputeEventSignal, disputeWorkflowId, type DisputeWorkflowInput } from '../../workflows/disputeApi';
import { MerchantIdKey, PaymentIdKey } from '../../workflows/searchAttributes';
import { formatMoney } from '../rules/money';
import { reviveAnswer, signalAnswer, type ReviveAnswer } from './workflowAnswers';

/** The dispute a workflow is started for (committed by the webhook route). */
export interface DisputeStart {
  id: string;
  paymentId: string;
  merchantId: string;
  amountMinor: number;
  currency: string;
  createdAt: Date;
  evidenceDueBy: Date;
  /** The payment's: the dispute's events go where its payment's go. */
  callbackUrl: string | null;
}

export interface DisputeGatewaySettings {
  taskQueue: string;
  callbackRetryInitialSeconds: number;
  /** WORKFLOW_STUCK_AFTER_SECONDS: a check without an answer the code knows marks the run `Stuck` past this. */
  stuckAfterSeconds?: number;
}

/**
 * The API's side of the dispute workflow (workflows/dispute): started, or told of a change, in
 * one call (Signal-with-Start) once the dispute's row is committed. A closed run (the dispute was
 * decided) is never started again: a late webhook for it changes nothing.
 */
export function createDisputeGateway(deps: { client: Client; settings: DisputeGatewaySettings }) {
  const { client, settings } = deps;
  const gateway = {
    workflowId: disputeWorkflowId,

    /** Started, or (running) told to look; a closed run is never started again (the sweeper's `start` too). */
    async startOrSignal(dispute: DisputeStart): Promise<'started' | 'closed'> {
      try {
        await client.workflow.signalWithStart(disputeWorkflow, startOptions(dispute, 'REJECT_DUPLICATE'));
        return 'started';
      } catch (err) {
        if (err instanceof WorkflowExecutionAlreadyStartedError) return 'closed';
        throw err;
      }
    },

    /**
     * An open dispute whose workflow ended (completed, failed, terminated) gets a new run (the
     * sweeper; decision 0059), which follows it until the processor decides. A running one is left alone.
     */
    revive(dispute: DisputeStart): Promise<ReviveAnswer> {
      return reviveAnswer(client, disputeWorkflowId(dispute.id), () =>
        client.workflow.signalWithStart(disputeWorkflow, startOptions(dispute, 'ALLOW_DUPLICATE')),
      );
    },

    /** The API moved the dispute (evidence sent, accepted): the workflow looks at once. */
    providerEvent(disputeId: string): Promise<'delivered' | 'not_found'> {
      return signalAnswer(() => client.workflow.getHandle(disputeWorkflowId(disputeId)).signal(disputeEventSignal));
    },
  };
  /** The same id, input, search attributes and summary for every start; a closed run per `reuse`. */
  function startOptions(dispute: DisputeStart, reuse: 'REJECT_DUPLICATE' | 'ALLOW_DUPLICATE') {
    const input: DisputeWorkflowInput = {
      disputeId: dispute.id,
      paymentId: dispute.paymentId,
      merchantId: dispute.merchantId,
      openedAtMs: dispute.createdAt.getTime(),
      evidenceDueByMs: dispute.evidenceDueBy.getTime(),
      callbackRetryInitialSeconds: settings.callbackRetryInitialSeconds,
      callbacks: dispute.callbackUrl !== null,
      ...(settings.stuckAfterSeconds ? { stuckAfterSeconds: settings.stuckAfterSeconds } : {}),
    };
    return {
      workflowId: disputeWorkflowId(dispute.id),
      taskQueue: settings.taskQueue,
      args: [input] as [DisputeWorkflowInput],
      signal: disputeEventSignal,
      signalArgs: [] as [],
      workflowIdReusePolicy: reuse,
      typedSearchAttributes: [
        { key: MerchantIdKey, value: dispute.merchantId },
        { key: PaymentIdKey, value: dispute.paymentId },
      ],
      staticSummary: `Dispute ${formatMoney(dispute.amountMinor, dispute.currency)} merchant ${dispute.merchantId}`,
      staticDetails: `Dispute ${dispute.id} of payment ${dispute.paymentId}`,
    };
  }
  return { ...gateway, start: (dispute: DisputeStart) => gateway.startOrSignal(dispute) };
}

export type DisputeGateway = ReturnType<typeof createDisputeGateway>;
