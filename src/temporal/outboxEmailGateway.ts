import type { Client } from '@temporalio/client';
import { emailRelayWorkflowSummary } from '../rules/workflowSummaries';
import { outboxEmailWorkflow } from '../../workflows/outboxEmail';
import { MerchantIdKey } from '../../workflows/searchAttributes';
import { startAnswer, type StartAnswer } from './workflowAnswers';

/** The workflow that relays one outbox email: one at a time per row. */
export const emailRelayWorkflowId = (emailId: string) => `email-relay-${emailId}`;

/** The sweeper's side of the outbox email relay: the workflow that sends one email its run never sent. */
export function createOutboxEmailGateway(deps: { client: Client; settings: { taskQueue: string } }) {
  const { client, settings } = deps;
  return {
    workflowId: emailRelayWorkflowId,

    /**
     * Starts the relay of one email. A relay already running is left alone. A closed one may run
     * again: the sweeper asks only for a row unsent and unheld (never attempted, or a claim that
     * lapsed: a send lost mid-way); a relay that gave up left its row released with the last error
     * for operators, never a candidate again.
     */
    start(email: { emailId: string; merchantId: string }): Promise<StartAnswer> {
      return startAnswer(() =>
        client.workflow.start(outboxEmailWorkflow, {
          workflowId: emailRelayWorkflowId(email.emailId),
          taskQueue: settings.taskQueue,
          args: [{ emailId: email.emailId }],
          workflowIdConflictPolicy: 'USE_EXISTING',
          workflowIdReusePolicy: 'ALLOW_DUPLICATE',
          typedSearchAttributes: [{ key: MerchantIdKey, value: email.merchantId }],
          ...emailRelayWorkflowSummary({ emailId: email.emailId, merchantId: email.merchantId }),
        }),
      );
    },
  };
}

export type OutboxEmailGateway = ReturnType<typeof createOutboxEmailGateway>;
