import Stripe from 'stripe';
import { createHash } from 'node:crypto';
import { ProviderError, ProviderWebhookError } from '../errors';
import type {
  CreatePaymentInput,
  CreateRefundInput,
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

/** Lookups by key list what was created since the record, widened by this for clock skew. */
export const LOOKUP_SKEW_MS = 10 * 60_000;

/** The hosted flows expand what the mapping needs (saved card, amount) on every read. */
const SESSION_EXPAND = ['payment_intent', 'setup_intent'];

/**
 * The Stripe adapter: transport through the official `stripe` package, mapping in ./mapping.
 * No retries here (maxNetworkRetries 0): our workflows retry, and reconcile by idempotency key.
 * Our ids are Stripe's idempotency keys and travel in `metadata.idempotencyKey`, which is how a
 * request whose answer was lost is found again (Stripe cannot look a key up, and its Search API
 * is eventually consistent, so lookups list by creation time, which is strongly consistent).
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

  async createPayment(input: CreatePaymentInput): Promise<ProviderPayment> {
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
            off_session: true,
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
    const expiry = input.expiresAt ? { expires_at: checkoutExpiresAt(input.expiresAt, new Date()) } : {};

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
    const created = { gte: Math.floor((by.notBefore.getTime() - LOOKUP_SKEW_MS) / 1000) };
    if (by.mode === 'card') {
      const match = await this.firstWithKey(
        this.#stripe.paymentIntents.list({ created, limit: 100 }),
        by.idempotencyKey,
      );
      return match ? mapPaymentIntent(match) : null;
    }
    const match = await this.firstWithKey(
      this.#stripe.checkout.sessions.list({ created, limit: 100 }),
      by.idempotencyKey,
    );
    if (!match) return null;
    // Read it again with what the mapping needs expanded (lists cannot expand that deep).
    const session = await this.retrieveSession(parseStripe(listItemSchema, match, 'list item').id);
    return session ? mapCheckoutSession(session) : null;
  }

  /** Walks a list (every page) for the object carrying our idempotency key in its metadata. */
  private async firstWithKey<T>(list: AsyncIterable<T>, idempotencyKey: string): Promise<T | null> {
    try {
      for await (const item of list) {
        if (parseStripe(listItemSchema, item, 'list item').metadata?.idempotencyKey === idempotencyKey) return item;
      }
      return null;
    } catch (err) {
      throw mapStripeError(err);
    }
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
    const paymentIntentId = await this.paymentIntentOf(by.transactionId);
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
