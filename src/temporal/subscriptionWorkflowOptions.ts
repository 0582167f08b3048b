import type { WorkflowStartOptions } from '@temporalio/client';
import type { Plan } from '../rules/subscriptionPlan';
import type { subscriptionWorkflow } from '../../workflows/subscription';
import { subscriptionWorkflowId, type SubscriptionWorkflowInput } from '../../workflows/subscriptionApi';
import { ExternalIdKey, MerchantIdKey, SubscriptionStatusKey } from '../../workflows/searchAttributes';
import { subscriptionWorkflowSummary } from '../rules/workflowSummaries';
import { subscriptionTaskQueue } from './taskQueues';

/** How a subscription's workflow is started: its id, input, policies, search attributes and UI summary. */
export function subscriptionWorkflowStartOptions(
  subscription: {
    id: string;
    merchantId: string;
    externalId: string;
    currency: string;
    environment?: string;
    cardToken: string | null;
    callbackUrl: string | null;
    plan: Plan;
  },
  settings: {
    /** The main task queue (TEMPORAL_TASK_QUEUE): the workflow runs on its subscription queue. */
    taskQueue: string;
    billingDaySeconds: number;
    subscriptionAuthorizationExpirySeconds: number;
    callbackRetryInitialSeconds: number;
    historyEventLimit?: number;
  },
): WorkflowStartOptions<typeof subscriptionWorkflow> & { workflowIdConflictPolicy: 'USE_EXISTING' } {
  const input: SubscriptionWorkflowInput = {
    subscriptionId: subscription.id,
    merchantId: subscription.merchantId,
    externalId: subscription.externalId,
    plan: subscription.plan,
    needsAuthorization: subscription.cardToken === null,
    billingDaySeconds: settings.billingDaySeconds,
    authorizationExpirySeconds: settings.subscriptionAuthorizationExpirySeconds,
    callbackRetryInitialSeconds: settings.callbackRetryInitialSeconds,
    callbacks: subscription.callbackUrl !== null,
    ...(settings.historyEventLimit ? { historyEventLimit: settings.historyEventLimit } : {}),
  };
  return {
    workflowId: subscriptionWorkflowId(subscription.id),
    taskQueue: subscriptionTaskQueue(settings.taskQueue),
    args: [input],
    workflowIdConflictPolicy: 'USE_EXISTING',
    // One execution chain per subscription: once closed (cancelled), never started again.
    workflowIdReusePolicy: 'REJECT_DUPLICATE',
    typedSearchAttributes: [
      { key: MerchantIdKey, value: subscription.merchantId },
      { key: ExternalIdKey, value: subscription.externalId },
      { key: SubscriptionStatusKey, value: 'created' },
    ],
    // Not the card token: only whether the merchant gave one.
    ...subscriptionWorkflowSummary({
      id: subscription.id,
      merchantId: subscription.merchantId,
      externalId: subscription.externalId,
      currency: subscription.currency,
      plan: subscription.plan,
      ...(subscription.environment ? { environment: subscription.environment } : {}),
      needsAuthorization: input.needsAuthorization,
      callbacks: input.callbacks,
    }),
  };
}
