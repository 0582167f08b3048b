import { createHash } from 'node:crypto';
import { ApplicationFailure, Context } from '@temporalio/activity';
import { Invoice, Subscription } from '../src/db/entities';
import {
  applyInvoiceCharge,
  cancelSubscription,
  discardSubscription,
  CARD_UPDATABLE_STATUSES,
  loadInvoiceForCharge,
  markAwaitingAuthorization,
  markCardUpdatePage,
  openPeriodInvoice,
  replaceSubscriptionCard,
  saveAuthorizedCard,
  type AppliedCharge,
  type CardReplacement,
  type ChargeResult,
  type InvoiceForCharge,
  type OpenedInvoice,
  type SubscriptionForCharge,
  type Outbox,
} from '../src/domain/subscriptions';
import { invoiceAttemptKey } from '../src/rules/subscriptionPlan';
import type { PaymentLookup, PaymentProvider, ProviderPayment } from '../src/providers/types';
import type { ActivityDeps } from './deps';
import { createMailer, EMAIL_CLAIM_SECONDS, type Mailer } from './emails';
import { recordProvider } from './recordProvider';
import { clearProviderCallSent, sentProviderCall } from './providerCalls';
import { attemptFailure, mismatchFailure, providerConflict, reconcileFailure, refusal } from './providerFailures';
/** What opening a period's invoice found or made; the subscription workflow branches on it. */
export type { OpenedInvoice };

export type ChargeOutcome = AppliedCharge | { kind: 'rejected'; code: string; message: string } | { kind: 'not_found' };

/** What a card update came to: the card replaced (or already that one), or why not. */
export type CardChange = CardReplacement | { kind: 'rejected'; code: string; message: string };

/** A hosted card update's page, created at the provider (or why not). */
export type CardPage =
  | { kind: 'pending'; transactionId: string }
  | { kind: 'not_updatable' | 'missing' }
  | { kind: 'rejected'; code: string; message: string };

/** Where a hosted card update stands: authorized (the card replaced), still open, or over. */
export type CardUpdateState = 'authorized' | 'waiting' | 'ended';

export interface ChargeRequest {
  invoiceId: string;
  /** 1-based attempt number on this invoice; picks the provider idempotency key. */
  attempt: number;
  /** Delay to the next attempt if this one is declined; null when it is the last. */
  retryDelayMs: number | null;
  /** The subscription's very first charge (token flow): a refused token discards it. */
  discardOnReject: boolean;
}

/** A billing period's start as the workflow sends it (dates as ISO strings). */
export interface PeriodInvoiceInput {
  subscriptionId: string;
  periodIndex: number;
  phaseId: string;
  amountMinor: number;
  periodStart: string;
  periodEnd: string;
}

/** A period's invoice opened, with its first charge attempt when that was made. */
export interface OpenedAndCharged {
  opened: OpenedInvoice;
  /**
   * Attempt 1's outcome, or the last recorded attempt's when attempts were recorded already
   * (`opened.attempts`); absent when the invoice is not open.
   */
  charged?: ChargeOutcome;
}

/**
 * The subscription workflow's side effects: the provider (card authorization on the hosted page,
 * invoice charges) and PostgreSQL (src/domain/subscriptions.ts). Each is idempotent: the provider
 * dedupes on our keys and each state change checks what is recorded first.
 */
