import { ApplicationFailure } from '@temporalio/activity';
import { Invoice } from '../../src/db/entities';
import {
  applyInvoiceCharge,
  cancelAsRequested,
  discardSubscription,
  loadInvoiceForCharge,
  markInvoiceChargeSent,
  recordInvoiceWait,
  releaseInvoiceAttempt,
  type ChargeResult,
  type InvoiceForCharge,
} from '../../src/domain/subscriptions';
import type { ProviderPayment } from '../../src/providers/types';
import type { ActivityDeps } from '../deps';
import { EMAIL_CLAIM_SECONDS } from '../emails';
import { recordProvider } from '../recordProvider';
import { lookupResume } from '../lookupProgress';
import { clearProviderCallSent, sentProviderCall } from '../providerCalls';
import {
  attemptFailure,
  mismatchFailure,
  providerConflict,
  reconcileFailure,
  refusal,
  rejectionOf,
} from '../providerFailures';
import { chargeLookup, emailProfileOf, chargeRequest, chargeResultOf, type UndecidedCharge } from './shared';
import type { CancelledAttempt, ChargeOutcome, ChargeRequest } from './types';
import { PROVIDER_ERROR_CODE, PROVIDER_FAILURE, PROVIDER_NOT_CONFIGURED } from '../../src/rules/providerFailures';
import { ProviderError } from '../../src/providers/errors';
import type { PaymentProvider } from '../../src/providers/types';
import { declineTypeOf, NO_CARD_CODE } from '../../src/rules/declines';
import { invoiceAttemptKey } from '../../src/rules/subscriptionPlan';
import {
  fallbackPaymentMethods,
  makeDefaultPaymentMethod,
  makeDefaultWhenUnusable,
  markHardDeclined,
} from '../../src/domain/customers';

/**
 * One charge attempt of an invoice with the subscription's card (one provider key per attempt),
 * and the question asked after an ambiguous one: what the invoice activities are made of.
 */
