import { ApplicationFailure } from '@temporalio/activity';
import { Payment } from '../src/db/entities';
import { publishPaymentOutcome } from '../src/db/outcomeHints';
import {
  AWAITING_PAYMENT_STATUSES,
  OPEN_PAYMENT_STATUSES,
  answerOfStatus,
  hintKindOf,
  applyProviderPayment,
  applyProviderPaymentToRead,
  claimPaymentForAttempt,
  failUnsentPayment,
  voidPayment,
} from '../src/domain/payments';
import { ProviderMismatchError, differences } from '../src/providers/errors';
import type { CreatePaymentInput, PaymentLookup, PaymentProvider, ProviderPayment } from '../src/providers/types';
import { lookupResume } from './lookupProgress';
import type { ActivityDeps } from './deps';
import { workerMetrics } from '../src/metrics/worker';
import { recordProvider } from './recordProvider';
import { savedPaymentMethodOf } from '../src/domain/customers';
import { tellSubscriptionsOfCard } from '../src/app/cardNews';
import { clearProviderCallSent, providerForClaimedCall, sentProviderCall } from './providerCalls';
import {
  attemptFailure,
  mismatchFailure,
  providerConflict,
  reconcileFailure,
  refusal,
  rejectionOf,
} from './providerFailures';
import { PROVIDER_ERROR_CODE, PROVIDER_NOT_CONFIGURED } from '../src/rules/providerFailures';

/**
 * `created`: the customer acts on a hosted page; `action`: the customer authenticates
 * (`requires_action`); `processing`: the processor decides later; `settled`: final.
 */
export type AttemptResult =
  | { kind: 'settled' | 'created' | 'action' | 'processing' | 'missing' }
  | { kind: 'rejected'; code: string; message: string };

/** What a payment's provider request is built from (the claimed row, or the entity). */
type PaymentRequestFields = Pick<
  Payment,
  | 'id'
  | 'amountMinor'
  | 'currency'
  | 'cardToken'
  | 'returnUrl'
  | 'processor'
  | 'saveCardEnabled'
  | 'description'
  | 'expiresAt'
  | 'externalId'
  | 'paymentMethodId'
> & { merchantId: string };

/**
 * The processor of a record is no longer configured, but an earlier call under its key was sent
 * and never answered: that call may have been performed, so nothing is decided (decision 0059).
 * Non-retryable from the attempt: the workflow treats it as ambiguous and reconciles.
 */
export function unconfiguredAfterEarlierCall(processor: string): ApplicationFailure {
  return ApplicationFailure.nonRetryable(
    `no provider ${processor}; an earlier call under the same idempotency key may have been performed`,
    PROVIDER_NOT_CONFIGURED,
  );
}

export type ReconcileResult = 'settled' | 'created' | 'action' | 'processing' | 'not_found' | 'missing';

