import type { CancelRequest } from '../subscriptionApi';
import { records } from './activities';
import { follow } from './outbox';
import type { SubscriptionState } from './state';

/**
 * Cancels the record (open invoices voided, the current period kept, the hosted page closed),
 * with its email and event. A record that is gone was discarded: nothing to cancel.
 */
export async function cancelStep(s: SubscriptionState, req: CancelRequest): Promise<void> {
  const outbox = await records.cancelSubscriptionRecord({ subscriptionId: s.input.subscriptionId, ...req });
  if (outbox) follow(s, outbox);
  else s.discarded = true;
}
