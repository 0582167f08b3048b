import {
  allHandlersFinished,
  condition,
  patched,
  proxyActivities,
  proxyLocalActivities,
  setHandler,
  sleep,
  upsertSearchAttributes,
} from '@temporalio/workflow';
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
import {
  HANDLERS_DRAINED,
  LOCAL_PROVIDER_ATTEMPT,
  REFUND_STARTED_AFTER_COMMIT,
  STATUS_SEARCH_ATTRIBUTES,
} from './patches';
import { RefundStatusKey } from './searchAttributes';

/**
 * Before REFUND_STARTED_AFTER_COMMIT the API started this workflow inside the transaction that
 * records the refund, so the row might not be visible yet for a moment; if it never appeared
 * (the transaction rolled back), there was nothing to do. Kept for workflows started then.
 */
const legacyVisibility = proxyLocalActivities<Activities>({
  startToCloseTimeout: '5 seconds',
  retry: { initialInterval: '50 ms', backoffCoefficient: 2, maximumInterval: '10 seconds' },
});
/** How long a refund row may take to appear before its transaction counts as rolled back. */
const VISIBILITY_WAIT_MS = 60_000;

/**
 * Waits (up to a minute, polling PostgreSQL itself, heartbeating) for a refund row started by
 * an API of the old code; a database outage is waited out by the retries, however long.
 */
const records = proxyActivities<Activities>({
  startToCloseTimeout: '2 minutes',
  heartbeatTimeout: '15 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute' },
});

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

  const statusAttribute = patched(STATUS_SEARCH_ATTRIBUTES);
  setHandler(
    refundOutcomeUpdate,
    async () => {
      await condition(() => first !== undefined);
      return first!;
    },
    {
      // A replay for a settled refund: rejected, so it costs no history; the API reads PostgreSQL.
      validator: () => {
        if (statusAttribute && settled && first !== undefined) throw new Error('The refund is settled.');
      },
    },
  );
  setHandler(providerRefundEventSignal, () => {
    providerEvent = true;
  });

  const afterCommit = patched(REFUND_STARTED_AFTER_COMMIT);
  if (!afterCommit) {
    let recorded = await legacyVisibility.refundState(refundId);
    for (let waited = 0; recorded === 'missing' && waited < VISIBILITY_WAIT_MS; waited += 250) {
      await sleep(250);
      recorded = await legacyVisibility.refundState(refundId);
    }
    if (recorded !== 'pending') {
      first = { kind: 'settled' };
      return { settled: recorded === 'settled' };
    }
  }

  // Phase 1: the provider call.
  let ambiguous = false;
  try {
    let kind = await attemptActivities().attemptProviderRefund(refundId);
    // Not there although committed before we started: an API of the old code (start inside its
    // transaction) is still committing. Wait for it; still missing after that: rolled back.
    if (kind === 'missing' && afterCommit && (await records.awaitRefundRecorded(refundId)) !== 'missing') {
      kind = await attemptActivities().attemptProviderRefund(refundId);
    }
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
  if (statusAttribute) upsertSearchAttributes([{ key: RefundStatusKey, value: 'settled' }]);

  // Older runs went on at once (a no-op check), and their histories replay so.
  if (patched(HANDLERS_DRAINED)) await condition(allHandlersFinished);
  // Since LOCAL_PROVIDER_ATTEMPT the API says whether there is a callbackUrl at all.
  if (!patched(LOCAL_PROVIDER_ATTEMPT) || input.callbacks !== false) {
    await deliverEvents(refundId, input.callbackRetryInitialSeconds);
  }
  return { settled };
}
