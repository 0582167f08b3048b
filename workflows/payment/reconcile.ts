import { continueAsNew } from '@temporalio/workflow';
import type { PaymentWorkflowInput } from '../paymentApi';
import { untilKnown, type HandOver } from '../untilKnown';
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
  // Handed over with the question still open (`ambiguous`): the new run asks again at once.
  return untilKnown(
    (q) => q.reconcileProviderPayment(s.paymentId),
    s.input.stuckAfterSeconds,
    paymentHandOver(s, { ambiguous: true }),
  );
}

/**
 * A run stuck for long continues as new (bounded runs only, since BOUNDED_HISTORIES) with its
 * state, as at its waits (./waits.ts); never while an attempt is requested (that run makes it).
 */
export function paymentHandOver(
  s: PaymentState,
  override: Partial<NonNullable<PaymentWorkflowInput['resume']>> = {},
): HandOver | undefined {
  if (!s.bounded) return undefined;
  return {
    historyEventLimit: s.input.historyEventLimit,
    ready: () => !s.attemptRequested,
    continueAsNew: () =>
      continueAsNew<(input: PaymentWorkflowInput) => Promise<unknown>>({
        ...s.input,
        resume: { ...s.cursor(), ...override },
      }),
  };
}
