import { ApplicationFailure } from '@temporalio/activity';
import { Refund } from '../src/db/entities';
import { settleRefund } from '../src/domain/refunds';
import { ProviderError } from '../src/providers/errors';
import type { CreateRefundInput, PaymentProvider, ProviderRefund } from '../src/providers/types';
import type { ActivityDeps } from './deps';
import { attemptFailure, reconcileFailure } from './providerFailures';

export type RefundAttemptResult = 'settled' | 'pending' | 'missing';

export function createRefundActivities({ orm, providers, publicBaseUrl }: ActivityDeps) {
  const load = (id: string) => orm.em.fork().findOne(Refund, { id }, { populate: ['payment'] });
  const providerOf = (refund: Refund): PaymentProvider => {
    const provider = providers.byName(refund.payment.processor);
    if (!provider)
      throw ApplicationFailure.nonRetryable(`no provider ${refund.payment.processor}`, 'provider_not_configured');
    return provider;
  };
  /** Settles from the provider's answer; a pending answer leaves the refund in flight. */
  const follow = async (refundId: string, pr: ProviderRefund): Promise<'settled' | 'pending'> => {
    if (pr.status === 'pending') {
      await orm.em
        .fork()
        .nativeUpdate(
          Refund,
          { id: refundId, providerRefundId: null },
          { providerRefundId: pr.refundId, updatedAt: new Date() },
        );
      return 'pending';
    }
    await settleRefund(orm.em.fork(), refundId, {
      status: pr.status,
      providerRefundId: pr.refundId,
      failureCode: pr.failureCode,
      failureMessage: pr.failureMessage,
    });
    return 'settled';
  };

  /** Declined outright: a failed refund with the provider's code; the balance is released. */
  const declined = async (refundId: string, err: ProviderError): Promise<'settled'> => {
    await settleRefund(orm.em.fork(), refundId, {
      status: 'failed',
      failureCode: err.code,
      failureMessage: err.message,
    });
    return 'settled';
  };

  /** The same request on every try: the provider dedupes on reference_id. */
  const refundRequest = (refund: Refund): CreateRefundInput => ({
    transactionId: refund.payment.providerTransactionId!,
    amountMinor: refund.amountMinor,
    currency: refund.currency,
    referenceId: refund.externalId,
    ...(refund.reason ? { reason: refund.reason } : {}),
    webhookUrl: `${publicBaseUrl}/webhooks/${refund.payment.processor}`,
    metadata: { refundId: refund.id, paymentId: refund.payment.id },
  });

  return {
    /** Local activity: is the refund recorded yet (the API commits right after starting us)? */
    async refundState(refundId: string): Promise<'pending' | 'settled' | 'missing'> {
      const refund = await orm.em.fork().findOne(Refund, { id: refundId }, { fields: ['status'] });
      if (!refund) return 'missing';
      return refund.status === 'pending' ? 'pending' : 'settled';
    },

    /** Asks the provider to refund, with the merchant's externalId as reference_id. */
    async attemptProviderRefund(refundId: string): Promise<RefundAttemptResult> {
      const refund = await load(refundId);
      if (!refund) return 'missing';
      if (refund.status !== 'pending') return 'settled';
      let pr: ProviderRefund;
      try {
        pr = await providerOf(refund).createRefund(refundRequest(refund));
      } catch (err) {
        if (err instanceof ProviderError && err.kind === 'rejected') return declined(refundId, err);
        throw attemptFailure(err);
      }
      return follow(refundId, pr);
    },

    /** Unreachable on every try: nothing was done at the provider. Fail it; release the slot. */
    async failRefundUnavailable(refundId: string): Promise<void> {
      await settleRefund(orm.em.fork(), refundId, {
        status: 'failed',
        failureCode: 'provider_unavailable',
        failureMessage: 'The payment provider was unreachable; nothing was refunded.',
      });
    },

    /**
     * Asks the provider what became of the refund (by reference_id) and follows it. If the
     * provider never received it, sends it again with the same reference_id (deduplicated there).
     */
    async reconcileProviderRefund(refundId: string): Promise<RefundAttemptResult> {
      const refund = await load(refundId);
      if (!refund) return 'missing';
      if (refund.status !== 'pending') return 'settled';
      const provider = providerOf(refund);
      try {
        const found = await provider.findRefund({ referenceId: refund.externalId });
        if (found) return await follow(refundId, found);
        const pr = await provider.createRefund(refundRequest(refund));
        return await follow(refundId, pr);
      } catch (err) {
        if (err instanceof ProviderError && err.kind === 'rejected') return declined(refundId, err);
        throw reconcileFailure(err);
      }
    },
  };
}
