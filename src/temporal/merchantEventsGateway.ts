import type { Client } from '@temporalio/client';
import { merchantEventsWorkflowSummary } from '../rules/workflowSummaries';
import { merchantEventsWorkflow } from '../../workflows/merchantEvents';
import { MerchantIdKey } from '../../workflows/searchAttributes';
import { startAnswer, type StartAnswer } from './workflowAnswers';

/** The workflow that relays one merchant event the sweeper found undelivered: one at a time per row. */
export const merchantEventRelayWorkflowId = (eventId: string) => `merchant-events-relay-${eventId}`;

/** The sweeper's side of the merchant-event delivery workflow: the relay of an event its run never handed on. */
export function createMerchantEventsGateway(deps: {
  client: Client;
  settings: { taskQueue: string; callbackRetryInitialSeconds: number };
}) {
  const { client, settings } = deps;
  return {
    relayWorkflowId: merchantEventRelayWorkflowId,

    /**
     * Starts the delivery of one event. A relay already running is left alone. A closed one may
     * run again: the sweeper asks only for a row undelivered and unheld (never attempted, or a
     * claim that lapsed: a delivery lost mid-way); a relay that gave up left its row released with
     * the last error, never a candidate again.
     */
    startRelay(event: { eventId: string; merchantId: string; type: string; resourceId: string }): Promise<StartAnswer> {
      return startAnswer(() =>
        client.workflow.start(merchantEventsWorkflow, {
          workflowId: merchantEventRelayWorkflowId(event.eventId),
          taskQueue: settings.taskQueue,
          args: [{ eventIds: [event.eventId], callbackRetryInitialSeconds: settings.callbackRetryInitialSeconds }],
          workflowIdConflictPolicy: 'USE_EXISTING',
          workflowIdReusePolicy: 'ALLOW_DUPLICATE',
          typedSearchAttributes: [{ key: MerchantIdKey, value: event.merchantId }],
          ...merchantEventsWorkflowSummary({
            merchantId: event.merchantId,
            eventIds: [event.eventId],
            type: event.type,
            resourceId: event.resourceId,
            startedBy: 'sweeper',
          }),
        }),
      );
    },
  };
}

export type MerchantEventsGateway = ReturnType<typeof createMerchantEventsGateway>;
