import { defineSignal } from '@temporalio/workflow';

/**
 * The event delivery workflow's messages, defined once for the kicker and the workflow
 * (decision 0069). One run per merchant: workflow id `event-deliveries-<merchantId>`, on the
 * delivery task queue (src/temporal/taskQueues.ts).
 */
export interface EventDeliveriesInput {
  merchantId: string;
}

export const eventDeliveriesWorkflowId = (merchantId: string) => `event-deliveries-${merchantId}`;

/** New deliveries are due: deliver them now instead of at the next planned time. */
export const deliveriesDueSignal = defineSignal('deliveriesDue');
