import { untilKnown } from '../untilKnown';
import type { RefundState } from './state';

/**
 * Asks the provider (by reference_id, as long as it takes) where the refund stands; a settled
 * or vanished refund ends phase 2. A webhook arriving meanwhile is looked at on the next turn.
 * An answer the code does not know keeps the refund pending: asked again, the run marked stuck
 * past `stuckAfterSeconds` (workflows/untilKnown.ts), never failed.
 */
export async function reconcile(s: RefundState): Promise<void> {
  s.providerEvent = false;
  const kind = await untilKnown((q) => q.reconcileProviderRefund(s.refundId), s.input.stuckAfterSeconds);
  s.ambiguous = false;
  s.settled = kind === 'settled' || kind === 'missing';
}
