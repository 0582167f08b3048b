import {
  discardSubscription,
  markAwaitingAuthorization,
  saveAuthorizedCard,
  type Outbox,
} from '../../src/domain/subscriptions';
import type { Subscription } from '../../src/db/entities';
import type { ProviderPayment } from '../../src/providers/types';
import type { ActivityDeps } from '../deps';
import { attemptFailure, reconcileFailure, refusal, rejectionOf } from '../providerFailures';
import { setupLookup, setupRequest, subscriptionRecords } from './shared';
import { ApplicationFailure } from '@temporalio/activity';
import { recordProvider } from '../recordProvider';
import { lookupResume } from '../lookupProgress';
import { PROVIDER_FAILURE } from '../../src/rules/providerFailures';

/**
 * A subscription created without a card token: the customer authorizes a card on the provider's
 * hosted page (a setup; its key is the subscription id), which is requested, asked about after
 * an ambiguous answer, checked, and closed when the customer's time is up.
 */
export function createCardAuthorizationActivities(deps: ActivityDeps) {
  const { orm, publicBaseUrl, logger } = deps;
  const { load, providerOf } = subscriptionRecords(deps);

  /** A card authorization the customer completed: keep its token (the card charged from now on). */
  const followSetup = async (s: Subscription, pp: ProviderPayment): Promise<'authorized' | 'waiting' | 'declined'> => {
    if (pp.status === 'succeeded' && pp.savedCardToken) {
      await saveAuthorizedCard(orm.em.fork(), s.id, pp.savedCardToken, pp.savedCard ?? null);
      return 'authorized';
    }
    return pp.status === 'pending' ? 'waiting' : 'declined';
  };

  return {
    /** No cardToken: creates the hosted card authorization (idempotency key: the subscription id). */
    async requestCardAuthorization(
      subscriptionId: string,
    ): Promise<
      { kind: 'pending' | 'settled' | 'missing'; outbox?: Outbox } | { kind: 'rejected'; code: string; message: string }
    > {
      const s = await load(subscriptionId);
      if (!s) return { kind: 'missing' };
      if (s.status !== 'created') return { kind: 'settled' };
      const provider = await recordProvider(deps.providers, s);
      // Nothing was sent: the workflow asks again at growing intervals (the configuration may return).
      if (!provider) throw ApplicationFailure.retryable(`no provider ${s.processor}`, PROVIDER_FAILURE.unavailable);
      let pp: ProviderPayment;
      try {
        pp = await provider.createPayment(setupRequest(s, publicBaseUrl));
      } catch (err) {
        const refused = refusal(err, logger, { subscriptionId: s.id, processor: s.processor });
        if (refused) {
          await discardSubscription(orm.em, s.id);
          return rejectionOf(refused);
        }
        throw attemptFailure(err);
      }
      const outbox = await markAwaitingAuthorization(orm.em.fork(), s.id, {
        transactionId: pp.transactionId,
        redirectUrl: pp.redirectUrl,
      });
      return { kind: 'pending', outbox: outbox ?? undefined };
    },

    /** After an ambiguous authorization request: did the provider create it? */
    async reconcileCardAuthorization(subscriptionId: string): Promise<'pending' | 'not_found' | 'missing'> {
      const s = await load(subscriptionId);
      if (!s) return 'missing';
      if (s.status !== 'created') return 'pending';
      try {
        const pp = await (
          await providerOf(s)
        ).findPayment({ ...setupLookup(s, setupRequest(s, publicBaseUrl)), resume: lookupResume() });
        if (!pp) return 'not_found';
        await markAwaitingAuthorization(orm.em.fork(), s.id, {
          transactionId: pp.transactionId,
          redirectUrl: pp.redirectUrl,
        });
        return 'pending';
      } catch (err) {
        throw reconcileFailure(err);
      }
    },

    /** Has the customer authorized a card on the hosted page? */
    async checkCardAuthorization(subscriptionId: string): Promise<'authorized' | 'waiting' | 'declined' | 'missing'> {
      const s = await load(subscriptionId);
      if (!s) return 'missing';
      if (s.cardToken) return 'authorized';
      try {
        const provider = await providerOf(s);
        const pp = s.setupTransactionId
          ? await provider.findPayment({ transactionId: s.setupTransactionId })
          : await provider.findPayment(setupLookup(s));
        return pp ? await followSetup(s, pp) : 'waiting';
      } catch (err) {
        throw reconcileFailure(err);
      }
    },

    /**
     * The customer's time is up: cancels the hosted authorization at the provider. A customer
     * who authorized just before wins (the card is kept and billing starts).
     */
    async expireCardAuthorization(subscriptionId: string): Promise<'authorized' | 'expired' | 'missing'> {
      const s = await load(subscriptionId);
      if (!s) return 'missing';
      if (s.cardToken) return 'authorized';
      if (!s.setupTransactionId) return 'expired';
      try {
        const pp = await (await providerOf(s)).cancelPayment(s.setupTransactionId);
        return (await followSetup(s, pp)) === 'authorized' ? 'authorized' : 'expired';
      } catch (err) {
        throw reconcileFailure(err);
      }
    },
  };
}
