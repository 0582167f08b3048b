import { ApplicationFailure, log } from '@temporalio/activity';
import { Dispute } from '../src/db/entities';
import { applyProviderDispute, isOpenDispute, recordEvidenceDueSoon } from '../src/domain/disputes';
import { ProviderError, ProviderMismatchError, ProviderUnsupportedError } from '../src/providers/errors';
import type { ActivityDeps } from './deps';
import { recordProvider } from './recordProvider';

/** What the dispute's check found: still open, decided, or no answer to go by (asked again later). */
export type DisputeCheck = 'open' | 'closed' | 'unknown';
type Checked = { found: 'open' | 'closed' } | { found: 'unknown'; reason: string };

/** The dispute workflow's activities (workflows/dispute): asking the processor, and the reminder. */
export function createDisputeActivities({ orm, providers }: ActivityDeps) {
  /** No answer to go by, and why (the type a `Stuck` mark shows). */
  const unknown = (reason: string): Checked => ({ found: 'unknown', reason });
  const check = async (disputeId: string): Promise<Checked> => {
    const dispute = await orm.em.fork().findOne(Dispute, { id: disputeId });
    if (!dispute) return { found: 'closed' }; // gone with its merchant: nothing to follow
    if (!isOpenDispute(dispute.status)) return { found: 'closed' };
    const provider = await recordProvider(providers, dispute);
    if (!provider) return unknown('provider_not_configured');
    try {
      const pd = await provider.findDispute(dispute.providerDisputeId);
      if (!pd) {
        log.warn('the processor has no such dispute', { disputeId, providerDisputeId: dispute.providerDisputeId });
        return unknown('not_found');
      }
      const applied = await applyProviderDispute(orm.em.fork(), disputeId, pd);
      return { found: applied && !isOpenDispute(applied.status) ? 'closed' : 'open' };
    } catch (err) {
      if (err instanceof ProviderMismatchError) {
        // Not ours to record from: an operator must look; the dispute stays as it is.
        log.error('the processor dispute does not match ours', { disputeId, differences: err.differences });
        return unknown('reconciliation_mismatch');
      }
      if (err instanceof ProviderUnsupportedError || err instanceof ProviderError) {
        log.info('dispute check without an answer', { disputeId, error: err.message });
        return unknown(err instanceof ProviderError ? err.kind : 'unsupported');
      }
      throw err;
    }
  };
  return {
    /**
     * Asks the processor where the dispute stands and records it (with its events). An answer to
     * go by is `open` or `closed`; anything else (no provider, the processor down or answering
     * garbage, an adapter without disputes) is `unknown`: the record stays as it is and the
     * workflow asks again later, never failing on it.
     */
    async checkDispute(disputeId: string): Promise<DisputeCheck> {
      return (await check(disputeId)).found;
    },

    /**
     * checkDispute for a workflow that asks until it knows (workflows/untilKnown.ts): `open` or
     * `closed`; no answer to go by is a retryable failure whose type says why (`invalid_response`
     * for a status nobody knows, `unavailable`, `provider_not_configured`, `not_found`,
     * `reconciliation_mismatch`): the dispute stays as it is, asked again, never failed.
     */
    async askDispute(disputeId: string): Promise<'open' | 'closed'> {
      const checked = await check(disputeId);
      if (checked.found !== 'unknown') return checked.found;
      throw ApplicationFailure.retryable(
        `dispute ${disputeId}: no answer the code knows (${checked.reason})`,
        checked.reason,
      );
    },

    /** `dispute.evidence_due_soon`, if the dispute still needs a response. */
    async disputeEvidenceDueSoon(disputeId: string): Promise<boolean> {
      return recordEvidenceDueSoon(orm.em.fork(), disputeId);
    },
  };
}
