import type { WorkflowStartOptions } from '@temporalio/client';
import type { Payment } from '../db/entities';
import type { paymentWorkflowV2 } from '../../workflows/payment';
import { paymentWorkflowId } from '../../workflows/paymentApi';
import { ExternalIdKey, MerchantIdKey, PaymentStatusKey } from '../../workflows/searchAttributes';
import { paymentWorkflowSummary } from '../rules/workflowSummaries';

/**
 * How a payment's workflow is started, by the API (Update-with-Start) and by the sweeper that
 * gives orphaned payments their workflow: the same id, input, policies, search attributes and
 * summary for the Temporal UI.
 */
export function paymentWorkflowStartOptions(
  payment: Pick<
    Payment,
    'id' | 'externalId' | 'expiresAt' | 'callbackUrl' | 'amountMinor' | 'currency' | 'environment'
  > & { merchant: { id: string } },
  settings: { taskQueue: string; callbackRetryInitialSeconds: number },
  /** The API starting the run with the merchant's submit (see PaymentWorkflowInput). */
  { attemptOnStart = false }: { attemptOnStart?: boolean } = {},
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
