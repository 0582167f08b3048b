import { deliverEventIds } from './deliverEvents';

export interface MerchantEventsInput {
  eventIds: string[];
  callbackRetryInitialSeconds: number;
}

/**
 * Delivers a batch of merchant events on its own, so a long-lived workflow (a subscription)
 * never waits days for a merchant's endpoint: started as an abandoned child.
 */
export async function merchantEventsWorkflow(input: MerchantEventsInput): Promise<void> {
  await deliverEventIds(input.eventIds, input.callbackRetryInitialSeconds);
}
