import { untilKnown } from '../untilKnown';
import type { PaymentState } from './state';

/** The payment's time is up: voided at the provider, unless the customer paid just before. */
export async function expire(s: PaymentState): Promise<void> {
  s.follow(await untilKnown((q) => q.expireProviderPayment(s.paymentId), s.input.stuckAfterSeconds));
}
