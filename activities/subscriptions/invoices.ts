import { ApplicationFailure, Context } from '@temporalio/activity';
import { Invoice } from '../../src/db/entities';
import {
  applyInvoiceCharge,
  discardSubscription,
  loadInvoiceForCharge,
  openPeriodInvoice,
  type ChargeResult,
  type InvoiceForCharge,
  type OpenedInvoice,
} from '../../src/domain/subscriptions';
import { invoiceAttemptKey } from '../../src/rules/subscriptionPlan';
import type { ProviderPayment } from '../../src/providers/types';
import type { ActivityDeps } from '../deps';
import { EMAIL_CLAIM_SECONDS, type Mailer } from '../emails';
import { recordProvider } from '../recordProvider';
import { clearProviderCallSent, sentProviderCall } from '../providerCalls';
import { attemptFailure, mismatchFailure, providerConflict, reconcileFailure, refusal } from '../providerFailures';
import { chargeLookup, chargeResultOf, metadataOf } from './shared';
import type { ChargeOutcome, ChargeRequest, OpenedAndCharged, PeriodInvoiceInput } from './types';

/**
 * A period's invoice and its charges: opened (free periods paid at once), charged with the
 * subscription's card under one provider key per attempt, an ambiguous attempt asked about by its
 * key; a recorded charge's emails sent right after its commit, in the same activity.
 */
export function createInvoiceActivities(deps: ActivityDeps, mailer: Mailer) {
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

  const openPeriod = (input: PeriodInvoiceInput, markChargeSent = false): Promise<OpenedInvoice> =>
    openPeriodInvoice(
      orm.em.fork(),
      { ...input, periodStart: new Date(input.periodStart), periodEnd: new Date(input.periodEnd) },
      { markChargeSent },
    );

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
      return cannotCharge(invoice, req, 'provider_not_configured', `No provider is configured for ${s.processor}.`);
    }
    let pp: ProviderPayment;
    try {
      const cardToken = s.cardToken;
      pp = await sentProviderCall(
        orm,
        'invoices',
        invoice.id,
        () =>
          provider.createPayment({
            idempotencyKey: invoiceAttemptKey(invoice.id, req.attempt),
            amountMinor: invoice.amountMinor,
            currency: invoice.currency,
            mode: 'card',
            cardToken,
            ...(s.description ? { description: s.description } : {}),
            metadata: metadataOf(s, invoice.id),
          }),
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
        const code = refused.code ?? 'provider_rejected';
        if (req.discardOnReject) {
          await discardSubscription(orm.em, s.id);
          logger.info({ subscriptionId: s.id, code }, 'provider rejected the first charge; discarded');
          return { kind: 'rejected', code, message: refused.message };
        }
        return applyInvoiceCharge(
          orm.em,
          invoice,
          req.attempt,
          { kind: 'declined', transactionId: null, failureCode: code, failureMessage: refused.message },
          req.retryDelayMs,
        );
      }
      throw attemptFailure(err);
    }
    // The receipt is sent right after, in this activity (sendingItsEmails): claimed as it is recorded.
    return applyInvoiceCharge(orm.em, invoice, req.attempt, chargeResultOf(logger, invoice, pp), req.retryDelayMs, {
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
      throw ApplicationFailure.retryable(`no provider ${invoice.subscription.processor}`, 'provider_not_configured');
    }
    try {
      const pp = await provider.findPayment(chargeLookup(invoice, req.attempt));
      if (!pp) {
        // Nothing under this attempt's key: no call was performed; the next one is a first call.
        await clearProviderCallSent(orm, 'invoices', invoice.id);
        return { kind: 'not_found' };
      }
      return await applyInvoiceCharge(
        orm.em,
        invoice,
        req.attempt,
        chargeResultOf(logger, invoice, pp),
        req.retryDelayMs,
      );
    } catch (err) {
      throw reconcileFailure(err);
    }
  }

  /**
   * A recorded charge's emails (the receipt, or the payment-failed notice) are sent here, right
   * after the commit, within what is left of the activity's time less a margin (at most 2 s): the
   * workflow is answered only the ids not confirmed sent, and sends those as before. One local
   * activity and one workflow activation less per renewal (issue 12); the email is still claimed,
   * sent and marked sent exactly as the sendEmail activity does it.
   */
  async function sendingItsEmails(outcome: ChargeOutcome): Promise<ChargeOutcome> {
    if (!('outbox' in outcome) || outcome.outbox.emailIds.length === 0) return outcome;
    const info = Context.current().info;
    const left = info.startToCloseTimeoutMs - (Date.now() - info.currentAttemptScheduledTimestampMs);
    const claimed = 'claimed' in outcome ? outcome.claimed : undefined;
    const unsent = await mailer.sendWithin(outcome.outbox.emailIds, Math.min(2_000, left - 2_000), claimed);
    const answer = { ...outcome, outbox: { ...outcome.outbox, emailIds: unsent } };
    // What was claimed (the email's text) is this process's, never part of the workflow's answer.
    if ('claimed' in answer) delete answer.claimed;
    return answer;
  }

  return {
    /** A billing period begins: its invoice (free periods are paid at once). */
    async openInvoice(input: PeriodInvoiceInput): Promise<OpenedInvoice> {
      return openPeriod(input);
    },

    /** One attempt to charge an invoice with the subscription's card. */
    async chargeInvoice(req: ChargeRequest): Promise<ChargeOutcome> {
      return sendingItsEmails(await charge(req));
    },

    /**
     * A billing period begins: its invoice opened (or found) and its first attempt, as
     * `chargeInvoice` makes it (RENEWAL_OPEN_IN_CHARGE: one step of the workflow instead of two).
     * Idempotent as a whole: run again, it finds the invoice, and the attempt answers what is
     * recorded or asks the provider again under the same key.
     */
    async openAndChargeInvoice(input: {
      period: PeriodInvoiceInput;
      retryDelayMs: number | null;
      discardOnReject: boolean;
    }): Promise<OpenedAndCharged> {
      const marked = await openPeriod(input.period, true);
      if (marked.kind !== 'open') return { opened: marked };
      const { chargeMarkedSent, forCharge, ...opened } = marked;
      // Attempts recorded already (this step retried after its attempt was recorded, or an
      // earlier run's): the last one is answered from the record, as a retried charge is.
      const request = {
        invoiceId: opened.invoiceId,
        attempt: Math.max(1, opened.attempts),
        retryDelayMs: input.retryDelayMs,
        discardOnReject: input.discardOnReject,
      };
      return { opened, charged: await sendingItsEmails(await charge(request, chargeMarkedSent === true, forCharge)) };
    },

    /** After an ambiguous attempt: what became of it at the provider (by its idempotency key)? */
    async reconcileInvoiceCharge(req: ChargeRequest): Promise<ChargeOutcome> {
      return sendingItsEmails(await reconcile(req));
    },
  };
}

/** Used on replay paths, where the recorded answer wins and this one is never applied. */
const declinedNoop: ChargeResult = { kind: 'declined', transactionId: null, failureCode: '', failureMessage: '' };
