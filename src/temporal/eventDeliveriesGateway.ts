import type { Client } from '@temporalio/client';
import { eventDeliveriesWorkflowSummary } from '../rules/workflowSummaries';
import { eventDeliveriesWorkflow } from '../../workflows/eventDeliveries';
import { deliveriesDueSignal, eventDeliveriesWorkflowId } from '../../workflows/eventDeliveriesApi';
import { MerchantIdKey } from '../../workflows/searchAttributes';
import { startAnswer, type StartAnswer } from './workflowAnswers';

/**
 * How the platform reaches a merchant's event delivery workflow (decision 0069): the delivery
 * kicker and the orphan sweeper wake it; it starts when none runs.
 */
export function createEventDeliveriesGateway(deps: {
  client: Client;
  /** The delivery task queue (deliveryTaskQueue of TEMPORAL_TASK_QUEUE). */
  settings: { taskQueue: string };
}) {
  const { client, settings } = deps;
  return {
    /** Tells the merchant's delivery workflow that deliveries are due, starting it if none runs. */
    wake(merchantId: string): Promise<StartAnswer> {
      return startAnswer(() =>
        client.workflow.signalWithStart(eventDeliveriesWorkflow, {
          workflowId: eventDeliveriesWorkflowId(merchantId),
          taskQueue: settings.taskQueue,
          args: [{ merchantId }],
          signal: deliveriesDueSignal,
          signalArgs: [],
          typedSearchAttributes: [{ key: MerchantIdKey, value: merchantId }],
          ...eventDeliveriesWorkflowSummary({ merchantId }),
        }),
      );
    },
  };
}

export type EventDeliveriesGateway = ReturnType<typeof createEventDeliveriesGateway>;
