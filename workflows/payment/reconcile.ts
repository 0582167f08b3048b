import { patientActivities } from '../providerActivities';
import type { PaymentState } from './state';

/** After an ambiguous attempt: the provider is asked (as long as it takes) what became of it. */
export async function reconcileAmbiguous(s: PaymentState): Promise<void> {
  s.follow(await patientActivities.reconcileProviderPayment(s.paymentId));
  s.ambiguous = false;
}

/**
 * A provider webhook arrived: the provider's state is looked at (webhooks are hints, never
 * trusted as such). One arriving meanwhile is looked at on the next turn.
 */
export async function reconcileProviderEvent(s: PaymentState): Promise<void> {
  s.providerEvent = false;
  s.follow(await patientActivities.reconcileProviderPayment(s.paymentId));
}
