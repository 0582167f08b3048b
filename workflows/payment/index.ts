import { allHandlersFinished, condition, patched } from '@temporalio/workflow';
import type { PaymentWorkflowInput } from '../paymentApi';
import { deliverEvents } from '../deliverEvents';
import { HANDLERS_DRAINED, LOCAL_PROVIDER_ATTEMPT, hasChangeSinceV2, type HasChange } from '../patches';
import { announce } from './announce';
import { attemptIfRequested } from './attempt';
import { expire } from './expiry';
import { installHandlers } from './handlers';
import { reconcileAmbiguous, reconcileProviderEvent } from './reconcile';
import { PaymentState, type PaymentStatus } from './state';
import { waitForProcessor, waitForRequest } from './waits';

/**
 * One payment, from the merchant's request to a final status and the merchant's callbacks.
 * A payment is captured at most once: every attempt and every question to the provider uses
 * the payment id as idempotency key, and an ambiguous answer is never retried blindly: the
 * workflow asks the provider until it knows.
 *
 * Every payment the API or the sweeper starts runs this type: it began with every change listed
 * in `hasChangeSinceV2`, so its history carries no marker for them.
 */
export async function paymentWorkflowV2(input: PaymentWorkflowInput): Promise<{ state: PaymentStatus }> {
  return runPayment(input, hasChangeSinceV2);
}

/** Payments started before `paymentWorkflowV2`: the same code, each change behind its marker. */
export async function paymentWorkflow(input: PaymentWorkflowInput): Promise<{ state: PaymentStatus }> {
  return runPayment(input, patched);
}

/**
 * A small loop over an explicit state object (./state.ts) and named steps: the attempt
 * (./attempt.ts), reconciliation (./reconcile.ts), expiry (./expiry.ts), the wait and its
 * hand-over (./waits.ts), the messages (./handlers.ts).
 *
 * Since BOUNDED_HISTORIES a long run (repeats while the provider is down, webhooks while the
 * customer is on the hosted page) continues as new (same type) at its wait, carrying its state
 * in `resume`.
 */
async function runPayment(input: PaymentWorkflowInput, hasChange: HasChange): Promise<{ state: PaymentStatus }> {
  const s = new PaymentState(input, hasChange);
  installHandlers(s);
  while (s.open()) {
    if (s.announce) await announce(s);
    if (s.ambiguous) {
      await reconcileAmbiguous(s);
      continue;
    }
    // Decided by the processor, however long it takes: no expiry (only `processing` answers lead here).
    if (s.awaitsProcessor()) {
      await waitForProcessor(s);
      if (s.providerEvent) await reconcileProviderEvent(s);
      continue;
    }
    const remainingMs = s.expiresAtMs - Date.now();
    if (remainingMs <= 0) {
      await expire(s);
      // An authentication completed just before the expiry may leave the payment processing.
      if (!s.awaitsProcessor()) break;
      continue;
    }
    await waitForRequest(s, remainingMs);
    if (s.providerEvent) await reconcileProviderEvent(s);
    await attemptIfRequested(s);
  }
  return finish(s);
}

/** The last step: waiting submits answered, handlers finished, then the merchant's callbacks. */
async function finish(s: PaymentState): Promise<{ state: PaymentStatus }> {
  // Let any update waiting on the last attempt answer before the run ends (drained, not just asked).
  s.completedAttempts++;
  // Older runs went on at once (a no-op check), and their histories replay so.
  if (s.hasChange(HANDLERS_DRAINED)) await condition(allHandlersFinished);
  // Since LOCAL_PROVIDER_ATTEMPT the API says whether there is a callbackUrl at all.
  const callbacks = !s.hasChange(LOCAL_PROVIDER_ATTEMPT) || s.input.callbacks !== false;
  if (s.status === 'settled' && callbacks) await deliverEvents(s.paymentId, s.input.callbackRetryInitialSeconds);
  return { state: s.status };
}
