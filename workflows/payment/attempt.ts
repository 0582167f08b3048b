import type { SubmitOutcome } from '../paymentApi';
import { failureType, outcomeOfFailure, PROVIDER_FAILURE } from '../failures';
import { START_ATTEMPT_LOCAL } from '../patches';
import { attemptActivities, commitBeforeProviderCall, localAttempts, remoteAttempts } from '../providerActivities';
import type { PaymentState } from './state';

/**
 * The attempt asked for since the last wait, if any: the request is always consumed, so a
 * duplicate arriving while the customer is on the hosted page does not leave it set (the wait
 * would then never block again). Only a payment still awaiting its attempt is attempted.
 */
export async function attemptIfRequested(s: PaymentState): Promise<void> {
  const wantsAttempt = s.attemptRequested;
  s.attemptRequested = false;
  if (wantsAttempt && s.status === 'awaiting_attempt') {
    s.lastOutcome = await attempt(s);
    s.completedAttempts++;
  }
}

/**
 * One provider attempt (the payment id is its idempotency key), and what it established. An
 * ambiguous failure marks the payment for reconciliation: never guessed, never retried blindly.
 */
async function attempt(s: PaymentState): Promise<SubmitOutcome> {
  const requestedByStart = s.startAttempt;
  s.startAttempt = false;
  // A request the start committed is called from this task (START_ATTEMPT_LOCAL); a submit
  // Update's acceptance is saved in the history before the provider is asked.
  const calls =
    requestedByStart && s.hasChange(START_ATTEMPT_LOCAL)
      ? localAttempts
      : (await commitBeforeProviderCall(s.hasChange)) === 'activity'
        ? remoteAttempts
        : attemptActivities(s.hasChange);
  try {
    const result = await calls.attemptProviderPayment(s.paymentId);
    if (result.kind === 'rejected') {
      s.setStatus('discarded');
      return result;
    }
    s.follow(result.kind);
    // `processing`: no further answer to wait for; the API reads the payment.
    return result.kind === 'created' || result.kind === 'action' ? { kind: 'created' } : { kind: 'settled' };
  } catch (err) {
    const type = failureType(err);
    // Anything but `unavailable` may have happened after the provider acted: find out, never guess.
    if (type !== PROVIDER_FAILURE.unavailable) s.ambiguous = true;
    return { kind: outcomeOfFailure(type) };
  }
}
