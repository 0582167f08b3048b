import { proxyActivities, proxyLocalActivities, sleep } from '@temporalio/workflow';
import type { Activities } from '../../activities';
import type { RefundOutcome } from '../refundApi';
import { failureType, PROVIDER_FAILURE, PROVIDER_OUTCOME } from '../failures';
import { REFUND_STARTED_AFTER_COMMIT, type HasChange } from '../patches';
import { attemptActivities, patientActivities } from '../providerActivities';
import type { RefundState } from './state';

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

/** What phase 1 establishes: the first outcome, and whether the refund is settled or in doubt. */
interface Attempted {
  settled: boolean;
  first: RefundOutcome;
  ambiguous: boolean;
  /** A workflow of the old API whose refund row is not (or no longer) pending: nothing more to do. */
  ended?: true;
}

/**
 * Phase 1, in the first run: the provider call, and its first outcome (the state learns it only
 * once known, so the API's Update waits until then). True when the run has nothing more to do.
 */
export async function attempt(s: RefundState): Promise<boolean> {
  const attempted = await attemptRefund(s.refundId, s.hasChange);
  ({ settled: s.settled, first: s.first, ambiguous: s.ambiguous } = attempted);
  return attempted.ended === true;
}

/** The provider call (reference_id = the merchant's externalId, which the provider dedupes on). */
async function attemptRefund(refundId: string, hasChange: HasChange): Promise<Attempted> {
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
    if (type === PROVIDER_FAILURE.unavailable) {
      // The provider did nothing on every try: fail the refund, give the balance back.
      await patientActivities.failRefundUnavailable(refundId);
      return { settled: true, first: { kind: PROVIDER_OUTCOME.unavailable }, ambiguous: false };
    }
    const first: RefundOutcome =
      type === PROVIDER_FAILURE.invalidResponse ? { kind: PROVIDER_OUTCOME.invalid } : { kind: 'pending' };
    return { settled: false, first, ambiguous: true };
  }
}
