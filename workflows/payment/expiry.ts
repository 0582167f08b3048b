import { patientActivities } from '../providerActivities';
import type { PaymentState } from './state';

/** The payment's time is up: voided at the provider, unless the customer paid just before. */
export async function expire(s: PaymentState): Promise<void> {
  s.follow(await patientActivities.expireProviderPayment(s.paymentId));
}