export function createInvoiceCharging(
  deps: Pick<ActivityDeps, 'orm' | 'providers' | 'logger' | 'publicBaseUrl' | 'productionProfile'>,
) {
  const { orm, providers, logger, publicBaseUrl } = deps;
  const profile = emailProfileOf(deps);
  const webhookUrlOf = (invoice: InvoiceForCharge) => `${publicBaseUrl}/webhooks/${invoice.subscription.processor}`;

  /**
   * An attempt the processor has not decided: the invoice shows the wait when the processor says
   * which (`requires_action`: the customer authenticates; `processing`), decision 0060. Nothing
   * else is recorded: the attempt is asked about again by its key.
   */
  async function undecided(
    invoice: InvoiceForCharge,
    req: ChargeRequest,
    pp: ProviderPayment,
    result: UndecidedCharge,
  ): Promise<ChargeOutcome> {
    if (pp.status !== 'requires_action' && pp.status !== 'processing') return result;
    const wait =
      pp.status === 'requires_action'
        ? {
            kind: pp.status,
            transactionId: pp.transactionId,
            actionUrl: pp.actionUrl,
            cancelAt: req.authenticationWaitMs === undefined ? null : new Date(Date.now() + req.authenticationWaitMs),
          }
        : { kind: pp.status, transactionId: pp.transactionId };
    const outbox = await recordInvoiceWait(
      orm.em,
      {
        subscriptionId: invoice.subscription.id,
        invoiceId: invoice.id,
        attempt: req.attempt,
        wait,
      },
      profile,
    );
    return outbox ? { ...result, waiting: pp.status, outbox } : result;
  }

  /**
   * Nothing can be charged and asking again will not change it (no card on file, no provider for
   * the record's processor): the attempt is recorded as declined with that code, so the retry
   * schedule and its emails run and the subscription ends in a decided state; an error log line
   * tells operators (a provider configuration they can fix before the last retry).
   */
  const cannotCharge = (invoice: InvoiceForCharge, req: ChargeRequest, failureCode: string, failureMessage: string) => {
    logger.error({ subscriptionId: invoice.subscription.id, invoiceId: invoice.id, failureCode }, failureMessage);
    return applyInvoiceCharge(
      orm.em,
      invoice,
      req.attempt,
      { kind: 'declined', transactionId: null, failureCode, failureMessage },
      req.retryDelayMs,
      { profile, at: atOf(req) },
    );
  };

  /**
   * One attempt to charge an invoice with the subscription's card. `markedAtOpen`: the statement
   * that opened the invoice in this activity marked this first attempt's call sent. `opened`: that
   * statement's invoice, as charging reads it (no read of its own).
   */
  async function charge(req: ChargeRequest, markedAtOpen = false, opened?: InvoiceForCharge): Promise<ChargeOutcome> {
    const invoice = opened ?? (await loadInvoiceForCharge(orm.em, req.invoiceId));
    if (!invoice) return { kind: 'missing' };
    const s = invoice.subscription;
    if (invoice.status === 'paid') {
      return applyInvoiceCharge(orm.em, invoice, req.attempt, { kind: 'paid', transactionId: '' }, null, {
        profile,
        at: atOf(req),
      });
    }
    if (
      (invoice.status === 'requires_action' || invoice.status === 'processing') &&
      req.attempt !== invoice.attempts + 1
    ) {
      // Invariant 7: while an attempt waits, no other attempt of the invoice is made.
      return { kind: 'undecided', status: invoice.status, waiting: invoice.status };
    }
    if (invoice.attempts >= req.attempt || invoice.status === 'void') {
      // Recorded already (a retried activity), or voided by a cancellation: answer what is recorded.
      return applyInvoiceCharge(orm.em, invoice, req.attempt, declinedNoop, req.retryDelayMs, {
        profile,
        at: atOf(req),
      });
    }
    if (!s.cardToken) return cannotCharge(invoice, req, NO_CARD_CODE, 'The subscription has no card to charge.');
    const provider = await recordProvider(providers, s);
    if (!provider) {
      return cannotCharge(
        invoice,
        req,
        PROVIDER_ERROR_CODE.notConfigured,
        `No provider is configured for ${s.processor}.`,
      );
    }
    // The mark is refused once a DELETE is recorded (decision 0076): the cancellation is applied
    // here instead, and the attempt answers the voided invoice with the cancellation's outbox.
    const mark = markedAtOpen
      ? { kind: 'marked' as const, sentBefore: false }
      : await markInvoiceChargeSent(orm.em, invoice.id);
    if (mark.kind === 'cancel_requested') return cancelledInstead(invoice, req);
    let pp: ProviderPayment;
    try {
      const cardToken = s.cardToken;
      pp = await sentProviderCall(
        orm,
        'invoices',
        invoice.id,
        () =>
          provider.createPayment(
            chargeRequest(invoice, req.attempt, cardToken, req.onSession === true, webhookUrlOf(invoice)),
          ),
        { sentBefore: mark.sentBefore },
      ).catch(async (err: unknown) => {
        // A customer's subscription reads its card at each send (decision 0087): a re-sent attempt
        // may name another card than its first send (a new default, a method hard-declined since).
        // The processor then refuses the key's reuse; the payment under the key is the attempt's.
        if (!mark.sentBefore || !s.customerId || !providerConflict(err, invoice.id)) throw err;
        const found = await provider.findPayment({ ...chargeLookup(invoice, req.attempt), resume: lookupResume() });
        if (!found) throw err;
        return found;
      });
    } catch (err) {
      // Another request under this attempt's key: it may have charged; reconciled, never a decline
      // (a decline would let the next attempt charge under a new key).
      const conflict = providerConflict(err, invoice.id);
      if (conflict) {
        throw mismatchFailure(
          conflict,
          logger,
          { subscriptionId: s.id, invoiceId: invoice.id, amountMinor: invoice.amountMinor, currency: invoice.currency },
          false,
        );
      }
      const refused = refusal(err, logger, { subscriptionId: s.id, invoiceId: invoice.id, processor: s.processor });
      if (refused) {
        const rejected = rejectionOf(refused);
        if (req.discardOnReject) {
          await discardSubscription(orm.em, s.id);
          logger.info({ subscriptionId: s.id, code: rejected.code }, 'provider rejected the first charge; discarded');
          return rejected;
        }
        return applyInvoiceCharge(
          orm.em,
          invoice,
          req.attempt,
          { kind: 'declined', transactionId: null, failureCode: rejected.code, failureMessage: rejected.message },
          req.retryDelayMs,
          { profile, at: atOf(req) },
        );
      }
      throw attemptFailure(err);
    }
    const first = chargeResultOf(logger, invoice, pp);
    // Not decided: the attempt is not recorded (the call stays marked sent); the workflow asks
    // again by key. The invoice shows the wait when the processor says which.
    if (first.kind === 'undecided') return undecided(invoice, req, pp, first);
    const result = await fallbackRound(invoice, req, provider, first, mark.sentBefore ? null : s.paymentMethodId);
    if (result.kind === 'undecided') return result;
    // A customer's card that recovered a past_due invoice (a new card that ended the wait) is the
    // default when the customer has no usable one (decision 0088). A re-send may have named
    // another card than its first send: only a first send says which card captured.
    if (first.kind === 'paid' && s.status === 'past_due' && s.customerId && s.paymentMethodId && !mark.sentBefore) {
      await makeDefaultWhenUnusable(orm.em, s.customerId, s.paymentMethodId);
    }
    // The receipt is sent right after, in this activity (sendingItsEmails): claimed as it is recorded.
    return applyInvoiceCharge(orm.em, invoice, req.attempt, result, req.retryDelayMs, {
      claimReceiptSeconds: EMAIL_CLAIM_SECONDS,
      profile,
      at: atOf(req),
    });
  }

  /**
   * A hard decline of a customer's subscription (PRODUCT.md "Customers and payment methods";
   * decision 0087): the declined method is marked and never charged again, and the customer's other
   * methods are charged at once, newest first, each under its own key for the invoice (a retried
   * activity or a reconciliation replays, never charges one twice). The first capture is the
   * attempt's result and becomes the default; with none, the first decline is (one charge_failed
   * event and one email for the round, as for any hard decline). A method the processor does not
   * decide at once leaves the attempt undecided: it is asked about again (reconcile runs the round
   * again, under the same keys).
   */
  async function fallbackRound(
    invoice: InvoiceForCharge,
    req: ChargeRequest,
    provider: PaymentProvider,
    result: ChargeResult | UndecidedCharge,
    /** The method the declined charge was sent with, when known for sure (a first send). */
    declinedMethod: string | null,
  ): Promise<ChargeResult | UndecidedCharge> {
    const s = invoice.subscription;
    if (result.kind !== 'declined' || declineTypeOf(result.failureCode) !== 'hard' || !s.customerId) return result;
    if (declinedMethod) await markHardDeclined(orm.em, declinedMethod);
    const methods = await fallbackPaymentMethods(orm.em, s.customerId, s.processor);
    for (const method of methods) {
      const withMethod: InvoiceForCharge = {
        ...invoice,
        subscription: { ...s, cardToken: method.providerReference, paymentMethodId: method.id },
      };
      const request = {
        ...chargeRequest(withMethod, req.attempt, method.providerReference, false, webhookUrlOf(invoice)),
        idempotencyKey: `${invoiceAttemptKey(invoice.id, 1)}.pm-${method.id}`,
      };
      let pp: ProviderPayment;
      try {
        pp = await provider.createPayment(request);
      } catch (err) {
        // The processor refuses this method (e.g. detached there): the next one. Anything else is
        // an ambiguous attempt, reconciled as any other (the round replays under the same keys).
        if (refusal(err, logger, { subscriptionId: s.id, invoiceId: invoice.id, paymentMethodId: method.id })) continue;
        throw attemptFailure(err);
      }
      const answer = chargeResultOf(logger, invoice, pp);
      if (answer.kind === 'paid') {
        await makeDefaultPaymentMethod(orm.em, s.customerId, method.id);
        logger.info({ subscriptionId: s.id, invoiceId: invoice.id, paymentMethodId: method.id }, 'fallback captured');
        return answer;
      }
      if (answer.kind === 'undecided') return { kind: 'undecided', status: 'unknown' };
      if (declineTypeOf(answer.failureCode) === 'hard') await markHardDeclined(orm.em, method.id);
    }
    return result;
  }

  /** A charge refused for a recorded DELETE: the cancellation applied, the invoice answered void. */
  async function cancelledInstead(invoice: InvoiceForCharge, req: ChargeRequest): Promise<ChargeOutcome> {
    const cancelled = await cancelAsRequested(orm.em, invoice.subscription.id, profile);
    logger.info(
      { subscriptionId: invoice.subscription.id, invoiceId: invoice.id },
      'charge refused: a cancel is recorded',
    );
    const answer = await applyInvoiceCharge(orm.em, invoice, req.attempt, declinedNoop, req.retryDelayMs, {
      profile,
      at: atOf(req),
    });
    if (answer.kind !== 'void' || !cancelled) return answer;
    return {
      ...answer,
      outbox: {
        status: cancelled.status,
        emailIds: [...answer.outbox.emailIds, ...cancelled.emailIds],
        eventIds: [...answer.outbox.eventIds, ...cancelled.eventIds],
      },
    };
  }

  /** After an ambiguous attempt: what became of it at the provider (by its idempotency key)? */
  async function reconcile(req: ChargeRequest): Promise<ChargeOutcome> {
    const invoice = await orm.em.fork().findOne(Invoice, { id: req.invoiceId }, { populate: ['subscription'] });
    if (!invoice) return { kind: 'missing' };
    if (invoice.status === 'paid' || invoice.attempts >= req.attempt) {
      return applyInvoiceCharge(orm.em, invoice, req.attempt, declinedNoop, req.retryDelayMs, {
        profile,
        at: atOf(req),
      });
    }
    // Here the outcome must be learnt, whatever it takes: a missing provider is retried too.
    const provider = await recordProvider(providers, invoice.subscription);
    if (!provider) {
      throw ApplicationFailure.retryable(`no provider ${invoice.subscription.processor}`, PROVIDER_NOT_CONFIGURED);
    }
    // No call marked sent (decision 0012): nothing to ask about.
    if (!invoice.providerCallSentAt) return { kind: 'not_found' };
    try {
      // The card as the attempt reads it (a customer's default: decision 0087).
      const forCharge = await loadInvoiceForCharge(orm.em, invoice.id);
      const card = forCharge?.subscription.cardToken;
      const pp = await provider.findPayment({
        ...chargeLookup(
          invoice,
          req.attempt,
          forCharge && card
            ? chargeRequest(forCharge, req.attempt, card, req.onSession === true, webhookUrlOf(forCharge))
            : undefined,
        ),
        resume: lookupResume(),
      });
      if (!pp) {
        // Nothing under this attempt's key: no call was performed; the next one is a first call.
        await clearProviderCallSent(orm, 'invoices', invoice.id);
        return { kind: 'not_found' };
      }
      const first = chargeResultOf(logger, invoice, pp);
      if (first.kind === 'undecided') return await undecided(invoice, req, pp, first);
      // A hard decline's round (decision 0087), replayed under the same keys.
      const result = forCharge ? await fallbackRound(forCharge, req, provider, first, null) : first;
      if (result.kind === 'undecided') return result;
      return await applyInvoiceCharge(orm.em, invoice, req.attempt, result, req.retryDelayMs, {
        profile,
        at: atOf(req),
      });
    } catch (err) {
      // An answer this code cannot read (a status nobody knows, a garbled body): the workflow
      // asks again later, at growing intervals, instead of this activity retrying for ever.
      if (err instanceof ProviderError && err.kind === PROVIDER_FAILURE.invalidResponse) {
        logger.warn({ invoiceId: invoice.id, attempt: req.attempt, error: err.message }, 'unreadable provider answer');
        return { kind: 'undecided', status: 'unknown' };
      }
      throw reconcileFailure(err);
    }
  }

  /**
   * An attempt awaiting authentication is cancelled at the processor (a DELETE, a new card, the
   * wait over): what the processor answers wins. Captured (or failed) just before: recorded as
   * such. Cancelled: `canceled`; `release` (a new card comes next) records the attempt as over and
   * collects the invoice again. Neither (the processor did not cancel it): asked again (retryable).
   */
  async function cancelAttempt(req: ChargeRequest, release: boolean): Promise<CancelledAttempt> {
    const invoice = await loadInvoiceForCharge(orm.em, req.invoiceId);
    if (!invoice) return { kind: 'missing' };
    if (invoice.status === 'paid' || invoice.attempts >= req.attempt) {
      return applyInvoiceCharge(orm.em, invoice, req.attempt, declinedNoop, req.retryDelayMs, {
        profile,
        at: atOf(req),
      });
    }
    const provider = await recordProvider(providers, invoice.subscription);
    if (!provider) {
      throw ApplicationFailure.retryable(`no provider ${invoice.subscription.processor}`, PROVIDER_NOT_CONFIGURED);
    }
    const release_ = async (): Promise<CancelledAttempt> => {
      if (release) {
        await releaseInvoiceAttempt(orm.em, {
          subscriptionId: invoice.subscription.id,
          invoiceId: invoice.id,
          attempt: req.attempt,
        });
      }
      return { kind: 'canceled' };
    };
    let pp: ProviderPayment | null;
    try {
      // The waiting attempt's transaction, else (the wait not recorded) found by the attempt's key.
      const known = invoice.status === 'requires_action' ? invoice.providerTransactionId : null;
      const transactionId = known ?? (await provider.findPayment(chargeLookup(invoice, req.attempt)))?.transactionId;
      if (!transactionId) return await release_();
      pp = await provider.cancelPayment(transactionId);
    } catch (err) {
      throw reconcileFailure(err);
    }
    if (pp.status === 'canceled') {
      logger.info(
        { invoiceId: invoice.id, attempt: req.attempt, transactionId: pp.transactionId },
        'attempt cancelled',
      );
      return release_();
    }
    const result = chargeResultOf(logger, invoice, pp);
    if (result.kind !== 'undecided')
      return applyInvoiceCharge(orm.em, invoice, req.attempt, result, req.retryDelayMs, { profile, at: atOf(req) });
    if (pp.status === 'processing') return undecided(invoice, req, pp, result);
    throw ApplicationFailure.retryable(
      `attempt ${pp.transactionId} not cancelled by the provider (${pp.status}); asking again`,
      'attempt_not_cancelled',
    );
  }

  return { charge, reconcile, cancelAttempt };
}

/** Used on replay paths, where the recorded answer wins and this one is never applied. */
const declinedNoop: ChargeResult = { kind: 'declined', transactionId: null, failureCode: '', failureMessage: '' };

/** On a test clock, the attempt's instant in clock time (decision 0090); absent: the database's now. */
const atOf = (req: ChargeRequest): Date | undefined => (req.atMs === undefined ? undefined : new Date(req.atMs));
