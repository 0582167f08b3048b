import { allHandlersFinished, condition, patched, proxyLocalActivities, setHandler, sleep } from '@temporalio/workflow';
import type { Activities } from '../activities';
import {
  providerRefundEventSignal,
  refundOutcomeUpdate,
  type RefundOutcome,
  type RefundWorkflowInput,
} from './refundApi';
import { deliverEvents } from './deliverEvents';
import { failureType } from './failures';
import { attemptActivities, patientActivities } from './providerActivities';
import { LOCAL_PROVIDER_ATTEMPT } from './patches';

/**
 * The API starts this workflow inside the transaction that records the refund, so the row may
 * not be visible yet for a moment; if it never appears (the transaction rolled back), there is
 * nothing to do.
 */
const visibility = proxyLocalActivities<Activities>({
  startToCloseTimeout: '5 seconds',
  // A database outage is waited out, however long: giving up would strand a reserved refund.
  retry: { initialInterval: '50 ms', backoffCoefficient: 2, maximumInterval: '10 seconds' },
});
/** How long a refund row may take to appear before its transaction counts as rolled back. */
const VISIBILITY_WAIT_MS = 60_000;

/**
 * One refund: the provider call (reference_id = the merchant's externalId, which the provider
 * dedupes on), then settlement of the refund and the payment's balance in one transaction.
 * An ambiguous answer is never guessed: the workflow asks the provider until it knows.
 */
export async function refundWorkflow(input: RefundWorkflowInput): Promise<{ settled: boolean }> {
  const { refundId } = input;
  let first: RefundOutcome | undefined;
  let settled = false;
  let providerEvent = false;

  setHandler(refundOutcomeUpdate, async () => {
    await condition(() => first !== undefined);
    return first!;
  });
  setHandler(providerRefundEventSignal, () => {
    providerEvent = true;
  });

  let recorded = await visibility.refundState(refundId);
  for (let waited = 0; recorded === 'missing' && waited < VISIBILITY_WAIT_MS; waited += 250) {
    await sleep(250);
    recorded = await visibility.refundState(refundId);
  }
  if (recorded !== 'pending') {
    first = { kind: 'settled' };
    return { settled: recorded === 'settled' };
  }

  // Phase 1: the provider call.
  let ambiguous = false;
  try {
    const kind = await attemptActivities().attemptProviderRefund(refundId);
    settled = kind === 'settled' || kind === 'missing';
    first = kind === 'missing' ? { kind: 'settled' } : { kind };
  } catch (err) {
    const type = failureType(err);
    if (type === 'unavailable') {
      // The provider did nothing on every try: fail the refund, give the balance back.
      await patientActivities.failRefundUnavailable(refundId);
      settled = true;
      first = { kind: 'provider_unavailable' };
    } else {
      ambiguous = true;
      first = type === 'invalid_response' ? { kind: 'provider_invalid' } : { kind: 'pending' };
    }
  }

  // Phase 2: until the refund is settled, ask the provider (by reference_id); on a webhook at
  // once, otherwise on a backing-off poll.
  let pollSeconds = input.pollInitialSeconds;
  while (!settled) {
    if (!ambiguous) {
      await condition(() => providerEvent, `${pollSeconds} seconds`);
      pollSeconds = Math.min(pollSeconds * 2, 3600);
    }
    providerEvent = false;
    const kind = await patientActivities.reconcileProviderRefund(refundId);
    ambiguous = false;
    settled = kind === 'settled' || kind === 'missing';
  }

  await condition(allHandlersFinished);
  // Since LOCAL_PROVIDER_ATTEMPT the API says whether there is a callbackUrl at all.
  if (!patched(LOCAL_PROVIDER_ATTEMPT) || input.callbacks !== false) {
    await deliverEvents(refundId, input.callbackRetryInitialSeconds);
  }
  return { settled };
}
