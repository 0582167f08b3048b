import { patientActivities } from '../providerActivities';
import type { RefundState } from './state';

/**
 * Asks the provider (by reference_id, as long as it takes) where the refund stands; a settled
 * or vanished refund ends phase 2. A webhook arriving meanwhile is looked at on the next turn.
 */
export async function reconcile(s: RefundState): Promise<void> {
  s.providerEvent = false;
  const kind = await patientActivities.reconcileProviderRefund(s.refundId);
  s.ambiguous = false;
  s.settled = kind === 'settled' || kind === 'missing';
}
