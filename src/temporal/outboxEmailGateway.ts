import type { Client } from '@temporalio/client';
import { emailRelayWorkflowSummary } from '../rules/workflowSummaries';
import { outboxEmailWorkflow } from '../../workflows/outboxEmail';
import { MerchantIdKey } from '../../workflows/searchAttributes';
import { startAnswer, type StartAnswer } from './workflowAnswers';

/** The workflow that relays one outbox email: one per row, ever. */
export const emailRelayWorkflowId = (emailId: string) => `email-relay-${emailId}`;

/** The sweeper's side of the outbox email relay: the workflow that sends one email its run never sent. */
export function createOutboxEmailGateway(deps: { client: Client; settings: { taskQueue: string } }) {
  const { client, settings } = deps;
  return {
    workflowId: emailRelayWorkflowId,

    /**
     * Starts the relay of one email. A relay already running is left alone; a closed one is never
     * started again (its row was sent, or it gave up and the row keeps the last error for operators).
     */
    start(email: { emailId: string; merchantId: string }): Promise<StartAnswer> {
      return startAnswer(() =>
        client.workflow.start(outboxEmailWorkflow, {
          workflowId: emailRelayWorkflowId(email.emailId),
          taskQueue: settings.taskQueue,
          args: [{ emailId: email.emailId }],
          workflowIdConflictPolicy: 'USE_EXISTING',
          workflowIdReusePolicy: 'REJECT_DUPLICATE',
          typedSearchAttributes: [{ key: MerchantIdKey, value: email.merchantId }],
          ...emailRelayWorkflowSummary({ emailId: email.emailId, merchantId: email.merchantId }),
        }),
      );
    },
  };
}

export type OutboxEmailGateway = ReturnType<typeof createOutboxEmailGateway>;
