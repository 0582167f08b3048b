import type { Client } from '@temporalio/client';
import { setupPageWorkflowSummary } from '../rules/workflowSummaries';
import { setupPageWorkflow, type SetupPageInput } from '../../workflows/setupPage';
import { MerchantIdKey } from '../../workflows/searchAttributes';
import { startAnswer, type StartAnswer } from './workflowAnswers';

/** The workflow that watches one card setup page: named by the card's payment method id. */
export const setupPageWorkflowId = (paymentMethodId: string) => `setup-page-${paymentMethodId}`;

/** The API's side of the setup page workflow (decision 0089). */
export function createSetupPageGateway(deps: {
  client: Client;
  settings: { taskQueue: string; setupPagePollSeconds?: number };
}) {
  const { client, settings } = deps;
  return {
    workflowId: setupPageWorkflowId,

    /** Starts the watch of a page just created (a page's id is new: one start per page). */
    start(page: Omit<SetupPageInput, 'pollSeconds'>): Promise<StartAnswer> {
      return startAnswer(() =>
        client.workflow.start(setupPageWorkflow, {
          workflowId: setupPageWorkflowId(page.paymentMethodId),
          taskQueue: settings.taskQueue,
          args: [{ ...page, ...(settings.setupPagePollSeconds ? { pollSeconds: settings.setupPagePollSeconds } : {}) }],
          workflowIdConflictPolicy: 'USE_EXISTING',
          typedSearchAttributes: [{ key: MerchantIdKey, value: page.merchantId }],
          ...setupPageWorkflowSummary(page),
        }),
      );
    },
  };
}

export type SetupPageGateway = ReturnType<typeof createSetupPageGateway>;
