import { continueAsNew } from '@temporalio/workflow';
import type { RefundWorkflowInput } from '../refundApi';
import { untilKnown, type HandOver } from '../untilKnown';
import type { RefundState } from './state';

/**
 * Asks the provider (by reference_id, as long as it takes) where the refund stands; a settled
 * or vanished refund ends phase 2. A webhook arriving meanwhile is looked at on the next turn.
 * An answer the code does not know keeps the refund pending: asked again, the run marked stuck
 * past `stuckAfterSeconds` (workflows/untilKnown.ts), never failed; a run stuck for long hands over.
 */
export async function reconcile(s: RefundState): Promise<void> {
  s.providerEvent = false;
  const kind = await untilKnown((q) => q.reconcileProviderRefund(s.refundId), s.input.stuckAfterSeconds, handOver(s));
  s.ambiguous = false;
  s.settled = kind === 'settled' || kind === 'missing';
}

/**
 * A run stuck for long continues as new (bounded runs only, since BOUNDED_HISTORIES) with phase 2's
 * state, the question still open (`ambiguous`): the new run asks again at once.
 */
function handOver(s: RefundState): HandOver | undefined {
  if (!s.bounded) return undefined;
  return {
    historyEventLimit: s.input.historyEventLimit,
    continueAsNew: () =>
      continueAsNew<(input: RefundWorkflowInput) => Promise<unknown>>({
        ...s.input,
        resume: { ...s.cursor(), ambiguous: true },
      }),
  };
}