export function createSubscriptionActivities(deps: ActivityDeps, mailer: Mailer = createMailer(deps)) {
  const { orm, providers, publicBaseUrl, logger } = deps;
  const load = (id: string) => orm.em.fork().findOne(Subscription, { id });
  const providerOf = async (s: Subscription): Promise<PaymentProvider> => {
    const provider = await recordProvider(providers, s);
    if (!provider) throw ApplicationFailure.nonRetryable(`no provider ${s.processor}`, 'provider_not_configured');
    return provider;
  };
  const metadataOf = (s: Pick<SubscriptionForCharge, 'id' | 'merchant'>, invoiceId?: string) => ({
    subscriptionId: s.id,
    merchantId: s.merchant.id,
    ...(invoiceId ? { invoiceId } : {}),
  });

  /** A card authorization the customer completed: keep its token (the card charged from now on). */
  const followSetup = async (s: Subscription, pp: ProviderPayment): Promise<'authorized' | 'waiting' | 'declined'> => {
    if (pp.status === 'succeeded' && pp.savedCardToken) {
      await saveAuthorizedCard(orm.em.fork(), s.id, pp.savedCardToken);
      return 'authorized';
    }
    return pp.status === 'pending' ? 'waiting' : 'declined';
  };

  /**
   * The provider's answer to an invoice attempt, trusted only when it is about what we asked:
   * a capture of another amount or currency is not recorded (an operator must look).
   */
  const chargeResultOf = (invoice: InvoiceForCharge, pp: ProviderPayment): ChargeResult => {
    if (pp.amountMinor !== invoice.amountMinor || pp.currency !== invoice.currency) {
      logger.error(
        { invoiceId: invoice.id, transactionId: pp.transactionId, ours: [invoice.amountMinor, invoice.currency] },
        'provider answered for another amount or currency; not recorded',
      );
      throw ApplicationFailure.retryable(
        `provider transaction ${pp.transactionId} does not match invoice ${invoice.id}`,
        'reconciliation_mismatch',
      );
    }
    if (pp.status === 'succeeded') return { kind: 'paid', transactionId: pp.transactionId };
    if (pp.status === 'failed') {
      return {
        kind: 'declined',
        transactionId: pp.transactionId,
        failureCode: pp.failureCode ?? 'card_declined',
        failureMessage: pp.failureMessage ?? 'The card was declined.',
      };
    }
    // A card charge is settled in the provider's answer; anything else is not an answer to trust.
    throw ApplicationFailure.nonRetryable(`card charge answered ${pp.status}`, 'invalid_response');
  };

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
    return applyInvoiceCharge(orm.em, invoice, req.attempt, chargeResultOf(invoice, pp), req.retryDelayMs, {
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
      return await applyInvoiceCharge(orm.em, invoice, req.attempt, chargeResultOf(invoice, pp), req.retryDelayMs);
    } catch (err) {
      throw reconcileFailure(err);
    }
  }

  /**
   * Before a cancellation voids the open invoice: if a charge of it was sent and its outcome
   * never recorded (the mark is cleared when an attempt is known declined or did nothing), the
   * provider is asked by that attempt's key, and a capture is recorded (the invoice paid) rather
   * than voided. Normally the workflow has settled every attempt before it cancels; this guards
   * runs whose attempt result was lost. The answer is needed: provider trouble is retried.
   */
  async function settleChargeInDoubt(s: Subscription): Promise<Outbox | null> {
    const invoice = await orm.em
      .fork()
      .findOne(
        Invoice,
        { subscription: s.id, status: 'open', providerCallSentAt: { $ne: null } },
        { populate: ['subscription'] },
      );
    if (!invoice) return null;
    const provider = await recordProvider(providers, s);
    if (!provider) throw ApplicationFailure.retryable(`no provider ${s.processor}`, 'provider_not_configured');
    const attempt = invoice.attempts + 1;
    let pp: ProviderPayment | null;
    try {
      pp = await provider.findPayment(chargeLookup(invoice, attempt));
    } catch (err) {
      throw reconcileFailure(err);
    }
    // Nothing captured under that key: the invoice is voided as usual.
    if (pp?.status !== 'succeeded') return null;
    logger.warn(
      { subscriptionId: s.id, invoiceId: invoice.id, transactionId: pp.transactionId },
      'open invoice was captured by an attempt whose result was lost; recorded paid before cancelling',
    );
    const applied = await applyInvoiceCharge(orm.em, invoice, attempt, chargeResultOf(invoice, pp), null);
    return applied.kind === 'paid' ? applied.outbox : null;
  }

  /** A completed hosted card update: its saved card becomes the subscription's. */
  const followCardUpdate = async (s: Subscription, pp: ProviderPayment): Promise<CardUpdateState> => {
    if (pp.status === 'pending') return 'waiting';
    if (pp.status !== 'succeeded' || !pp.savedCardToken) return 'ended';
    const replaced = await replaceSubscriptionCard(orm.em, s.id, pp.savedCardToken);
    return replaced.kind === 'replaced' || replaced.kind === 'unchanged' ? 'authorized' : 'ended';
  };

  const updatable = (s: Subscription) => CARD_UPDATABLE_STATUSES.includes(s.status);

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
      const provider = await recordProvider(providers, s);
      if (!provider) {
        return { kind: 'rejected', code: 'provider_not_configured', message: `No provider for ${s.processor}.` };
      }
      let pp: ProviderPayment;
      try {
        pp = await provider.createPayment({
          idempotencyKey: cardVerificationKey(s.id, input.cardToken),
          amountMinor: 0,
          currency: s.currency,
          mode: 'setup',
          cardToken: input.cardToken,
          ...(s.description ? { description: s.description } : {}),
          metadata: metadataOf(s),
        });
      } catch (err) {
        const refused = refusal(err, logger, { subscriptionId: s.id, processor: s.processor });
        if (refused) return { kind: 'rejected', code: refused.code ?? 'provider_rejected', message: refused.message };
        throw reconcileFailure(err);
      }
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
      const provider = await recordProvider(providers, s);
      if (!provider) {
        return { kind: 'rejected', code: 'provider_not_configured', message: `No provider for ${s.processor}.` };
      }
      let pp: ProviderPayment;
      try {
        pp = await provider.createPayment({
          idempotencyKey: `${s.id}.card-page-${input.page}`,
          amountMinor: 0,
          currency: s.currency,
          mode: 'setup',
          ...(s.returnUrl ? { returnUrl: s.returnUrl } : {}),
          webhookUrl: `${publicBaseUrl}/webhooks/${s.processor}`,
          ...(s.description ? { description: s.description } : {}),
          metadata: metadataOf(s),
        });
      } catch (err) {
        const refused = refusal(err, logger, { subscriptionId: s.id, processor: s.processor });
        if (refused) return { kind: 'rejected', code: refused.code ?? 'provider_rejected', message: refused.message };
        throw reconcileFailure(err);
      }
      const marked = await markCardUpdatePage(orm.em, s.id, {
        transactionId: pp.transactionId,
        redirectUrl: pp.redirectUrl,
      });
      if (marked.kind === 'missing' || marked.kind === 'not_updatable') return { kind: marked.kind };
      return { kind: 'pending', transactionId: pp.transactionId };
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

    /** Is the subscription recorded yet (the API commits right after starting its workflow)? */
    async subscriptionRecorded(subscriptionId: string): Promise<boolean> {
      return (await orm.em.fork().count(Subscription, { id: subscriptionId })) > 0;
    },

    /** No cardToken: creates the hosted card authorization (idempotency key: the subscription id). */
    async requestCardAuthorization(
      subscriptionId: string,
    ): Promise<
      { kind: 'pending' | 'settled' | 'missing'; outbox?: Outbox } | { kind: 'rejected'; code: string; message: string }
    > {
      const s = await load(subscriptionId);
      if (!s) return { kind: 'missing' };
      if (s.status !== 'created') return { kind: 'settled' };
      const provider = await providerOf(s);
      let pp: ProviderPayment;
      try {
        pp = await provider.createPayment({
          idempotencyKey: s.id,
          amountMinor: 0,
          currency: s.currency,
          mode: 'setup',
          ...(s.returnUrl ? { returnUrl: s.returnUrl } : {}),
          webhookUrl: `${publicBaseUrl}/webhooks/${s.processor}`,
          ...(s.description ? { description: s.description } : {}),
          metadata: metadataOf(s),
        });
      } catch (err) {
        const refused = refusal(err, logger, { subscriptionId: s.id, processor: s.processor });
        if (refused) {
          await discardSubscription(orm.em, s.id);
          return { kind: 'rejected', code: refused.code ?? 'provider_rejected', message: refused.message };
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
        const pp = await (await providerOf(s)).findPayment(setupLookup(s));
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

    /** The emails of this subscription still unsent (a new run sends them: nothing is dropped). */
    async unsentSubscriptionEmails(subscriptionId: string): Promise<string[]> {
      const rows: Array<{ id: string }> = await orm.em
        .getConnection()
        .execute(`select id from emails where dedupe_key like ? and sent_at is null order by created_at`, [
          `${subscriptionId}:%`,
        ]);
      return rows.map((r) => r.id);
    },
    /**
     * Cancels the subscription record (open invoices voided) with its email and event. A hosted
     * authorization still open at the provider is cancelled too, so its page stops working.
     */
    async cancelSubscriptionRecord(input: {
      subscriptionId: string;
      reason: string;
      notify: boolean;
    }): Promise<Outbox | null> {
      const s = await load(input.subscriptionId);
      if (!s) return null;
      if (s.status === 'pending' && s.setupTransactionId && !s.cardToken) {
        try {
          await (await providerOf(s)).cancelPayment(s.setupTransactionId);
        } catch (err) {
          // The page may stay usable a while; it cannot lead to a charge (the workflow is done).
          logger.warn({ subscriptionId: s.id, err }, 'could not cancel the card authorization');
        }
      }
      const charged = await settleChargeInDoubt(s);
      const cancelled = await cancelSubscription(orm.em, input.subscriptionId, input.reason, input.notify);
      if (!charged || !cancelled) return cancelled;
      // The receipt and charge event are followed with the cancellation's.
      return {
        ...cancelled,
        emailIds: [...charged.emailIds, ...cancelled.emailIds],
        eventIds: [...charged.eventIds, ...cancelled.eventIds],
      };
    },
  };
}

/** Used on replay paths, where the recorded answer wins and this one is never applied. */
/** How the provider finds what became of one charge attempt of an invoice. */
function chargeLookup(
  invoice: Pick<Invoice, 'id' | 'providerCallSentAt' | 'createdAt'>,
  attempt: number,
): PaymentLookup {
  // The mark is this attempt's (cleared once an attempt is known declined): a retry days after the
  // invoice opened lists only what was created since it was sent, not since the invoice opened.
  return {
    idempotencyKey: invoiceAttemptKey(invoice.id, attempt),
    mode: 'card',
    notBefore: invoice.providerCallSentAt ?? invoice.createdAt,
  };
}

/** The provider key of a new card's verification: one per subscription and token. */
function cardVerificationKey(subscriptionId: string, cardToken: string): string {
  return `${subscriptionId}.card-${createHash('sha256').update(cardToken).digest('hex').slice(0, 32)}`;
}

/** How the provider finds what became of a subscription's hosted card authorization. */
function setupLookup(s: Subscription): PaymentLookup {
  return { idempotencyKey: s.id, mode: 'setup', notBefore: s.createdAt };
}

const declinedNoop: ChargeResult = { kind: 'declined', transactionId: null, failureCode: '', failureMessage: '' };
