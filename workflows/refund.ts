import {
  allHandlersFinished,
  condition,
  continueAsNew,
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
import { runIsLong } from './runBound';
import {
  BOUNDED_HISTORIES,
  HANDLERS_DRAINED,
  LOCAL_PROVIDER_ATTEMPT,
  REFUND_STARTED_AFTER_COMMIT,
  STATUS_SEARCH_ATTRIBUTES,
  hasChangeSinceV2,
  type HasChange,
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
 * Since BOUNDED_HISTORIES a long run (a refund the provider holds `pending` for months, many
 * webhooks or repeats) continues as new (same type) at its wait, carrying phase 2's state in
 * `resume`.
 */
async function runRefund(input: RefundWorkflowInput, hasChange: HasChange): Promise<{ settled: boolean }> {
  const { refundId, resume } = input;
  // A continued run gave its first outcome already: a repeat of the request gets it at once.
  let first: RefundOutcome | undefined = resume?.first;
  let settled = false;
  let providerEvent = resume?.providerEvent ?? false;

  const statusAttribute = hasChange(STATUS_SEARCH_ATTRIBUTES);
  const bounded = hasChange(BOUNDED_HISTORIES);
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

  // Phase 1 happened in the first run: a continued one goes on polling.
  let ambiguous = resume?.ambiguous ?? false;
  if (!resume) {
    const attempted = await attemptRefund(refundId, hasChange);
    ({ settled, first, ambiguous } = attempted);
    if (attempted.ended) return { settled };
  }

  // Phase 2: until the refund is settled, ask the provider (by reference_id); on a webhook at
  // once, otherwise on a backing-off poll.
  let pollSeconds = resume?.pollSeconds ?? input.pollInitialSeconds;
  let nextPollAtMs = resume?.nextPollAtMs ?? null;
  /** A long run hands its state to a new one here, once every handler has finished. */
  const handOverIfLong = async () => {
    if (!runIsLong(input.historyEventLimit)) return;
    await condition(allHandlersFinished);
    const cursor = { first: first!, pollSeconds, nextPollAtMs: nextPollAtMs!, ambiguous, providerEvent };
    await continueAsNew<typeof refundWorkflowV2>({ ...input, resume: { ...cursor, runs: (resume?.runs ?? 0) + 1 } });
  };
  while (!settled) {
    if (!ambiguous && bounded) {
      const pollAtMs = (nextPollAtMs ??= Date.now() + pollSeconds * 1000);
      await handOverIfLong();
      const waitMs = pollAtMs - Date.now();
      if (!providerEvent && waitMs > 0) {
        await condition(() => providerEvent || runIsLong(input.historyEventLimit), waitMs);
        if (!providerEvent && Date.now() < pollAtMs) continue; // woken as the run grew long
      }
      nextPollAtMs = null;
      pollSeconds = Math.min(pollSeconds * 2, 3600);
    } else if (!ambiguous) {
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
  if (hasChange(HANDLERS_DRAINED)) await condition(allHandlersFinished);
  // Since LOCAL_PROVIDER_ATTEMPT the API says whether there is a callbackUrl at all.
  if (!hasChange(LOCAL_PROVIDER_ATTEMPT) || input.callbacks !== false) {
    await deliverEvents(refundId, input.callbackRetryInitialSeconds);
  }
  return { settled };
}

/**
 * Phase 1, in the first run: the provider call, and its first outcome. `ended`: a workflow of
 * the old API whose refund row is not (or no longer) pending: nothing more to do.
 */
async function attemptRefund(
  refundId: string,
  hasChange: HasChange,
): Promise<{ settled: boolean; first: RefundOutcome; ambiguous: boolean; ended?: true }> {
  const afterCommit = hasChange(REFUND_STARTED_AFTER_COMMIT);
  if (!afterCommit) {
    let recorded = await legacyVisibility.refundState(refundId);
    for (let waited = 0; recorded === 'missing' && waited < VISIBILITY_WAIT_MS; waited += 250) {
      await sleep(250);
      recorded = await legacyVisibility.refundState(refundId);
    }
    if (recorded !== 'pending') {
      return { settled: recorded === 'settled', first: { kind: 'settled' }, ambiguous: false, ended: true };
    }
  }

  try {
    let kind = await attemptActivities(hasChange).attemptProviderRefund(refundId);
    // Not there although committed before we started: an API of the old code (start inside its
    // transaction) is still committing. Wait for it; still missing after that: rolled back.
    if (kind === 'missing' && afterCommit && (await records.awaitRefundRecorded(refundId)) !== 'missing') {
      kind = await attemptActivities(hasChange).attemptProviderRefund(refundId);
    }
    const settled = kind === 'settled' || kind === 'missing';
    return { settled, first: kind === 'missing' ? { kind: 'settled' } : { kind }, ambiguous: false };
  } catch (err) {
    const type = failureType(err);
    if (type === 'unavailable') {
      // The provider did nothing on every try: fail the refund, give the balance back.
      await patientActivities.failRefundUnavailable(refundId);
      return { settled: true, first: { kind: 'provider_unavailable' }, ambiguous: false };
    }
    const first: RefundOutcome = type === 'invalid_response' ? { kind: 'provider_invalid' } : { kind: 'pending' };
    return { settled: false, first, ambiguous: true };
  }
}
