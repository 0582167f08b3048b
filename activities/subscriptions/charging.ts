import { ApplicationFailure } from '@temporalio/activity';
import { Invoice } from '../../src/db/entities';
import {
  applyInvoiceCharge,
  discardSubscription,
  loadInvoiceForCharge,
  type ChargeResult,
  type InvoiceForCharge,
} from '../../src/domain/subscriptions';
import type { ProviderPayment } from '../../src/providers/types';
import type { ActivityDeps } from '../deps';
import { EMAIL_CLAIM_SECONDS } from '../emails';
import { recordProvider } from '../recordProvider';
import { clearProviderCallSent, sentProviderCall } from '../providerCalls';
import {
  attemptFailure,
  mismatchFailure,
  providerConflict,
  reconcileFailure,
  refusal,
  rejectionOf,
} from '../providerFailures';
import { chargeLookup, chargeRequest, chargeResultOf } from './shared';
import type { ChargeOutcome, ChargeRequest } from './types';
import { PROVIDER_ERROR_CODE, PROVIDER_FAILURE, PROVIDER_NOT_CONFIGURED } from '../../src/rules/providerFailures';
import { ProviderError } from '../../src/providers/errors';

/**
 * One charge attempt of an invoice with the subscription's card (one provider key per attempt),
 * and the question asked after an ambiguous one: what the invoice activities are made of.
 */
export function createInvoiceCharging(deps: Pick<ActivityDeps, 'orm' | 'providers' | 'logger'>) {
  const { orm, providers, logger } = deps;

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
      return applyInvoiceCharge(orm.em, invoice, req.attempt, { kind: 'paid', transactionId: '' }, null);
    }
    if (invoice.attempts >= req.attempt || invoice.status === 'void') {
      // Recorded already (a retried activity), or voided by a cancellation: answer what is recorded.
      return applyInvoiceCharge(orm.em, invoice, req.attempt, declinedNoop, req.retryDelayMs);
    }
    if (!s.cardToken) return cannotCharge(invoice, req, 'no_card', 'The subscription has no card to charge.');
    const provider = await recordProvider(providers, s);
    if (!provider) {
      return cannotCharge(
        invoice,
        req,
        PROVIDER_ERROR_CODE.notConfigured,
        `No provider is configured for ${s.processor}.`,
      );
    }
    let pp: ProviderPayment;
    try {
      const cardToken = s.cardToken;
      pp = await sentProviderCall(
        orm,
        'invoices',
        invoice.id,
        () => provider.createPayment(chargeRequest(invoice, req.attempt, cardToken, req.onSession === true)),
        markedAtOpen ? { sentBefore: false } : undefined,
      );
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
        );
      }
      throw attemptFailure(err);
    }
    const result = chargeResultOf(logger, invoice, pp);
    // Not decided: nothing recorded (the call stays marked sent); the workflow asks again by key.
    if (result.kind === 'undecided') return result;
    // The receipt is sent right after, in this activity (sendingItsEmails): claimed as it is recorded.
    return applyInvoiceCharge(orm.em, invoice, req.attempt, result, req.retryDelayMs, {
      claimReceiptSeconds: EMAIL_CLAIM_SECONDS,
    });
  }

  /** After an ambiguous attempt: what became of it at the provider (by its idempotency key)? */
  async function reconcile(req: ChargeRequest): Promise<ChargeOutcome> {
    const invoice = await orm.em.fork().findOne(Invoice, { id: req.invoiceId }, { populate: ['subscription'] });
    if (!invoice) return { kind: 'missing' };
    if (invoice.status === 'paid' || invoice.attempts >= req.attempt) {
      return applyInvoiceCharge(orm.em, invoice, req.attempt, declinedNoop, req.retryDelayMs);
    }
    // Here the outcome must be learnt, whatever it takes: a missing provider is retried too.
    const provider = await recordProvider(providers, invoice.subscription);
    if (!provider) {
      throw ApplicationFailure.retryable(`no provider ${invoice.subscription.processor}`, PROVIDER_NOT_CONFIGURED);
    }
    // No call marked sent (decision 0012): nothing to ask about.
    if (!invoice.providerCallSentAt) return { kind: 'not_found' };
    try {
      const card = invoice.subscription.cardToken;
      const pp = await provider.findPayment(
        chargeLookup(
          invoice,
          req.attempt,
          card ? chargeRequest(invoice, req.attempt, card, req.onSession === true) : undefined,
        ),
      );
      if (!pp) {
        // Nothing under this attempt's key: no call was performed; the next one is a first call.
        await clearProviderCallSent(orm, 'invoices', invoice.id);
        return { kind: 'not_found' };
      }
      const result = chargeResultOf(logger, invoice, pp);
      if (result.kind === 'undecided') return result;
      return await applyInvoiceCharge(orm.em, invoice, req.attempt, result, req.retryDelayMs);
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

  return { charge, reconcile };
}

/** Used on replay paths, where the recorded answer wins and this one is never applied. */
const declinedNoop: ChargeResult = { kind: 'declined', transactionId: null, failureCode: '', failureMessage: '' };
