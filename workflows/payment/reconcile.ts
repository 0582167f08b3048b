import { untilKnown } from '../untilKnown';
import type { PaymentState } from './state';

/** After an ambiguous attempt: the provider is asked (as long as it takes) what became of it. */
export async function reconcileAmbiguous(s: PaymentState): Promise<void> {
  s.follow(await ask(s));
  s.ambiguous = false;
}

/**
 * A provider webhook arrived: the provider's state is looked at (webhooks are hints, never
 * trusted as such). One arriving meanwhile is looked at on the next turn.
 */
export async function reconcileProviderEvent(s: PaymentState): Promise<void> {
  s.providerEvent = false;
  s.follow(await ask(s));
}

/** Asked until it answers something we know; stuck (marked, never failed) past `stuckAfterSeconds`. */
function ask(s: PaymentState) {
  return untilKnown((q) => q.reconcileProviderPayment(s.paymentId), s.input.stuckAfterSeconds);
}
