import { createHash } from 'node:crypto';
import type { Subscription } from '../../src/db/entities';
import {
  markCardUpdatePage,
  replaceSubscriptionCard,
  requestNewCard,
  type Outbox,
} from '../../src/domain/subscriptions';
import type { CreatePaymentInput, ProviderPayment } from '../../src/providers/types';
import type { ActivityDeps } from '../deps';
import { recordProvider } from '../recordProvider';
import { reconcileFailure, refusal, rejectionOf } from '../providerFailures';
import { emailProfileOf, metadataOf, subscriptionRecords, updatable } from './shared';
import type { CardChange, CardPage, CardUpdateState } from './types';
import { ApplicationFailure } from '@temporalio/activity';
import { PROVIDER_NOT_CONFIGURED } from '../../src/rules/providerFailures';

type Rejection = ReturnType<typeof rejectionOf>;

/**
 * A new card for an active or past_due subscription: a merchant's token (verified by the
 * provider, then kept), or a hosted update the customer completes on the provider's page
 * (requested, checked, closed).
 */
export function createCardUpdateActivities(deps: ActivityDeps) {
  const { orm, providers, publicBaseUrl, logger } = deps;
  const profile = emailProfileOf(deps);
  const { load, providerOf } = subscriptionRecords(deps);

  /** A completed hosted card update: its saved card becomes the subscription's. */
  const followCardUpdate = async (s: Subscription, pp: ProviderPayment): Promise<CardUpdateState> => {
    if (pp.status === 'pending') return 'waiting';
    if (pp.status !== 'succeeded' || !pp.savedCardToken) return 'ended';
    const replaced = await replaceSubscriptionCard(orm.em, s.id, pp.savedCardToken);
    return replaced.kind === 'replaced' || replaced.kind === 'unchanged' ? 'authorized' : 'ended';
  };

  /**
   * A setup (no money moved) at the subscription's provider, for a card update: the provider's
   * answer, or the rejection to return (the provider refused). Other provider trouble is
   * retried: a setup moves no money. No provider (its configuration removed since the
   * subscription began, decision 0064): nothing was sent and nothing changes; failed at once, not
   * retried, so the Update answers `provider_unavailable` (503, retry later) instead of a
   * rejection the API would answer as a 500; the watcher and billing carry on as they were.
   */
  const setupAtProvider = async (
    s: Subscription,
    request: Pick<CreatePaymentInput, 'idempotencyKey' | 'cardToken' | 'returnUrl' | 'webhookUrl'>,
  ): Promise<ProviderPayment | Rejection> => {
    const provider = await recordProvider(providers, s);
    if (!provider) throw ApplicationFailure.nonRetryable(`no provider ${s.processor}`, PROVIDER_NOT_CONFIGURED);
    try {
      return await provider.createPayment({
        ...request,
        amountMinor: 0,
        currency: s.currency,
        mode: 'setup',
        ...(s.description ? { description: s.description } : {}),
        metadata: metadataOf(s),
      });
    } catch (err) {
      const refused = refusal(err, logger, { subscriptionId: s.id, processor: s.processor });
      if (refused) return rejectionOf(refused);
      throw reconcileFailure(err);
    }
  };

  return {
    /**
     * A merchant's new card token for an active or past_due subscription: verified by the
     * provider (a setup with the token, no money moved; its key is the subscription and the
     * token, so asking again is answered the same), then kept under the row lock. A refused
     * token changes nothing. Ambiguous provider trouble is retried (a setup moves no money).
     */
    async replaceCard(input: { subscriptionId: string; cardToken: string }): Promise<CardChange> {
      const s = await load(input.subscriptionId);
      if (!s) return { kind: 'missing' };
      if (!updatable(s)) return { kind: 'not_updatable', status: s.status };
      if (s.cardToken === input.cardToken) return { kind: 'unchanged', status: s.status };
      const pp = await setupAtProvider(s, {
        idempotencyKey: cardVerificationKey(s.id, input.cardToken),
        cardToken: input.cardToken,
      });
      if ('kind' in pp) return pp;
      if (pp.status !== 'succeeded' || !pp.savedCardToken) {
        return {
          kind: 'rejected',
          code: pp.failureCode ?? 'card_not_verified',
          message: pp.failureMessage ?? 'The card could not be verified.',
        };
      }
      return replaceSubscriptionCard(orm.em, s.id, pp.savedCardToken);
    },

    /**
     * A hosted card update: the customer enters a new card on the provider's page (a setup; the
     * key names the subscription's n-th page, so a retry finds the same page). The subscription
     * shows the page as its `redirectUrl`; its card and billing are untouched until completed.
     */
    async requestCardUpdatePage(input: { subscriptionId: string; page: number }): Promise<CardPage> {
      const s = await load(input.subscriptionId);
      if (!s) return { kind: 'missing' };
      if (!updatable(s)) return { kind: 'not_updatable' };
      const pp = await setupAtProvider(s, {
        idempotencyKey: `${s.id}.card-page-${input.page}`,
        ...(s.returnUrl ? { returnUrl: s.returnUrl } : {}),
        webhookUrl: `${publicBaseUrl}/webhooks/${s.processor}`,
      });
      if ('kind' in pp) return pp;
      const marked = await markCardUpdatePage(orm.em, s.id, {
        transactionId: pp.transactionId,
        redirectUrl: pp.redirectUrl,
      });
      if (marked.kind === 'missing' || marked.kind === 'not_updatable') return { kind: marked.kind };
      return { kind: 'pending', transactionId: pp.transactionId };
    },

    /**
     * A hard decline: the customer's email asking for a new card before `cancelAt` (with the
     * hosted card update's link when the workflow opened one), recorded once per declined attempt.
     */
    async requestNewCard(input: {
      subscriptionId: string;
      invoiceId: string;
      attempt: number;
      withLink: boolean;
      cancelAt: string;
    }): Promise<Outbox | null> {
      return requestNewCard(orm.em, { ...input, cancelAt: new Date(input.cancelAt) }, profile);
    },

    /** Has the customer completed the hosted card update? If so, its card is the one charged. */
    async checkCardUpdate(input: { subscriptionId: string; transactionId: string }): Promise<CardUpdateState> {
      const s = await load(input.subscriptionId);
      if (!s) return 'ended';
      try {
        const pp = await (await providerOf(s)).findPayment({ transactionId: input.transactionId });
        return pp ? await followCardUpdate(s, pp) : 'ended';
      } catch (err) {
        throw reconcileFailure(err);
      }
    },

    /**
     * The hosted card update's time is up (or another card superseded it): its page is closed at
     * the provider. A customer who completed it just before wins, unless `apply` is false.
     */
    async closeCardUpdate(input: {
      subscriptionId: string;
      transactionId: string;
      apply: boolean;
    }): Promise<CardUpdateState> {
      const s = await load(input.subscriptionId);
      if (!s) return 'ended';
      try {
        const pp = await (await providerOf(s)).cancelPayment(input.transactionId);
        if (!input.apply) return 'ended';
        return (await followCardUpdate(s, pp)) === 'authorized' ? 'authorized' : 'ended';
      } catch (err) {
        throw reconcileFailure(err);
      }
    },
  };
}

/** The provider key of a new card's verification: one per subscription and token. */
function cardVerificationKey(subscriptionId: string, cardToken: string): string {
  return `${subscriptionId}.card-${createHash('sha256').update(cardToken).digest('hex').slice(0, 32)}`;
}
