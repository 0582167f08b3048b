import { untilKnown } from '../untilKnown';
import { paymentHandOver } from './reconcile';
import type { PaymentState } from './state';

/** The payment's time is up: voided at the provider, unless the customer paid just before. */
export async function expire(s: PaymentState): Promise<void> {
  // Handed over as it is: the new run finds the time up, and asks again at once.
  s.follow(
    await untilKnown((q) => q.expireProviderPayment(s.paymentId), s.input.stuckAfterSeconds, paymentHandOver(s)),
  );
}
