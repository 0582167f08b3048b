import { allHandlersFinished, condition, continueAsNew } from '@temporalio/workflow';
import type { PaymentWorkflowInput } from '../paymentApi';
import { PAYMENT_PROCESSING_WAIT } from '../patches';
import { PROCESSING_POLL_MAX_MS, type PaymentState } from './state';

/**
 * The loop's one wait: until an attempt is asked for, a webhook arrives or the payment expires
 * (`remainingMs`). Before it, a long idle run hands over to a new one; while waiting, a run that
 * grows long (repeats, webhooks) wakes to hand over on the next turn.
 */
export async function waitForRequest(s: PaymentState, remainingMs: number): Promise<void> {
  await handOverIfLong(s);
  await condition(() => s.attemptRequested || s.providerEvent || s.isLong(), remainingMs);
}

/**
 * A `processing` payment's wait (no expiry: the processor decides, however long it takes): until
 * a webhook arrives or, without one, `pollDelayMs`, after which the provider is asked (the caller
 * reconciles) and the next wait doubles, up to a day. A long run hands over as at the other wait.
 * Marked (PAYMENT_PROCESSING_WAIT) when a run first takes it; runs of older code never reach it.
 */
export async function waitForProcessor(s: PaymentState): Promise<void> {
  s.hasChange(PAYMENT_PROCESSING_WAIT);
  await handOverIfLong(s);
  const woken = await condition(() => s.providerEvent || s.isLong(), s.pollDelayMs);
  if (woken && !s.providerEvent) return; // long: hand over on the next turn
  if (!woken) {
    s.providerEvent = true; // nothing heard: ask the provider
    s.pollDelayMs = Math.min(s.pollDelayMs * 2, PROCESSING_POLL_MAX_MS);
  }
}

/**
 * At the wait, idle (no attempt asked for, no webhook to look at): a long run hands its state
 * to a new one. Submits accepted so far have their answers; new ones are refused meanwhile.
 */
async function handOverIfLong(s: PaymentState): Promise<void> {
  if (s.attemptRequested || s.providerEvent || !s.isLong()) return;
  s.closing = true;
  await condition(allHandlersFinished);
  await continueAsNew<(input: PaymentWorkflowInput) => Promise<unknown>>({ ...s.input, resume: s.cursor() });
}
