import { log } from '@temporalio/workflow';
import type { ChargeOutcome, ChargeRequest } from '../../activities/subscriptions';
import { retryDelayMillis } from '../../src/domain/subscriptionPlan';
import { failureType } from '../failures';
import { commitBeforeProviderCall, remoteAttempts } from '../providerActivities';
import type { Collection } from '../subscriptionApi';
import { attempts, patient } from './activities';
import { follow } from './outbox';
import type { SubscriptionState } from './state';
import { waitFor } from './waits';

/** While the provider is unreachable (nothing charged): wait, then try the same attempt again. */
export const unavailableBackoffMs = (streak: number) => Math.min(10_000 * 2 ** (streak - 1), 600_000);

export type CollectionResult = 'paid' | 'exhausted' | 'cancel' | 'discarded';

/**
 * Collects the period's invoice: the first attempt when due, then along the retry schedule while
 * declined. The next attempt starts only once the previous one is known declined (each has its
 * own idempotency key), so at most one attempt of an invoice can capture.
 */
export async function collect(s: SubscriptionState): Promise<CollectionResult> {
  try {
    return await collectInvoice(s);
  } finally {
    // A charge at once asked for this invoice is over with it.
    s.cardCharge = null;
  }
}

async function collectInvoice(s: SubscriptionState): Promise<CollectionResult> {
  const c = s.collection!;
  const { plan, billingDaySeconds, needsAuthorization } = s.input;
  for (;;) {
    // A new card (past_due) wakes the wait: the next attempt is made now, and the retry
    // schedule restarts from it (it only matters if this attempt is declined too).
    await waitFor(s, () => s.cardCharge === 'requested', c.nextAttemptAtMs);
    if (s.cancel) return 'cancel';
    if (s.cardCharge === 'requested') {
      s.cardCharge = 'charging';
      c.retryBase = c.attempts;
    }
    const request: ChargeRequest = {
      invoiceId: c.invoiceId,
      attempt: c.attempts + 1,
      retryDelayMs: retryDelayMillis(plan, c.attempts + 1 - (c.retryBase ?? 0), billingDaySeconds),
      discardOnReject: c.first && c.attempts === 0 && !needsAuthorization,
    };
    const outcome = await chargeOnce(s, c, request);
    if (outcome === 'try_later') {
      c.unavailableStreak++;
      c.nextAttemptAtMs = Date.now() + unavailableBackoffMs(c.unavailableStreak);
      continue;
    }
    if (s.cardCharge === 'charging') s.cardCharge = null;
    c.unavailableStreak = 0;
    switch (outcome.kind) {
      case 'paid':
        follow(s, outcome.outbox);
        c.attempts = request.attempt;
        return 'paid';
      case 'declined':
        follow(s, outcome.outbox);
        c.attempts = request.attempt;
        if (outcome.nextAttemptAt === null) return 'exhausted';
        c.nextAttemptAtMs = Date.parse(outcome.nextAttemptAt);
        break;
      case 'void':
        follow(s, outcome.outbox);
        return 'cancel';
      case 'rejected':
        s.firstOutcome = { kind: 'rejected', code: outcome.code, message: outcome.message };
        return 'discarded';
      case 'missing':
      case 'not_found':
        return 'discarded';
    }
  }
}

/**
 * One attempt, its ambiguity resolved: a timeout, a garbled answer or any failure after the
 * provider may have acted is asked about by the attempt's key (before anything else, a
 * cancellation included), never retried blindly. `try_later`: nothing was charged.
 */
async function chargeOnce(
  s: SubscriptionState,
  c: Collection,
  request: ChargeRequest,
): Promise<ChargeOutcome | 'try_later'> {
  // The charge is decided in the history before the provider is asked: a cancellation arriving
  // while the call is under way waits for it, even when the worker dies mid-call.
  const calls = (await commitBeforeProviderCall()) === 'activity' ? remoteAttempts : attempts;
  try {
    return await calls.chargeInvoice(request);
  } catch (err) {
    const type = failureType(err);
    if (type === 'unavailable') {
      if (c.first) s.firstOutcome ??= { kind: 'provider_unavailable' };
      return 'try_later';
    }
    if (c.first) s.firstOutcome ??= { kind: type === 'invalid_response' ? 'provider_invalid' : 'provider_timeout' };
    log.info('charge outcome unknown; asking the provider', { invoiceId: request.invoiceId, type });
    const found = await patient.reconcileInvoiceCharge(request);
    // not_found: the provider never saw it; the same attempt (same key) after a pause.
    return found.kind === 'not_found' ? 'try_later' : found;
  }
}
