import { ApplicationFailure } from '@temporalio/activity';
import { Refund } from '../src/db/entities';
import { publishRefundSettled } from '../src/db/outcomeHints';
import {
  claimRefundForAttempt,
  findRefundWithPayment,
  settleRefund,
  settleRefundFromRead,
  type RefundWithPayment,
  type RefundSettlement,
} from '../src/domain/refunds';
import { ProviderError, ProviderMismatchError, differences } from '../src/providers/errors';
import { PROVIDER_ERROR_CODE, PROVIDER_FAILURE, PROVIDER_NOT_CONFIGURED } from '../src/rules/providerFailures';
import type { CreateRefundInput, PaymentProvider, ProviderRefund } from '../src/providers/types';
import { lookupResume } from './lookupProgress';
import type { ActivityDeps } from './deps';
import { recordProvider } from './recordProvider';
import { unconfiguredAfterEarlierCall } from './payments';
import { providerForClaimedCall, sentProviderCall } from './providerCalls';
import { attemptFailure, mismatchFailure, providerConflict, reconcileFailure, refusal } from './providerFailures';

export type RefundAttemptResult = 'settled' | 'pending' | 'missing';

export function createRefundActivities({ orm, providers, publicBaseUrl, logger }: ActivityDeps) {
  const load = (id: string) => findRefundWithPayment(orm.em, id);
  /**
   * Settled from the refund as read, in one statement that also tells the API waiting on the
   * refund (outcomeHints.ts); by the general path if it moved since, and the API told after.
   */
  const settle = async (refund: RefundWithPayment, settlement: RefundSettlement): Promise<void> => {
    if (await settleRefundFromRead(orm.em, refund, settlement)) return;
    await settleRefund(orm.em.fork(), refund.id, settlement);
    await publishRefundSettled(orm, refund.id, logger);
  };
  const providerOf = async (refund: RefundWithPayment): Promise<PaymentProvider> => {
    const provider = await recordProvider(providers, refund.payment);
    if (!provider)
      throw ApplicationFailure.retryable(`no provider ${refund.payment.processor}`, PROVIDER_NOT_CONFIGURED);
    return provider;
  };
  /**
   * Settles from the provider's answer; a pending answer leaves the refund in flight. Only a
   * provider refund of our payment transaction, amount and currency is ours to settle from.
   */
  const follow = async (refund: RefundWithPayment, pr: ProviderRefund): Promise<'settled' | 'pending'> => {
    const refundId = refund.id;
    const differ = differences(
      {
        transactionId: refund.payment.providerTransactionId ?? undefined,
        amountMinor: refund.amountMinor,
        currency: refund.currency,
      },
      pr,
    );
    if (differ.length > 0) throw new ProviderMismatchError(refundId, differ);
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
    await settle(refund, {
      status: pr.status,
      providerRefundId: pr.refundId,
      failureCode: pr.failureCode,
      failureMessage: pr.failureMessage,
    });
    return 'settled';
  };

  /** Declined outright: a failed refund with the provider's code; the balance is released. */
  const declined = async (refund: RefundWithPayment, err: ProviderError): Promise<'settled'> => {
    await settle(refund, {
      status: 'failed',
      failureCode: err.code,
      failureMessage: err.message,
    });
    return 'settled';
  };

  /**
   * The same request on every try: the provider dedupes on our refund id (the idempotency key)
   * and on reference_id within the payment transaction.
   */
  const refundRequest = (refund: RefundWithPayment): CreateRefundInput => ({
    idempotencyKey: refund.id,
    transactionId: refund.payment.providerTransactionId!,
    amountMinor: refund.amountMinor,
    currency: refund.currency,
    referenceId: refund.externalId,
    ...(refund.reason ? { reason: refund.reason } : {}),
    webhookUrl: `${publicBaseUrl}/webhooks/${refund.payment.processor}`,
    metadata: { refundId: refund.id, paymentId: refund.payment.id },
  });

  /** A provider conflict or a record that is not ours: never settled from; see mismatchFailure. */
  const unmatched = (refund: RefundWithPayment, err: unknown, retryable: boolean): unknown => {
    const mismatch = providerConflict(err, refund.id) ?? err;
    if (!(mismatch instanceof ProviderMismatchError)) return undefined;
    return mismatchFailure(
      mismatch,
      logger,
      {
        refundId: refund.id,
        paymentId: refund.payment.id,
        providerTransactionId: refund.payment.providerTransactionId,
        amountMinor: refund.amountMinor,
        currency: refund.currency,
      },
      retryable,
    );
  };

  return {
    /** Local activity: is the refund recorded yet (the API commits right after starting us)? */
    async refundState(refundId: string): Promise<'pending' | 'settled' | 'missing'> {
      const refund = await orm.em.fork().findOne(Refund, { id: refundId }, { fields: ['status'] });
      if (!refund) return 'missing';
      return refund.status === 'pending' ? 'pending' : 'settled';
    },

    /**
     * Asks the provider to refund, with our refund id as idempotency key and the merchant's
     * externalId as reference_id. A conflict or an answer that is not ours goes to reconciliation.
     */
    async attemptProviderRefund(refundId: string): Promise<RefundAttemptResult> {
      // Read, and marked as sent by the same statement while `pending` (activities/providerCalls.ts).
      const claimed = await claimRefundForAttempt(orm.em, refundId);
      if (!claimed) return 'missing';
      const { refund, sentBefore } = claimed;
      if (refund.status !== 'pending') return 'settled';
      const provider = await providerForClaimedCall(orm, 'refunds', refundId, sentBefore, () =>
        recordProvider(providers, refund.payment),
      );
      // An earlier call under this key may have been performed: the workflow reconciles.
      if (!provider && sentBefore) throw unconfiguredAfterEarlierCall(refund.payment.processor);
      if (!provider) {
        // Nothing was ever sent, and waiting will not change it: failed, the balance released.
        logger.error({ refundId, processor: refund.payment.processor }, 'no provider configured; refund failed');
        await settleRefund(orm.em.fork(), refundId, {
          status: 'failed',
          failureCode: PROVIDER_ERROR_CODE.notConfigured,
          failureMessage: `No payment provider is configured for ${refund.payment.processor}; nothing was refunded.`,
        });
        return 'settled';
      }
      try {
        const pr = await sentProviderCall(
          orm,
          'refunds',
          refund.id,
          () => provider.createRefund(refundRequest(refund)),
          {
            sentBefore,
          },
        );
        return await follow(refund, pr);
      } catch (err) {
        const mismatch = unmatched(refund, err, false);
        if (mismatch) throw mismatch;
        const refused = refusal(err, logger, {
          refundId,
          merchantId: refund.merchant.id,
          processor: refund.payment.processor,
        });
        if (refused) return declined(refund, refused);
        throw attemptFailure(err);
      }
    },

    /** Unreachable on every try: nothing was done at the provider. Fail it; release the slot. */
    async failRefundUnavailable(refundId: string): Promise<void> {
      await settleRefund(orm.em.fork(), refundId, {
        status: 'failed',
        failureCode: PROVIDER_ERROR_CODE.unavailable,
        failureMessage: 'The payment provider was unreachable; nothing was refunded.',
      });
    },

    /**
     * Asks the provider what became of the refund (by our refund id, its idempotency key) and
     * follows it, only if it is ours (transaction, amount, currency). If the provider never
     * received it, sends it again with the same key (deduplicated there).
     */
    async reconcileProviderRefund(refundId: string): Promise<RefundAttemptResult> {
      const refund = await load(refundId);
      if (!refund) return 'missing';
      if (refund.status !== 'pending') return 'settled';
      const provider = await providerOf(refund);
      try {
        const found = await provider.findRefund({
          idempotencyKey: refund.id,
          transactionId: refund.payment.providerTransactionId!,
          resume: lookupResume(),
        });
        if (found) return await follow(refund, found);
        const pr = await provider.createRefund(refundRequest(refund));
        return await follow(refund, pr);
      } catch (err) {
        const mismatch = unmatched(refund, err, true);
        if (mismatch) throw mismatch;
        if (err instanceof ProviderError && err.kind === PROVIDER_FAILURE.rejected) return declined(refund, err);
        throw reconcileFailure(err);
      }
    },
  };
}
