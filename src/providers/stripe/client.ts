import Stripe from 'stripe';
import { createHash } from 'node:crypto';
import { ProviderError, ProviderWebhookError } from '../errors';
import type {
  AttachPaymentMethodInput,
  AttachPaymentMethodResult,
  CreatePaymentInput,
  CreateRefundInput,
  LookupProgress,
  PaymentLookup,
  PaymentProvider,
  ProviderDispute,
  ProviderPayment,
  ProviderRefund,
  ProviderWebhookEvent,
  RefundLookup,
} from '../types';
import {
  checkoutExpiresAt,
  checkoutSessionSchema,
  customerSchema,
  listItemSchema,
  mapAttachDecline,
  mapAttachedPaymentMethod,
  mapCardDecline,
  mapCheckoutSession,
  mapEvent,
  mapPaymentIntent,
  mapSetupIntent,
  mapRefund,
  mapDispute,
  mapStripeError,
  parseCardToken,
  parseStripe,
  refundReason,
  stripeCurrency,
  toStripeAmount,
} from './mapping';

export interface StripeProviderOptions {
  /** The merchant's Stripe secret key (`sk_live_...` / `sk_test_...` / `rk_...`). Never logged. */
  secretKey: string;
  /** The signing secret of the merchant's webhook endpoint (`whsec_...`); null: none configured. */
  webhookSecret: string | null;
  /** Stripe's API (`https://api.stripe.com`), or stripe-mock in tests (STRIPE_API_BASE). */
  apiBase: string;
  /** Every call gives up after this long; the outcome is then unknown and must be asked for. */
  timeoutMs: number;
}

/**
 * How long after a request was first sent it is found again by replaying it under the same key.
 * Stripe keeps an idempotency key at least 24 hours (docs.stripe.com/api/idempotent_requests);
 * an hour less, for the clock difference and a replay that is itself slow.
 */
export const REPLAY_WINDOW_MS = 23 * 3_600_000;

/**
 * How long after a request a search by our key that finds nothing is not yet an answer: Stripe's
 * Search API is eventually consistent (new objects are searchable "typically within a minute",
 * later during an incident). Until then such a lookup fails as ambiguous and is asked again.
 */
export const SEARCH_SETTLE_MS = 15 * 60_000;

/** A search by our key: one page, exact metadata match (more than one would be a bug of ours). */
const SEARCH_LIMIT = 10;

/**
 * The hosted flows expand what the mapping needs (saved card and its details, amount) on every
 * read.
 */
const SESSION_EXPAND = [
  'payment_intent',
  'payment_intent.payment_method',
  'setup_intent',
  'setup_intent.payment_method',
];

/**
 * The Stripe adapter: transport through the official `stripe` package, mapping in ./mapping.
 * No retries here (maxNetworkRetries 0): our workflows retry, and reconcile by idempotency key.
 * Our ids are Stripe's idempotency keys and travel in `metadata.idempotencyKey`. A request whose
 * answer was lost is found again without scanning anything (decision 0058): by its object id once
 * known; else by replaying the same request under the same key within Stripe's idempotency window
 * (Stripe answers the original outcome); past it, by our key through the Search API (settled by
 * then) and the lists filtered by one PaymentIntent or one Customer. Every lookup is at most three
 * bounded calls, each within `timeoutMs`.
 */
export class StripeProvider implements PaymentProvider {
  readonly name = 'stripe';
  // `#` fields: the key (inside the client) and the webhook secret stay out of any serialisation
  // of the provider (a log line that includes it, JSON.stringify).
  readonly #stripe: Stripe;
  readonly #webhookSecret: string | null;