export function createPaymentActivities({ orm, providers, publicBaseUrl, logger, starters }: ActivityDeps) {
  const load = (id: string) => orm.em.fork().findOne(Payment, { id });
  /**
   * The payment's provider. Missing (its configuration was removed): when asking what became of
   * a request, retried until an operator restores it (the outcome must be learnt); an attempt
   * decides instead (`failUnconfigured`), since nothing was sent.
   */
  const providerOf = async (payment: Payment): Promise<PaymentProvider> => {
    const provider = await recordProvider(providers, payment);
    if (!provider) throw ApplicationFailure.retryable(`no provider ${payment.processor}`, PROVIDER_NOT_CONFIGURED);
    return provider;
  };
  const failUnconfigured = async (payment: Pick<Payment, 'id' | 'processor'>): Promise<AttemptResult> => {
    logger.error({ paymentId: payment.id, processor: payment.processor }, 'no provider configured; payment failed');
    await failUnsentPayment(orm.em.fork(), payment.id, {
      code: PROVIDER_ERROR_CODE.notConfigured,
      message: `No payment provider is configured for ${payment.processor}; nothing was charged.`,
    });
    await publishPaymentOutcome(orm, payment.id, { kind: 'settled' }, logger);
    return { kind: 'settled' };
  };
  /** The request an attempt sends for this payment: the same one every time (its key's). */
  const requestOf = (payment: PaymentRequestFields): CreatePaymentInput => ({
    idempotencyKey: payment.id,
    amountMinor: payment.amountMinor,
    currency: payment.currency,
    mode: payment.cardToken ? 'card' : 'checkout',
    ...(payment.cardToken ? { cardToken: payment.cardToken } : {}),
    ...(payment.returnUrl ? { returnUrl: payment.returnUrl } : {}),
    webhookUrl: `${publicBaseUrl}/webhooks/${payment.processor}`,
    saveCard: payment.saveCardEnabled,
    ...(payment.description ? { description: payment.description } : {}),
    expiresAt: payment.expiresAt,
    metadata: {
      paymentId: payment.id,
      merchantId: payment.merchantId,
      reference_id: payment.externalId,
      // A charge on a customer's saved card names it (PRODUCT.md, "Customers and payment methods").
      ...(payment.paymentMethodId ? { paymentMethodId: payment.paymentMethodId } : {}),
    },
  });
  /**
   * How the provider finds what became of this payment's request: its idempotency key, and with
   * `replay` the request itself, for a provider that replays it (which performs it if it never
   * arrived: wanted by the attempt's reconciliation, never at expiry). Null when no call is marked
   * sent (decision 0012: the mark is committed before every call): there is nothing to ask about.
   */
  const lookupOf = (payment: Payment, replay: boolean): PaymentLookup | null =>
    payment.providerCallSentAt
      ? {
          idempotencyKey: payment.id,
          mode: payment.cardToken ? 'card' : 'checkout',
          notBefore: payment.providerCallSentAt,
          ...(replay ? { request: requestOf({ ...payment, merchantId: payment.merchant.id }) } : {}),
        }
      : null;
  const lookUp = async (provider: PaymentProvider, payment: Payment, replay: boolean) => {
    const lookup = lookupOf(payment, replay);
    return lookup ? provider.findPayment({ ...lookup, resume: lookupResume() }) : null;
  };
  const apply = async (
    paymentId: string,
    pp: ProviderPayment,
  ): Promise<'settled' | 'created' | 'action' | 'processing' | 'missing'> => {
    const payment = await applyProviderPayment(orm.em.fork(), paymentId, pp);
    if (!payment) return 'missing';
    // A card saved for the customer (saveCardEnabled) is a new card for its subscriptions waiting
    // for one (decision 0088); told again on a repeated answer, which the workflow ignores.
    if (payment.customerId !== null && payment.saveCardEnabled) {
      const saved = await savedPaymentMethodOf(orm.em, payment.id);
      if (saved) await tellSubscriptionsOfCard({ em: orm.em, subscriptions: starters.subscription, logger }, saved);
    }
    return answerOfStatus(payment.status);
  };
  /** A provider payment found under our key is ours only with our amount and currency. */
  const ours = (payment: Payment, pp: ProviderPayment): ProviderPayment => {
    const differ = differences({ amountMinor: payment.amountMinor, currency: payment.currency }, pp);
    if (differ.length > 0) throw new ProviderMismatchError(payment.id, differ);
    return pp;
  };
  /** A mismatch as a visible, typed failure (see mismatchFailure); anything else unchanged. */
  const unmatched = (
    payment: Pick<Payment, 'id' | 'providerTransactionId' | 'amountMinor' | 'currency'>,
    err: unknown,
    retryable: boolean,
  ): unknown =>
    err instanceof ProviderMismatchError
      ? mismatchFailure(
          err,
          logger,
          {
            paymentId: payment.id,
            providerTransactionId: payment.providerTransactionId,
            amountMinor: payment.amountMinor,
            currency: payment.currency,
          },
          retryable,
        )
      : err;

  return {
    /** Asks the provider to take the payment, with the payment id as idempotency key. */
    async attemptProviderPayment(paymentId: string): Promise<AttemptResult> {
      // Read, and marked as sent by the same statement while `created` (the mark is committed
      // before the provider is asked; activities/providerCalls.ts).
      const claimed = await claimPaymentForAttempt(orm.em, paymentId);
      if (!claimed) return { kind: 'missing' };
      const { payment, sentBefore } = claimed;
      if (payment.status !== 'created') return { kind: answerOfStatus(payment.status) };
      const provider = await providerForClaimedCall(orm, 'payments', paymentId, sentBefore, () =>
        recordProvider(providers, {
          merchant: { id: payment.merchantId },
          environment: payment.environment,
          processor: payment.processor,
        }),
      );
      if (!provider) {
        // An earlier call under this key may have been performed: never failed, never guessed.
        // The workflow reconciles (retried until the configuration is back; stuck meanwhile).
        if (sentBefore) throw unconfiguredAfterEarlierCall(payment.processor);
        return failUnconfigured(payment);
      }
      let pp: ProviderPayment;
      try {
        pp = await sentProviderCall(orm, 'payments', payment.id, () => provider.createPayment(requestOf(payment)), {
          sentBefore,
        });
      } catch (err) {
        // Another request under our key: the provider may have charged it; reconciled, never discarded.
        const conflict = providerConflict(err, payment.id);
        if (conflict) throw unmatched(payment, conflict, false);
        const refused = refusal(err, logger, {
          paymentId,
          merchantId: payment.merchantId,
          processor: payment.processor,
        });
        if (refused) {
          // Refused outright (e.g. a bad token): nothing was captured, so nothing is kept and
          // the merchant's externalId stays free for a corrected request.
          if (await orm.em.fork().nativeDelete(Payment, { id: paymentId, status: 'created' })) {
            workerMetrics.payment('rejected');
          }
          logger.info({ paymentId, code: refused.code }, 'provider rejected the payment; discarded');
          const rejected = rejectionOf(refused);
          await publishPaymentOutcome(orm, paymentId, rejected, logger);
          return rejected;
        }
        throw attemptFailure(err);
      }
      let kind: Awaited<ReturnType<typeof apply>>;
      let hinted = false;
      try {
        const asRead = await applyProviderPaymentToRead(orm.em, payment, pp);
        // Applied as read: that statement sent the hint itself, with the payment.
        hinted = asRead !== null;
        kind = asRead ?? (await apply(paymentId, pp));
      } catch (err) {
        // Not retried here: the workflow goes on to reconcile, where it is retried visibly.
        throw unmatched(payment, err, false);
      }
      if (!hinted && kind !== 'missing') {
        // `processing` is an answer for the API to read (hint `settled`): it no longer waits.
        await publishPaymentOutcome(orm, paymentId, { kind: hintKindOf(kind) }, logger);
      }
      return { kind };
    },

    /** Asks the provider what became of our request (its transaction, or its idempotency key) and follows it. */
    async reconcileProviderPayment(paymentId: string): Promise<ReconcileResult> {
      const payment = await load(paymentId);
      if (!payment) return 'missing';
      if (!OPEN_PAYMENT_STATUSES.includes(payment.status)) return 'settled';
      try {
        const provider = await providerOf(payment);
        // A known transaction (a hosted page, a webhook) is read directly; else what became of the
        // request is found by its key, if a call was ever sent (none marked: nothing to find).
        const pp =
          (payment.providerTransactionId
            ? await provider.findPayment({ transactionId: payment.providerTransactionId })
            : null) ?? (await lookUp(provider, payment, true));
        if (pp) return await apply(paymentId, ours(payment, pp));
        // Nothing under our key: no call was performed; a next attempt is a first call again.
        await clearProviderCallSent(orm, 'payments', paymentId);
        return 'not_found';
      } catch (err) {
        // Every kind of trouble is retried here: the answer is needed, not a guess.
        throw reconcileFailure(unmatched(payment, err, true));
      }
    },

    /**
     * At expiry: cancel the hosted payment or the authentication at the provider (a customer who
     * paid or authenticated just before wins: the payment follows), or void a payment the
     * provider never saw. A `processing` payment has no expiry: the processor decides.
     */
    async expireProviderPayment(paymentId: string): Promise<ReconcileResult> {
      const payment = await load(paymentId);
      if (!payment) return 'missing';
      if (!AWAITING_PAYMENT_STATUSES.includes(payment.status)) return answerOfStatus(payment.status);
      const provider = await providerOf(payment);
      try {
        const found = payment.providerTransactionId ? null : await lookUp(provider, payment, false);
        // Never cancel a payment that is not ours.
        const known = payment.providerTransactionId ?? (found ? ours(payment, found).transactionId : null);
        if (known) {
          const pp = await provider.cancelPayment(known);
          const kind = await apply(paymentId, pp);
          if (kind !== 'created') return kind;
        }
      } catch (err) {
        throw reconcileFailure(unmatched(payment, err, true));
      }
      // An authentication the provider did not cancel may still capture: asked again, never voided here.
      if (payment.status === 'requires_action') {
        throw ApplicationFailure.retryable(`the provider did not cancel the authentication of ${paymentId}`);
      }
      await voidPayment(orm.em.fork(), paymentId);
      return 'settled';
    },
  };
}
