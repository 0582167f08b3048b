import type { WorkflowStartOptions } from '@temporalio/client';
import type { refundWorkflowV2 } from '../../workflows/refund';
import { refundWorkflowId, type RefundWorkflowInput } from '../../workflows/refundApi';
import { ExternalIdKey, MerchantIdKey, PaymentIdKey, RefundStatusKey } from '../../workflows/searchAttributes';
import { refundWorkflowSummary } from '../rules/workflowSummaries';

/**
 * How a refund's workflow is started, by the API (Update-with-Start, after the refund is
 * committed) and by the sweeper that gives a refund left without one its workflow: the same id,
 * input, policies, search attributes and summary for the Temporal UI.
 */
export function refundWorkflowStartOptions(
  refund: {
    id: string;
    externalId: string;
    paymentId: string;
    merchantId: string;
    amountMinor: number;
    currency: string;
    callbackUrl: string | null;
  },
  settings: { taskQueue: string; callbackRetryInitialSeconds: number; refundPollInitialSeconds: number },
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
