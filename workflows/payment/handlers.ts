import { ApplicationFailure, condition, setHandler } from '@temporalio/workflow';
import {
  PAYMENT_UPDATE_REFUSED,
  providerPaymentEventSignal,
  submitPaymentUpdate,
  type SubmitOutcome,
} from '../paymentApi';
import type { PaymentState } from './state';

/**
 * The workflow's messages: the merchant's submit (an Update that asks for an attempt and answers
 * its outcome) and the provider's webhook (a signal the loop looks at).
 */
export function installHandlers(s: PaymentState): void {
  setHandler(submitPaymentUpdate, () => submit(s), { validator: () => refuseSubmit(s) });
  setHandler(providerPaymentEventSignal, () => {
    s.providerEvent = true;
  });
}

/** A merchant request: attempt it if nothing is known yet (the loop makes it), then answer. */
async function submit(s: PaymentState): Promise<SubmitOutcome> {
  if (s.status === 'settled') return { kind: 'settled' };
  if (s.status === 'awaiting_customer' || s.status === 'awaiting_authentication') return { kind: 'created' };
  // Decided by the processor later: the API reads the payment (`processing`).
  if (s.status === 'awaiting_processor') return { kind: 'settled' };
  if (s.status === 'discarded' || s.ambiguous) return s.lastOutcome;
  const target = s.completedAttempts + 1;
  s.attemptRequested = true;
  await condition(() => s.completedAttempts >= target || s.settled());
  return s.settled() ? { kind: 'settled' } : s.lastOutcome;
}

/** A repeat for a settled payment: rejected, so it costs no history; the API reads PostgreSQL. */
function refuseSubmit(s: PaymentState): void {
  if (s.statusAttribute && s.status === 'settled') {
    throw ApplicationFailure.nonRetryable('The payment is settled.', PAYMENT_UPDATE_REFUSED.settled);
  }
  if (s.closing) {
    throw ApplicationFailure.nonRetryable('Handing over to a new run.', PAYMENT_UPDATE_REFUSED.handingOver);
  }
}
