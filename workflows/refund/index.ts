import { allHandlersFinished, condition, patched, upsertSearchAttributes } from '@temporalio/workflow';
import type { RefundWorkflowInput } from '../refundApi';
import { deliverEvents } from '../deliverEvents';
import { HANDLERS_DRAINED, LOCAL_PROVIDER_ATTEMPT, hasChangeSinceV2, type HasChange } from '../patches';
import { RefundStatusKey } from '../searchAttributes';
import { attempt } from './attempt';
import { installHandlers } from './handlers';
import { reconcile } from './reconcile';
import { RefundState } from './state';
import { waitForPoll } from './waits';

/**
 * One refund: the provider call (reference_id = the merchant's externalId, which the provider
 * dedupes on), then settlement of the refund and the payment's balance in one transaction.
 * An ambiguous answer is never guessed: the workflow asks the provider until it knows.
 *
 * Every refund the API or the sweeper starts runs this type: it began with every change listed
 * in `hasChangeSinceV2`, so its history carries no marker for them.
 */
export async function refundWorkflowV2(input: RefundWorkflowInput): Promise<{ settled: boolean }> {
  return runRefund(input, hasChangeSinceV2);
}

/** Refunds started before `refundWorkflowV2`: the same code, each change behind its marker. */
export async function refundWorkflow(input: RefundWorkflowInput): Promise<{ settled: boolean }> {
  return runRefund(input, patched);
}

/**
 * A small workflow over an explicit state object (./state.ts) and named steps: phase 1, the
 * provider call (./attempt.ts); phase 2, until settled, a wait (./waits.ts) then a question to
 * the provider (./reconcile.ts), on a webhook at once, otherwise on a backing-off poll; the
 * messages (./handlers.ts).
 *
 * Since BOUNDED_HISTORIES a long run (a refund the provider holds `pending` for months, many
 * webhooks or repeats) continues as new (same type) at its wait, carrying phase 2's state in
 * `resume`.
 */
async function runRefund(input: RefundWorkflowInput, hasChange: HasChange): Promise<{ settled: boolean }> {
  const s = new RefundState(input, hasChange);
  installHandlers(s);
  // Phase 1 happened in the first run: a continued one goes on polling.
  if (!input.resume && (await attempt(s))) return { settled: s.settled };
  while (!s.settled) {
    if (await waitForPoll(s)) await reconcile(s);
  }
  return finish(s);
}

/** The last step: the status said to operators, handlers finished, then the merchant's callbacks. */
async function finish(s: RefundState): Promise<{ settled: boolean }> {
  if (s.statusAttribute) upsertSearchAttributes([{ key: RefundStatusKey, value: 'settled' }]);
  // Older runs went on at once (a no-op check), and their histories replay so.
  if (s.hasChange(HANDLERS_DRAINED)) await condition(allHandlersFinished);
  // Since LOCAL_PROVIDER_ATTEMPT the API says whether there is a callbackUrl at all.
  if (!s.hasChange(LOCAL_PROVIDER_ATTEMPT) || s.input.callbacks !== false) {
    await deliverEvents(s.refundId, s.input.callbackRetryInitialSeconds);
  }
  return { settled: s.settled };
}
