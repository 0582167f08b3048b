import { log } from '@temporalio/workflow';
import { failureType, outcomeOfFailure, PROVIDER_FAILURE, PROVIDER_OUTCOME } from '../failures';
import { attempts } from './activities';
import { ask } from './stuck';
import { cancelStep } from './cancel';
import { follow, setStatus } from './outbox';
import { nowMs, type SubscriptionState } from './state';
import { unavailableBackoffMs } from './charge';
import { waitFor, waitUntilReal } from './waits';

/**
 * No card token: the customer authorizes a card on the provider's hosted page. Creates the page
 * (idempotency key: the subscription id), then waits for the customer, the expiry or a cancel.
 * True when a card is there and billing can begin.
 */
export async function authorize(s: SubscriptionState): Promise<boolean> {
  const auth = s.authorization!;
  if (auth.expiresAtMs === null) {
    if (!(await requestPage(s))) return false;
    setStatus(s, 'pending');
    auth.expiresAtMs = nowMs(s) + s.input.authorizationExpirySeconds * 1000;
  }
  const id = s.input.subscriptionId;
  for (;;) {
    if (s.cancel) return false;
    if (nowMs(s) >= auth.expiresAtMs) {
      const expired = await ask(s, (q) => q.expireCardAuthorization(id));
      if (expired === 'authorized') return true;
      if (expired === 'expired') await cancelStep(s, { reason: 'authorization_expired', notify: true });
      else s.discarded = true;
      return false;
    }
    await waitFor(s, () => s.providerEvent, auth.expiresAtMs);
    if (!s.providerEvent) continue;
    s.providerEvent = false;
    const checked = await ask(s, (q) => q.checkCardAuthorization(id));
    if (checked === 'authorized') return true;
    if (checked === 'missing') {
      s.discarded = true;
      return false;
    }
    // waiting, or declined on the page: the customer may still authorize until the expiry
  }
}

/** Creates the hosted page; an ambiguous answer is asked about, never sent blindly again. */
async function requestPage(s: SubscriptionState): Promise<boolean> {
  const id = s.input.subscriptionId;
  let unavailable = 0;
  for (;;) {
    try {
      const requested = await attempts.requestCardAuthorization(id);
      if (requested.kind === 'rejected') {
        s.firstOutcome = { kind: 'rejected', code: requested.code, message: requested.message };
        s.discarded = true;
        return false;
      }
      if (requested.kind === 'missing') {
        s.discarded = true;
        return false;
      }
      follow(s, requested.outbox);
      return true;
    } catch (err) {
      const type = failureType(err);
      if (type !== PROVIDER_FAILURE.unavailable) {
        s.firstOutcome ??= { kind: outcomeOfFailure(type) };
        const found = await ask(s, (q) => q.reconcileCardAuthorization(id));
        if (found === 'missing') {
          s.discarded = true;
          return false;
        }
        if (found === 'pending') return true;
        // not_found: it never reached the provider; ask again with the same key, after a pause
      }
      s.firstOutcome ??= { kind: PROVIDER_OUTCOME.unavailable };
      log.info('card authorization page not created yet; trying again', { subscriptionId: id, type });
      if (!(await waitUntilReal(s, Date.now() + unavailableBackoffMs(++unavailable)))) return false;
    }
  }
}
