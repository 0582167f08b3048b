import { allHandlersFinished, condition, continueAsNew } from '@temporalio/workflow';
import type { PaymentWorkflowInput } from '../paymentApi';
import type { PaymentState } from './state';

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
 * At the wait, idle (no attempt asked for, no webhook to look at): a long run hands its state
 * to a new one. Submits accepted so far have their answers; new ones are refused meanwhile.
 */
async function handOverIfLong(s: PaymentState): Promise<void> {
  if (s.attemptRequested || s.providerEvent || !s.isLong()) return;
  s.closing = true;
  await condition(allHandlersFinished);
  await continueAsNew<(input: PaymentWorkflowInput) => Promise<unknown>>({ ...s.input, resume: s.cursor() });
}