  constructor(opts: StripeProviderOptions) {
    this.#webhookSecret = opts.webhookSecret;
    const url = new URL(opts.apiBase);
    const protocol = url.protocol === 'http:' ? 'http' : 'https';
    this.#stripe = new Stripe(opts.secretKey, {
      host: url.hostname,
      port: url.port || (protocol === 'http' ? 80 : 443),
      protocol,
      timeout: opts.timeoutMs,
      maxNetworkRetries: 0,
      telemetry: false,
    });
  }

  /** One Stripe call, its failure mapped to what it means for money. */
  private async call<T>(fn: (stripe: Stripe) => Promise<T>): Promise<T> {
    try {
      return await fn(this.#stripe);
    } catch (err) {
      throw mapStripeError(err);
    }
  }

  /** A retrieve where "no such object" is an answer (null), not an error. */
  private async retrieveOrNull<T>(fn: (stripe: Stripe) => Promise<T>): Promise<T | null> {
    try {
      return await fn(this.#stripe);
    } catch (err) {
      if (err instanceof Stripe.errors.StripeInvalidRequestError && err.statusCode === 404) return null;
      throw mapStripeError(err);
    }
  }

  createPayment(input: CreatePaymentInput): Promise<ProviderPayment> {
    return this.create(input, new Date());
  }

  /**
   * `now` clamps a Checkout Session's expiry: a replay passes when the request was first sent,
   * so that it sends the same parameters (Stripe refuses a key reused with others).
   */
  private async create(input: CreatePaymentInput, now: Date): Promise<ProviderPayment> {
    const metadata = { ...input.metadata, idempotencyKey: input.idempotencyKey };
    const requested = { amountMinor: input.amountMinor, currency: input.currency };
    if (input.mode === 'card') {
      if (!input.cardToken)
        throw new ProviderError('rejected', 'A card payment needs a card token.', 'invalid_card_token');
      const { customer, paymentMethod } = parseCardToken(input.cardToken);
      try {
        const pi = await this.#stripe.paymentIntents.create(
          {
            amount: toStripeAmount(input.amountMinor, input.currency),
            currency: stripeCurrency(input.currency),
            payment_method: paymentMethod,
            ...(customer ? { customer } : {}),
            confirm: true,
            // With somewhere to send the customer back, confirmed on-session: a card that needs
            // 3-D Secure answers requires_action with a page (next_action.redirect_to_url).
            // Without (a renewal, an invoice retry): off-session, as a merchant-initiated charge.
            ...(input.returnUrl ? { return_url: input.returnUrl } : { off_session: true }),
            ...(input.description ? { description: input.description } : {}),
            metadata,
          },
          { idempotencyKey: input.idempotencyKey },
        );
        return mapPaymentIntent(pi);
      } catch (err) {
        // A decline on confirm is an answer: the failed PaymentIntent, with its decline code.
        const declined = mapCardDecline(err, requested);
        if (declined) return declined;
        throw mapStripeError(err);
      }
    }

    if (input.mode === 'setup' && input.cardToken) {
      // A new card for a subscription: verified and kept by a confirmed, off-session SetupIntent.
      // A refusal (StripeCardError, an unknown PaymentMethod) is a rejection: nothing was saved.
      const { customer, paymentMethod } = parseCardToken(input.cardToken);
      const si = await this.call((s) =>
        s.setupIntents.create(
          {
            payment_method: paymentMethod,
            ...(customer ? { customer } : {}),
            confirm: true,
            usage: 'off_session',
            ...(input.description ? { description: input.description } : {}),
            metadata,
          },
          { idempotencyKey: input.idempotencyKey },
        ),
      );
      return mapSetupIntent(si, input.currency);
    }

    if (!input.returnUrl) {
      throw new ProviderError(
        'rejected',
        'Stripe Checkout needs a returnUrl to send the customer back to.',
        'return_url_required',
      );
    }
    const urls = { success_url: input.returnUrl, cancel_url: input.returnUrl };
    const expiry = input.expiresAt ? { expires_at: checkoutExpiresAt(input.expiresAt, now) } : {};

    if (input.mode === 'setup') {
      // A Customer first, to attach the card to (its own key: a retry finds the same one).
      const customer = parseStripe(
        customerSchema,
        await this.call((s) =>
          s.customers.create(
            { ...(input.description ? { description: input.description } : {}), metadata },
            { idempotencyKey: `${input.idempotencyKey}:customer` },
          ),
        ),
        'Customer',
      );
      const session = await this.call((s) =>
        s.checkout.sessions.create(
          {
            mode: 'setup',
            customer: customer.id,
            currency: stripeCurrency(input.currency),
            ...urls,
            ...expiry,
            metadata,
            setup_intent_data: { metadata, ...(input.description ? { description: input.description } : {}) },
            expand: SESSION_EXPAND,
          },
          { idempotencyKey: input.idempotencyKey },
        ),
      );
      return mapCheckoutSession(session, requested);
    }

    const session = await this.call((s) =>
      s.checkout.sessions.create(
        {
          mode: 'payment',
          line_items: [
            {
              quantity: 1,
              price_data: {
                currency: stripeCurrency(input.currency),
                unit_amount: toStripeAmount(input.amountMinor, input.currency),
                product_data: { name: input.description || 'Payment' },
              },
            },
          ],
          ...urls,
          ...expiry,
          metadata,
          payment_intent_data: {
            metadata,
            ...(input.description ? { description: input.description } : {}),
            ...(input.saveCard ? { setup_future_usage: 'off_session' as const } : {}),
          },
          ...(input.saveCard ? { customer_creation: 'always' as const } : {}),
          expand: SESSION_EXPAND,
        },
        { idempotencyKey: input.idempotencyKey },
      ),
    );
    return mapCheckoutSession(session, requested);
  }

  private async retrieveSession(id: string): Promise<unknown> {
    return this.retrieveOrNull((s) => s.checkout.sessions.retrieve(id, { expand: SESSION_EXPAND }));
  }

  async findPayment(by: { transactionId: string } | PaymentLookup): Promise<ProviderPayment | null> {
    if ('transactionId' in by) {
      if (by.transactionId.startsWith('cs_')) {
        const session = await this.retrieveSession(by.transactionId);
        return session ? mapCheckoutSession(session) : null;
      }
      const pi = await this.retrieveOrNull((s) => s.paymentIntents.retrieve(by.transactionId));
      return pi ? mapPaymentIntent(pi) : null;
    }
    // A retried attempt goes on from what an earlier one learned (decision 0064): an object found
    // is read by its id; a replay that could not answer is not tried again.
    const from = by.resume?.from ?? {};
    const learned = (progress: LookupProgress) => by.resume?.learned(progress);
    const found = (payment: ProviderPayment): ProviderPayment => {
      learned({ objectId: payment.transactionId });
      return payment;
    };
    const age = Date.now() - by.notBefore.getTime();
    let searched = await this.resumePayment(by, from.objectId, learned);
    if (searched === undefined) {
      if (by.request && by.request.idempotencyKey === by.idempotencyKey && !from.replayPassed) {
        if (age < REPLAY_WINDOW_MS) {
          const replayed = await this.replay(by.request, by.notBefore);
          if (replayed !== 'conflict') return replayed && found(replayed);
        }
        learned({ replayPassed: true });
      }
      searched =
        by.mode === 'card'
          ? await this.paymentIntentByKey(by.idempotencyKey)
          : by.mode === 'checkout'
            ? await this.paymentSessionByKey(by.idempotencyKey, learned)
            : await this.setupSessionByKey(by.idempotencyKey, learned);
    }
    if (searched) return found(searched);
    if (age < SEARCH_SETTLE_MS) {
      throw new ProviderError(
        'timeout',
        `Stripe's search does not show ${by.idempotencyKey} yet (it is eventually consistent): asked again later`,
      );
    }
    return null;
  }

  /**
   * A lookup resumed from an object an earlier attempt found: the payment itself (a PaymentIntent
   * of a card charge, a Checkout Session) read by id; a hosted payment's PaymentIntent or a setup's
   * Customer, whose sessions are listed next. undefined: nothing to resume from (or the object is
   * gone, which ids never are): the lookup starts over.
   */
  private async resumePayment(
    by: PaymentLookup,
    objectId: string | undefined,
    learned: (progress: LookupProgress) => void,
  ): Promise<ProviderPayment | null | undefined> {
    if (!objectId) return undefined;
    if (objectId.startsWith('cs_') || (by.mode === 'card' && objectId.startsWith('pi_')))
      return (await this.findPayment({ transactionId: objectId })) ?? undefined;
    if (by.mode === 'checkout' && objectId.startsWith('pi_'))
      return this.sessionOf({ payment_intent: objectId }, by.idempotencyKey, learned);
    if (by.mode === 'setup' && objectId.startsWith('cus_'))
      return this.sessionOf({ customer: objectId }, by.idempotencyKey, learned);
    return undefined;
  }

  /**
   * The same request under the same key: Stripe answers what it did with it, or performs it now if
   * it never began (the outcome the caller waits for either way). Refused (400): Stripe keeps no
   * outcome of a request that failed validation, and a replayed refusal was a refusal the first
   * time too, so nothing was performed: null. `conflict`: Stripe holds the key with other
   * parameters (the record changed since, e.g. a new card) or is still performing the first
   * request: it cannot answer this way.
   */
  private async replay(request: CreatePaymentInput, firstSentAt: Date): Promise<ProviderPayment | null | 'conflict'> {
    try {
      return await this.create(request, firstSentAt);
    } catch (err) {
      if (err instanceof ProviderError && err.kind === 'rejected') return err.conflict ? 'conflict' : null;
      throw err;
    }
  }

  /** The PaymentIntent carrying our key in its metadata (Search API: one bounded page). */
  private async paymentIntentByKey(idempotencyKey: string): Promise<ProviderPayment | null> {
    const result = await this.call((s) =>
      s.paymentIntents.search({ query: metadataQuery(idempotencyKey), limit: SEARCH_LIMIT }),
    );
    const match = withKey(result.data, idempotencyKey);
    return match ? mapPaymentIntent(match) : null;
  }

  /**
   * A hosted payment's Checkout Session by our key. Sessions are not searchable, but a paid
   * session's PaymentIntent carries our metadata (payment_intent_data): found by search, then its
   * session by the list filtered by that PaymentIntent. None: nothing was paid through a session
   * of ours (an unpaid one has expired by the time this is asked: Stripe keeps them 24 h at most).
   */
  private async paymentSessionByKey(
    idempotencyKey: string,
    learned: (progress: LookupProgress) => void,
  ): Promise<ProviderPayment | null> {
    const result = await this.call((s) =>
      s.paymentIntents.search({ query: metadataQuery(idempotencyKey), limit: SEARCH_LIMIT }),
    );
    const pi = withKey(result.data, idempotencyKey);
    if (!pi) return null;
    const paymentIntent = parseStripe(listItemSchema, pi, 'PaymentIntent').id;
    learned({ objectId: paymentIntent });
    return this.sessionOf({ payment_intent: paymentIntent }, idempotencyKey, learned);
  }

  /**
   * A subscription's setup session by our key: its Customer was created for it, with our key
   * (searchable), and the session is one of that Customer's (a list filtered by the Customer).
   */
  private async setupSessionByKey(
    idempotencyKey: string,
    learned: (progress: LookupProgress) => void,
  ): Promise<ProviderPayment | null> {
    const customers = await this.call((s) =>
      s.customers.search({ query: metadataQuery(idempotencyKey), limit: SEARCH_LIMIT }),
    );
    const customer = withKey(customers.data, idempotencyKey);
    if (!customer) return null;
    const customerId = parseStripe(listItemSchema, customer, 'Customer').id;
    learned({ objectId: customerId });
    return this.sessionOf({ customer: customerId }, idempotencyKey, learned);
  }

  /** Our session among those of one PaymentIntent or one Customer (a filtered list), then read by id. */
  private async sessionOf(
    filter: { payment_intent: string } | { customer: string },
    idempotencyKey: string,
    learned: (progress: LookupProgress) => void,
  ): Promise<ProviderPayment | null> {
    const sessions = await this.call((s) =>
      s.checkout.sessions.list({ ...filter, limit: 'customer' in filter ? 100 : 10 }),
    );
    const match = withKey(sessions.data, idempotencyKey);
    if (!match) return null;
    const sessionId = parseStripe(listItemSchema, match, 'list item').id;
    learned({ objectId: sessionId });
    const session = await this.retrieveSession(sessionId);
    return session ? mapCheckoutSession(session) : null;
  }

  async cancelPayment(transactionId: string): Promise<ProviderPayment> {
    if (transactionId.startsWith('cs_')) {
      const current = mapCheckoutSession(await this.mustRetrieveSession(transactionId));
      if (current.status !== 'pending') return current;
      try {
        await this.#stripe.checkout.sessions.expire(transactionId);
      } catch (err) {
        // Completed (or expired) meanwhile: Stripe refuses to expire it; what it is now counts.
        if (!(err instanceof Stripe.errors.StripeInvalidRequestError)) throw mapStripeError(err);
      }
      return mapCheckoutSession(await this.mustRetrieveSession(transactionId));
    }
    const current = mapPaymentIntent(await this.call((s) => s.paymentIntents.retrieve(transactionId)));
    if (current.status === 'succeeded' || current.status === 'canceled') return current;
    try {
      return mapPaymentIntent(await this.#stripe.paymentIntents.cancel(transactionId));
    } catch (err) {
      if (!(err instanceof Stripe.errors.StripeInvalidRequestError)) throw mapStripeError(err);
      return mapPaymentIntent(await this.call((s) => s.paymentIntents.retrieve(transactionId)));
    }
  }

  private async mustRetrieveSession(id: string): Promise<unknown> {
    return this.call((s) => s.checkout.sessions.retrieve(id, { expand: SESSION_EXPAND }));
  }

  /** The PaymentIntent a transaction of ours refunds: itself, or a Checkout Session's. */
  private async paymentIntentOf(transactionId: string): Promise<string> {
    if (!transactionId.startsWith('cs_')) return transactionId;
    const session = parseStripe(
      checkoutSessionSchema,
      await this.call((s) => s.checkout.sessions.retrieve(transactionId)),
      'Checkout Session',
    );
    const pi = session.payment_intent;
    const id = typeof pi === 'string' ? pi : pi?.id;
    if (!id) throw new ProviderError('rejected', `Checkout Session ${transactionId} has no payment`, 'not_paid');
    return id;
  }

  async createRefund(input: CreateRefundInput): Promise<ProviderRefund> {
    const paymentIntentId = await this.paymentIntentOf(input.transactionId);
    const reason = refundReason(input.reason);
    const refund = await this.call((s) =>
      s.refunds.create(
        {
          payment_intent: paymentIntentId,
          amount: toStripeAmount(input.amountMinor, input.currency),
          ...(reason.reason ? { reason: reason.reason } : {}),
          metadata: {
            ...input.metadata,
            ...reason.metadata,
            idempotencyKey: input.idempotencyKey,
            reference_id: input.referenceId,
          },
        },
        { idempotencyKey: input.idempotencyKey },
      ),
    );
    return mapRefund(refund, { transactionId: input.transactionId, paymentIntentId, referenceId: input.referenceId });
  }

  async findRefund(
    by: { refundId: string } | RefundLookup | { referenceId: string; transactionId: string },
  ): Promise<ProviderRefund | null> {
    if ('refundId' in by) {
      const refund = await this.retrieveOrNull((s) => s.refunds.retrieve(by.refundId));
      return refund ? mapRefund(refund) : null;
    }
    // A retried attempt goes on from the PaymentIntent an earlier one found (decision 0064).
    const resume = 'resume' in by ? by.resume : undefined;
    const known = resume?.from.objectId;
    const paymentIntentId = known?.startsWith('pi_') ? known : await this.paymentIntentOf(by.transactionId);
    if (paymentIntentId !== known) resume?.learned({ objectId: paymentIntentId });
    const [field, value] =
      'idempotencyKey' in by ? ['idempotencyKey', by.idempotencyKey] : ['reference_id', by.referenceId];
    try {
      for await (const item of this.#stripe.refunds.list({ payment_intent: paymentIntentId, limit: 100 })) {
        if (parseStripe(listItemSchema, item, 'list item').metadata?.[field] === value)
          return mapRefund(item, { transactionId: by.transactionId, paymentIntentId });
      }
      return null;
    } catch (err) {
      throw mapStripeError(err);
    }
  }

  async findDispute(disputeId: string): Promise<ProviderDispute | null> {
    const dispute = await this.retrieveOrNull((s) => s.disputes.retrieve(disputeId));
    return dispute ? mapDispute(dispute) : null;
  }

  /**
   * The evidence as `uncategorized_text`, submitted at once. Its idempotency key is the dispute
   * and the text's digest: a retried call gets Stripe's first answer, never a second submission.
   */
  async submitDisputeEvidence(disputeId: string, text: string): Promise<ProviderDispute> {
    const digest = createHash('sha256').update(text).digest('hex').slice(0, 32);
    const dispute = await this.call((s) =>
      s.disputes.update(
        disputeId,
        { evidence: { uncategorized_text: text }, submit: true },
        { idempotencyKey: `dispute-evidence-${disputeId}-${digest}` },
      ),
    );
    return mapDispute(dispute);
  }

  /** Stripe's `close`: the merchant concedes; Stripe then says `lost`, which is our `accepted`. */
  async acceptDispute(disputeId: string): Promise<ProviderDispute> {
    const dispute = await this.call((s) =>
      s.disputes.close(disputeId, {}, { idempotencyKey: `dispute-accept-${disputeId}` }),
    );
    return mapDispute(dispute, true);
  }

  /**
   * A Customer (created at the first attach, its own key: a retry finds the same one), then the
   * PaymentMethod attached to it under our payment method id. A card Stripe refuses to attach
   * (StripeCardError) is a declined verification.
   */
  async attachPaymentMethod(input: AttachPaymentMethodInput): Promise<AttachPaymentMethodResult> {
    const { paymentMethod } = parseCardToken(input.cardToken);
    const customer =
      input.customer.providerCustomerId ??
      parseStripe(
        customerSchema,
        await this.call((s) =>
          s.customers.create(
            {
              ...(input.customer.email ? { email: input.customer.email } : {}),
              ...(input.customer.name ? { name: input.customer.name } : {}),
              metadata: { customerId: input.customer.id },
            },
            { idempotencyKey: `${input.customer.id}:customer` },
          ),
        ),
        'Customer',
      ).id;
    try {
      const pm = await this.#stripe.paymentMethods.attach(
        paymentMethod,
        { customer },
        { idempotencyKey: input.idempotencyKey },
      );
      return mapAttachedPaymentMethod(pm, customer);
    } catch (err) {
      const declined = mapAttachDecline(err);
      if (declined) return declined;
      throw mapStripeError(err);
    }
  }

  async detachPaymentMethod(reference: string): Promise<void> {
    const { paymentMethod } = parseCardToken(reference);
    // Already detached or gone: nothing to do.
    await this.retrieveOrNull((s) => s.paymentMethods.detach(paymentMethod));
  }

  parseWebhook(rawBody: string, headers: Record<string, string | string[] | undefined>): ProviderWebhookEvent {
    if (!this.#webhookSecret) throw new ProviderWebhookError('no Stripe webhook secret is configured');
    const header = headers['stripe-signature'];
    let event: unknown;
    try {
      event = this.#stripe.webhooks.constructEvent(
        rawBody,
        (Array.isArray(header) ? header[0] : header) ?? '',
        this.#webhookSecret,
      );
    } catch (err) {
      throw new ProviderWebhookError(`Stripe signature does not verify: ${(err as Error).message.slice(0, 200)}`);
    }
    return mapEvent(event);
  }
}

/** A Search API query for our key in metadata (our keys are ids: [A-Za-z0-9_.:-]; quotes escaped anyway). */
function metadataQuery(idempotencyKey: string): string {
  return `metadata['idempotencyKey']:'${idempotencyKey.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
}

/** The item carrying exactly our key in its metadata (a search result is checked, never trusted). */
function withKey<T>(items: readonly T[], idempotencyKey: string): T | null {
  return (
    items.find((item) => parseStripe(listItemSchema, item, 'list item').metadata?.idempotencyKey === idempotencyKey) ??
    null
  );
}
