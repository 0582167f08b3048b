import Stripe from 'stripe';
import { z } from 'zod';
import { currencyExponent } from '../../rules/money';
import { ProviderError, ProviderWebhookError } from '../errors';
import type {
  AttachPaymentMethodResult,
  CardDetails,
  ProviderDispute,
  ProviderDisputeStatus,
  ProviderPayment,
  ProviderRefund,
  ProviderWebhookEvent,
} from '../types';

/**
 * Pure mapping between Stripe's objects and errors and our provider types: no I/O here (the
 * `stripe` import is for its error classes only). Every Stripe object we rely on is validated:
 * an unexpected shape is `invalid_response`, never a guess.
 */

// ---------------------------------------------------------------------------------------------
// Amounts: Stripe's minor units are not always ISO 4217's (docs.stripe.com/currencies).

/** Zero-decimal for Stripe (MGA is two-decimal in ISO 4217, zero-decimal for Stripe). */
const STRIPE_ZERO_DECIMAL = new Set('BIF CLP DJF GNF JPY KMF KRW MGA PYG RWF UGX VND VUV XAF XOF XPF'.split(' '));
/** Three-decimal for Stripe; amounts must end in 0 (Stripe's partners take no fils/baisa). */
const STRIPE_THREE_DECIMAL = new Set('BHD JOD KWD OMR TND'.split(' '));
/**
 * Zero-decimal in ISO 4217 but two-decimal in Stripe's API, where amounts must be whole units
 * (multiples of 100). ISK is the one: its ISO exponent is 0, so x100 always lands on a multiple.
 */
const STRIPE_WHOLE_UNITS_ONLY = new Set(['ISK']);

function stripeExponent(currency: string): number {
  const c = currency.toUpperCase();
  if (STRIPE_ZERO_DECIMAL.has(c)) return 0;
  if (STRIPE_THREE_DECIMAL.has(c)) return 3;
  return 2;
}

/**
 * Our minor units -> Stripe's `amount`. What Stripe cannot represent (a fraction Stripe has no
 * unit for, or a three-decimal amount not ending in 0) is refused here as `rejected`, never
 * rounded: rounding would charge another amount than the merchant asked for.
 */
export function toStripeAmount(minor: number, currency: string): number {
  const ours = currencyExponent(currency);
  const theirs = stripeExponent(currency);
  const c = currency.toUpperCase();
  const refuse = (why: string) =>
    new ProviderError('rejected', `Stripe cannot take ${minor} minor units of ${c}: ${why}`, 'amount_not_supported');
  let amount: number;
  if (theirs >= ours) amount = minor * 10 ** (theirs - ours);
  else {
    const factor = 10 ** (ours - theirs);
    if (minor % factor !== 0) throw refuse(`Stripe takes ${theirs} decimals for ${c}`);
    amount = minor / factor;
  }
  if (STRIPE_THREE_DECIMAL.has(c) && amount % 10 !== 0) throw refuse('the last decimal must be 0');
  if (STRIPE_WHOLE_UNITS_ONLY.has(c) && amount % 100 !== 0) throw refuse('whole units only');
  return amount;
}

/** Stripe's `amount` -> our minor units (exact, or the answer is not one we can trust). */
export function fromStripeAmount(amount: number, currency: string): number {
  let ours: number;
  try {
    ours = currencyExponent(currency);
  } catch {
    throw new ProviderError('invalid_response', `Stripe answered an unknown currency ${currency}`);
  }
  const theirs = stripeExponent(currency);
  const minor = ours >= theirs ? amount * 10 ** (ours - theirs) : amount / 10 ** (theirs - ours);
  if (!Number.isSafeInteger(minor))
    throw new ProviderError(
      'invalid_response',
      `Stripe amount ${amount} ${currency} is not a whole number of our units`,
    );
  return minor;
}

/** Our currency codes are upper-case; Stripe wants and answers lower-case. */
export const stripeCurrency = (currency: string): string => currency.toLowerCase();

// ---------------------------------------------------------------------------------------------
// Schemas: the fields we rely on, as Stripe's OpenAPI declares them (nullable where it says so).

const metadata = z.record(z.string(), z.string()).nullable().optional();
/** An expandable field: an id, or the object when expanded. */
const expandableId = z
  .union([z.string(), z.object({ id: z.string() }).loose()])
  .nullable()
  .optional();
/** A card as a PaymentMethod describes it (never the number). */
const stripeCard = z
  .object({
    brand: z.string().nullish(),
    last4: z.string().nullish(),
    exp_month: z.number().int().nullish(),
    exp_year: z.number().int().nullish(),
  })
  .loose()
  .nullable()
  .optional();
/** An expandable `payment_method`: its id, or the PaymentMethod with its card when expanded. */
const expandablePaymentMethod = z
  .union([z.string(), z.object({ id: z.string(), card: stripeCard }).loose()])
  .nullable()
  .optional();
const lastError = z
  .object({
    type: z.string().nullish(),
    code: z.string().nullish(),
    decline_code: z.string().nullish(),
    message: z.string().nullish(),
  })
  .nullable()
  .optional();

/**
 * A PaymentIntent's statuses (docs.stripe.com/payments/paymentintents/lifecycle). The schema
 * takes any string: a status Stripe adds later is an answer we cannot read (mapPaymentIntent),
 * never a shape error.
 */
export const PAYMENT_INTENT_STATUSES = [
  'requires_payment_method',
  'requires_confirmation',
  'requires_action',
  'processing',
  'requires_capture',
  'canceled',
  'succeeded',
] as const;

/** Where Stripe sends the customer to authenticate (`next_action.redirect_to_url`). */
const nextAction = z
  .object({
    type: z.string().nullish(),
    redirect_to_url: z.object({ url: z.string().nullish() }).loose().nullish(),
  })
  .loose()
  .nullable()
  .optional();

export const paymentIntentSchema = z.object({
  object: z.literal('payment_intent'),
  id: z.string().min(1),
  status: z.string().min(1),
  amount: z.number().int().nonnegative(),
  currency: z.string().length(3),
  customer: expandableId,
  payment_method: expandablePaymentMethod,
  setup_future_usage: z.string().nullable().optional(),
  last_payment_error: lastError,
  cancellation_reason: z.string().nullable().optional(),
  next_action: nextAction,
  livemode: z.boolean().optional(),
  metadata,
});

export const setupIntentSchema = z.object({
  object: z.literal('setup_intent'),
  id: z.string().min(1),
  status: z.enum([
    'requires_payment_method',
    'requires_confirmation',
    'requires_action',
    'processing',
    'canceled',
    'succeeded',
  ]),
  customer: expandableId,
  payment_method: expandablePaymentMethod,
  last_setup_error: lastError,
  metadata,
});

export const checkoutSessionSchema = z.object({
  object: z.literal('checkout.session'),
  id: z.string().min(1),
  mode: z.enum(['payment', 'setup', 'subscription']),
  status: z.enum(['open', 'complete', 'expired']).nullable(),
  payment_status: z.enum(['paid', 'unpaid', 'no_payment_required']),
  url: z.string().nullable().optional(),
  amount_total: z.number().int().nonnegative().nullable().optional(),
  currency: z.string().length(3).nullable().optional(),
  customer: expandableId,
  payment_intent: z.union([z.string(), paymentIntentSchema]).nullable().optional(),
  setup_intent: z.union([z.string(), setupIntentSchema]).nullable().optional(),
  metadata,
});

export const refundSchema = z.object({
  object: z.literal('refund'),
  id: z.string().min(1),
  amount: z.number().int().nonnegative(),
  currency: z.string().length(3),
  status: z.enum(['pending', 'requires_action', 'succeeded', 'failed', 'canceled']).nullable(),
  payment_intent: expandableId,
  charge: expandableId,
  failure_reason: z.string().nullable().optional(),
  metadata,
});

export const disputeSchema = z.object({
  object: z.literal('dispute'),
  id: z.string().min(1),
  amount: z.number().int().nonnegative(),
  currency: z.string().length(3),
  status: z.string().min(1),
  reason: z.string().nullable().optional(),
  charge: expandableId,
  payment_intent: expandableId,
  evidence_details: z.object({ due_by: z.number().int().nullable().optional() }).loose().nullable().optional(),
  created: z.number().int(),
  metadata,
});

export const customerSchema = z.object({ object: z.literal('customer'), id: z.string().min(1) });

/** A PaymentMethod attached to a Customer: what identifies its card to people. */
export const paymentMethodSchema = z.object({
  object: z.literal('payment_method'),
  id: z.string().min(1),
  customer: expandableId,
  card: stripeCard,
});

/**
 * A PaymentMethod attached to `customer` (decision 0087): its reference is the saved-card token
 * charges send, `cus_...:pm_...` (PRODUCT.md, "Providers").
 */
export function mapAttachedPaymentMethod(value: unknown, customer: string): AttachPaymentMethodResult {
  const pm = parseStripe(paymentMethodSchema, value, 'PaymentMethod');
  const attachedTo = idOf(pm.customer) ?? customer;
  return {
    status: 'attached',
    reference: cardToken(attachedTo, pm.id)!,
    providerCustomerId: attachedTo,
    card: cardDetails(pm.card),
  };
}

function cardDetails(card: z.infer<typeof stripeCard>): CardDetails {
  return {
    brand: card?.brand ?? null,
    last4: card?.last4 ?? null,
    expMonth: card?.exp_month ?? null,
    expYear: card?.exp_year ?? null,
  };
}

/**
 * The card of a saved `payment_method`, when the read expanded it (SESSION_EXPAND); an id alone
 * tells nothing of the card: absent, unknown.
 */
function savedCardOf(pm: z.infer<typeof expandablePaymentMethod>): { savedCard?: CardDetails } {
  return pm && typeof pm === 'object' && pm.card ? { savedCard: cardDetails(pm.card) } : {};
}

/** A card refused while attaching it (StripeCardError): a declined verification, with Stripe's code. */
export function mapAttachDecline(err: unknown): AttachPaymentMethodResult | null {
  if (!(err instanceof Stripe.errors.StripeCardError)) return null;
  return {
    status: 'declined',
    declineCode: err.decline_code || err.code || 'card_declined',
    message: err.message || 'The card was declined.',
  };
}

/** What a list lookup needs of each item: its id and our key in its metadata. */
export const listItemSchema = z.object({ id: z.string().min(1), metadata });

const eventSchema = z.object({
  object: z.literal('event'),
  id: z.string(),
  type: z.string(),
  livemode: z.boolean(),
  data: z.object({ object: z.object({ object: z.string(), metadata }).loose() }),
});

export type StripePaymentIntent = z.infer<typeof paymentIntentSchema>;
export type StripeCheckoutSession = z.infer<typeof checkoutSessionSchema>;
export type StripeRefund = z.infer<typeof refundSchema>;

/** Validates a Stripe answer with the schema, or says it is not one we can rely on. */
export function parseStripe<T extends z.ZodType>(schema: T, value: unknown, what: string): z.output<T> {
  const parsed = schema.safeParse(value);
  if (!parsed.success)
    throw new ProviderError(
      'invalid_response',
      `Stripe answered an unexpected ${what}: ${parsed.error.message.slice(0, 300)}`,
    );
  return parsed.data;
}

const idOf = (v: string | { id: string } | null | undefined): string | null =>
  v == null ? null : typeof v === 'string' ? v : v.id;

/**
 * The mode of a Stripe secret (`sk_`) or restricted (`rk_`) key from its prefix, which Stripe
 * fixes (docs.stripe.com/keys): `test` or `live`; null when it is neither (decision 0058).
 */
export function stripeKeyMode(secretKey: string): 'test' | 'live' | null {
  const match = /^(?:sk|rk)_(test|live)_/.exec(secretKey);
  return match ? (match[1] as 'test' | 'live') : null;
}

/** Our saved-card token for Stripe (PRODUCT.md): `cus_...:pm_...`, or `pm_...` alone. */
export function cardToken(customer: string | null, paymentMethod: string | null): string | null {
  if (!paymentMethod) return null;
  return customer ? `${customer}:${paymentMethod}` : paymentMethod;
}

/** A `cardToken` back to what Stripe takes. */
export function parseCardToken(token: string): { customer?: string; paymentMethod: string } {
  const match = CARD_TOKEN.exec(token);
  if (!match)
    throw new ProviderError('rejected', 'The card token is not `pm_...` or `cus_...:pm_...`.', 'invalid_card_token');
  return match[1] ? { customer: match[1], paymentMethod: match[2]! } : { paymentMethod: match[2]! };
}

/** PRODUCT.md: a saved PaymentMethod, optionally of a Customer (Stripe ids are [A-Za-z0-9_]). */
const CARD_TOKEN = /^(?:(cus_[A-Za-z0-9_]+):)?(pm_[A-Za-z0-9_]+)$/;

// ---------------------------------------------------------------------------------------------
// Objects -> our types.

/**
 * Stripe's code when the customer failed (or abandoned) authentication; our `authentication_failed`
 * (PRODUCT.md, "Processor lifecycle").
 */
const STRIPE_AUTHENTICATION_FAILED = 'payment_intent_authentication_failure';

/**
 * A PaymentIntent we created and confirmed (decision 0058):
 * - `requires_action`: the customer must authenticate (3-D Secure) at `next_action.redirect_to_url`
 *   (`actionUrl`; null when Stripe gave no page, e.g. an off-session charge: the caller offers its own).
 * - `processing`: accepted, decided later (a webhook or a later read says how).
 * - `requires_payment_method`: declined (a failed authentication is `authentication_failed`).
 * - `requires_confirmation` / `requires_capture`: never asked for (we confirm at once and capture
 *   automatically), and any status Stripe adds later: an answer we cannot read, `invalid_response`.
 *   That kind is ambiguous: an attempt goes on to ask the provider, and asking is retried (backing
 *   off, visible as a reconcile retry) until the answer is one we know: the record stays where it
 *   is and no workflow fails on it.
 */
export function mapPaymentIntent(value: unknown): ProviderPayment {
  const pi = parseStripe(paymentIntentSchema, value, 'PaymentIntent');
  const base = {
    transactionId: pi.id,
    amountMinor: fromStripeAmount(pi.amount, pi.currency),
    currency: pi.currency.toUpperCase(),
    redirectUrl: null,
    savedCardToken: null,
    actionUrl: null,
    failureCode: null,
    failureMessage: null,
  };
  switch (pi.status) {
    case 'succeeded':
      return { ...base, status: 'succeeded' };
    case 'processing':
      return { ...base, status: 'processing' };
    case 'requires_action':
      return { ...base, status: 'requires_action', actionUrl: pi.next_action?.redirect_to_url?.url ?? null };
    case 'requires_payment_method': {
      const code = pi.last_payment_error?.decline_code ?? pi.last_payment_error?.code ?? 'payment_failed';
      return {
        ...base,
        status: 'failed',
        failureCode: code === STRIPE_AUTHENTICATION_FAILED ? 'authentication_failed' : code,
        failureMessage: pi.last_payment_error?.message ?? 'The payment was declined.',
      };
    }
    case 'canceled':
      return {
        ...base,
        status: 'canceled',
        failureCode: pi.cancellation_reason ?? 'canceled',
        failureMessage: 'The payment was canceled.',
      };
    default:
      throw new ProviderError(
        'invalid_response',
        `Stripe answered PaymentIntent ${pi.id} with status ${pi.status.slice(0, 50)}, which we do not act on`,
      );
  }
}

/**
 * A SetupIntent we created confirmed with a saved card (a subscription's new card): succeeded
 * keeps the card (`savedCardToken`); anything else was not verified (failed, with Stripe's code).
 * It moves no money: amount 0 in the subscription's currency.
 */
export function mapSetupIntent(value: unknown, currency: string): ProviderPayment {
  const si = parseStripe(setupIntentSchema, value, 'SetupIntent');
  const base = {
    transactionId: si.id,
    amountMinor: 0,
    currency: currency.toUpperCase(),
    redirectUrl: null,
    actionUrl: null,
  };
  if (si.status === 'succeeded') {
    return {
      ...base,
      status: 'succeeded',
      failureCode: null,
      failureMessage: null,
      savedCardToken: cardToken(idOf(si.customer), idOf(si.payment_method)),
    };
  }
  return {
    ...base,
    status: 'failed',
    failureCode: si.last_setup_error?.decline_code ?? si.last_setup_error?.code ?? 'card_not_verified',
    failureMessage: si.last_setup_error?.message ?? 'The card could not be verified for later payments.',
    savedCardToken: null,
  };
}

/**
 * A Checkout Session (mode payment or setup). `requested` is what we asked for when we created
 * it: Stripe's answer to a create always carries the amount and currency, but they are nullable
 * in its spec, so a create falls back to what we sent; a lookup falls back to the expanded
 * PaymentIntent and otherwise refuses to guess.
 */
export function mapCheckoutSession(
  value: unknown,
  requested?: { amountMinor: number; currency: string },
): ProviderPayment {
  const s = parseStripe(checkoutSessionSchema, value, 'Checkout Session');
  if (s.mode === 'subscription')
    throw new ProviderError('invalid_response', `Checkout Session ${s.id} is a Stripe subscription, not ours`);
  const pi = s.payment_intent && typeof s.payment_intent === 'object' ? s.payment_intent : null;
  const si = s.setup_intent && typeof s.setup_intent === 'object' ? s.setup_intent : null;
  const currency = s.currency ?? requested?.currency ?? pi?.currency ?? null;
  if (!currency) throw new ProviderError('invalid_response', `Checkout Session ${s.id} has no currency`);
  let amountMinor: number;
  if (s.mode === 'setup') amountMinor = 0;
  else if (s.amount_total != null) amountMinor = fromStripeAmount(s.amount_total, currency);
  else if (requested) amountMinor = requested.amountMinor;
  else if (pi) amountMinor = fromStripeAmount(pi.amount, pi.currency);
  else throw new ProviderError('invalid_response', `Checkout Session ${s.id} has no amount`);

  const base = {
    transactionId: s.id,
    amountMinor,
    currency: currency.toUpperCase(),
    redirectUrl: null,
    savedCardToken: null,
    actionUrl: null,
    failureCode: null,
    failureMessage: null,
  };
  if (s.status === 'expired') {
    return {
      ...base,
      status: 'canceled',
      failureCode: 'expired',
      failureMessage: 'The customer did not complete the Checkout Session before it expired.',
    };
  }
  if (s.status === 'complete' && s.mode === 'setup') {
    return {
      ...base,
      status: 'succeeded',
      savedCardToken: si ? cardToken(idOf(si.customer) ?? idOf(s.customer), idOf(si.payment_method)) : null,
      ...(si ? savedCardOf(si.payment_method) : {}),
    };
  }
  if (s.status === 'complete' && s.payment_status !== 'unpaid') {
    const saved = pi?.setup_future_usage === 'off_session';
    return {
      ...base,
      status: 'succeeded',
      savedCardToken: saved ? cardToken(idOf(s.customer) ?? idOf(pi.customer), idOf(pi.payment_method)) : null,
      ...(saved ? savedCardOf(pi.payment_method) : {}),
    };
  }
  // Complete but unpaid: the customer paid with an asynchronous method (a bank debit) that
  // Stripe decides later (checkout.session.async_payment_succeeded / _failed): processing.
  if (s.status === 'complete') return { ...base, status: 'processing' };
  // Open: the page awaits the customer.
  return { ...base, status: 'pending', redirectUrl: s.status === 'open' ? (s.url ?? null) : null };
}

/**
 * A Stripe Refund. `transactionId` is our payment's transaction: a Checkout payment's is the
 * session (cs_), while Stripe refunds its PaymentIntent (pi_). Given `within` (the transaction we
 * asked about and the PaymentIntent it resolved to), a refund of that PaymentIntent is reported
 * under our transaction id; any other refund keeps its own PaymentIntent, so that the caller's
 * "is it ours" check sees the difference.
 */
export function mapRefund(
  value: unknown,
  within?: { transactionId: string; paymentIntentId: string; referenceId?: string },
): ProviderRefund {
  const r = parseStripe(refundSchema, value, 'Refund');
  const pi = idOf(r.payment_intent);
  const transactionId = within && pi === within.paymentIntentId ? within.transactionId : (pi ?? idOf(r.charge) ?? '');
  const base = {
    refundId: r.id,
    transactionId,
    amountMinor: fromStripeAmount(r.amount, r.currency),
    currency: r.currency.toUpperCase(),
    referenceId: r.metadata?.reference_id ?? within?.referenceId ?? '',
  };
  switch (r.status) {
    case 'succeeded':
      return { ...base, status: 'succeeded', failureCode: null, failureMessage: null };
    case 'failed':
    case 'canceled':
      return {
        ...base,
        status: 'failed',
        failureCode: r.failure_reason ?? r.status,
        failureMessage: `Stripe refund ${r.status}${r.failure_reason ? ` (${r.failure_reason})` : ''}.`,
      };
    default:
      // pending, requires_action (the customer must supply refund details), or not set yet.
      return { ...base, status: 'pending', failureCode: null, failureMessage: null };
  }
}

/** Stripe's refund reasons; anything else travels in metadata. */
export const STRIPE_REFUND_REASONS = ['duplicate', 'fraudulent', 'requested_by_customer'] as const;

export function refundReason(reason: string | undefined): {
  reason?: (typeof STRIPE_REFUND_REASONS)[number];
  metadata: Record<string, string>;
} {
  if (!reason) return { metadata: {} };
  const known = STRIPE_REFUND_REASONS.find((r) => r === reason);
  return known ? { reason: known, metadata: {} } : { metadata: { reason: reason.slice(0, 500) } };
}

/** Stripe allows a Checkout Session to expire between 30 minutes and 24 hours after creation. */
export const CHECKOUT_MIN_EXPIRY_MS = 30 * 60_000;
export const CHECKOUT_MAX_EXPIRY_MS = 24 * 3_600_000;
/** Kept inside the bounds by this much, for the clock difference between us and Stripe. */
const EXPIRY_MARGIN_MS = 2 * 60_000;

/** `expires_at` (Unix seconds) for a payment expiring at `expiresAt`, clamped to Stripe's range. */
export function checkoutExpiresAt(expiresAt: Date, now: Date): number {
  // The clock to the minute: a create replayed under its idempotency key within the minute sends
  // the same parameters (Stripe refuses a key reused with others); the margins absorb the minute.
  const at = Math.floor(now.getTime() / 60_000) * 60_000;
  const min = at + 60_000 + CHECKOUT_MIN_EXPIRY_MS + EXPIRY_MARGIN_MS;
  const max = at + CHECKOUT_MAX_EXPIRY_MS - EXPIRY_MARGIN_MS;
  return Math.floor(Math.min(max, Math.max(min, expiresAt.getTime())) / 1000);
}

// ---------------------------------------------------------------------------------------------
// Disputes.

/**
 * Stripe's dispute status -> ours. Inquiries (`warning_*`) are open like disputes; one closed
 * without a chargeback (`warning_closed`) and a `prevented` one took no money: won. A status we
 * do not know is no answer: `invalid_response` (the dispute's workflow keeps it and asks again).
 */
const DISPUTE_STATUS: Record<string, ProviderDisputeStatus> = {
  warning_needs_response: 'needs_response',
  needs_response: 'needs_response',
  warning_under_review: 'under_review',
  under_review: 'under_review',
  warning_closed: 'won',
  won: 'won',
  prevented: 'won',
  lost: 'lost',
};

/**
 * A Stripe Dispute -> ours. The disputed transaction is the PaymentIntent (our card payments'
 * transaction id; a hosted payment's is its Checkout Session, which a dispute does not name).
 * Without `evidence_details.due_by` (an inquiry), evidence is due when the dispute was opened
 * plus 7 days. `accepted`: the dispute was closed by our `close` call (Stripe then says `lost`).
 */
export function mapDispute(value: unknown, accepted = false): ProviderDispute {
  const d = parseStripe(disputeSchema, value, 'Dispute');
  const status = DISPUTE_STATUS[d.status];
  if (!status) throw new ProviderError('invalid_response', `Stripe dispute status ${d.status} is not one we know`);
  const dueBy = d.evidence_details?.due_by ?? d.created + 7 * 86_400;
  return {
    disputeId: d.id,
    transactionId: idOf(d.payment_intent) ?? idOf(d.charge) ?? '',
    status: accepted && status === 'lost' ? 'accepted' : status,
    amountMinor: fromStripeAmount(d.amount, d.currency),
    currency: d.currency.toUpperCase(),
    reason: d.reason ?? 'general',
    evidenceDueBy: new Date(dueBy * 1000),
  };
}

// ---------------------------------------------------------------------------------------------
// Webhooks.

/**
 * A verified Stripe event -> our event, with its `livemode`. payment_intent.* (requires_action,
 * processing, succeeded, payment_failed, canceled, ...) and checkout.session.* are payments,
 * refund.* and charge.refund.updated are refunds (each with the object's metadata, which the
 * route routes by), charge.dispute.* are disputes (routed by the merchant and the disputed
 * PaymentIntent). Anything else is `ignored`: acknowledged (2xx, so Stripe stops resending),
 * routed nowhere; so is a verified event whose object we cannot read (e.g. a PaymentIntent
 * status we do not know), with the reason: the record's workflow asks Stripe itself.
 */
export function mapEvent(value: unknown): ProviderWebhookEvent {
  const parsed = eventSchema.safeParse(value);
  if (!parsed.success) throw new ProviderWebhookError(`not a Stripe event: ${parsed.error.message.slice(0, 200)}`);
  const event = parsed.data;
  const object = event.data.object;
  const meta = object.metadata ?? {};
  const { livemode } = event;
  try {
    if (event.type.startsWith('payment_intent.') && object.object === 'payment_intent')
      return { kind: 'payment', type: event.type, payment: mapPaymentIntent(object), metadata: meta, livemode };
    if (event.type.startsWith('checkout.session.') && object.object === 'checkout.session')
      return { kind: 'payment', type: event.type, payment: mapCheckoutSession(object), metadata: meta, livemode };
    if ((event.type.startsWith('refund.') || event.type === 'charge.refund.updated') && object.object === 'refund')
      return { kind: 'refund', type: event.type, refund: mapRefund(object), metadata: meta, livemode };
    if (event.type.startsWith('charge.dispute.') && object.object === 'dispute')
      return { kind: 'dispute', type: event.type, dispute: mapDispute(object), metadata: meta, livemode };
  } catch (err) {
    return {
      kind: 'ignored',
      type: event.type,
      reason: `unexpected ${object.object} object: ${(err as Error).message.slice(0, 200)}`,
      livemode,
    };
  }
  return { kind: 'ignored', type: event.type, livemode };
}

// ---------------------------------------------------------------------------------------------
// Errors.

/** Connection failures that prove the request never left us. */
const NOT_SENT = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH']);

/** Request parameters that carry the merchant's cardToken. */
const CARD_PARAMS = new Set(['payment_method', 'customer']);

/**
 * A Stripe error -> what it means for money. A ProviderError passes through; anything that is
 * not a Stripe error is a bug of ours and is returned as is (the caller rethrows it).
 */
export function mapStripeError(err: unknown): unknown {
  if (err instanceof ProviderError || !(err instanceof Stripe.errors.StripeError)) return err;
  const message = `Stripe: ${err.message || err.type}`;
  if (err instanceof Stripe.errors.StripeConnectionError) {
    const detail = err.detail as { code?: unknown } | undefined;
    const code = typeof detail?.code === 'string' ? detail.code : undefined;
    if (code && NOT_SENT.has(code)) return new ProviderError('unavailable', `Stripe unreachable (${code})`);
    return new ProviderError('timeout', `${message}${code ? ` (${code})` : ''}`);
  }
  if (err instanceof Stripe.errors.StripeRateLimitError)
    return new ProviderError('unavailable', `${message} (rate limited; nothing done)`);
  if (err instanceof Stripe.errors.StripeAuthenticationError || err instanceof Stripe.errors.StripePermissionError)
    return new ProviderError('misconfigured', `Stripe refused our credentials (${err.type})`);
  if (err instanceof Stripe.errors.StripeIdempotencyError)
    return new ProviderError('rejected', message, err.code || 'idempotency_error', true);
  // The merchant's cardToken names a PaymentMethod or Customer Stripe does not have (or will
  // not use): our `invalid_card_token`, as for the sandbox.
  if (err instanceof Stripe.errors.StripeInvalidRequestError && CARD_PARAMS.has(err.param ?? ''))
    return new ProviderError('rejected', message, 'invalid_card_token');
  if (err instanceof Stripe.errors.StripeInvalidRequestError || err instanceof Stripe.errors.StripeCardError)
    return new ProviderError('rejected', message, err.decline_code || err.code || 'invalid_request');
  if (err instanceof Stripe.errors.StripeAPIError) {
    // No JSON, or JSON without an error where one was due: an answer we cannot read.
    if (err.statusCode === undefined && (err.raw as { exception?: unknown }).exception !== undefined)
      return new ProviderError('invalid_response', `${message}`);
    // 5xx, and 409 (another request under the same key is in flight): it may act; ask later.
    return new ProviderError('timeout', `${message} (HTTP ${err.statusCode ?? '?'})`);
  }
  return new ProviderError('invalid_response', message);
}

/**
 * A card declined while confirming a PaymentIntent (StripeCardError): a decline, not an error.
 * The failed payment, with Stripe's decline code; null when the error names no PaymentIntent
 * (then nothing was created, and the caller treats it as a rejection).
 */
export function mapCardDecline(
  err: unknown,
  requested: { amountMinor: number; currency: string },
): ProviderPayment | null {
  if (!(err instanceof Stripe.errors.StripeCardError)) return null;
  const raw = err.payment_intent ?? (err.raw as { payment_intent?: unknown }).payment_intent;
  const code = err.decline_code || err.code || 'card_declined';
  const message = err.message || 'The card was declined.';
  if (raw && typeof raw === 'object') {
    const pi = mapPaymentIntent(raw);
    return { ...pi, status: 'failed', failureCode: code, failureMessage: message };
  }
  if (typeof raw === 'string' && raw) {
    return {
      transactionId: raw,
      status: 'failed',
      amountMinor: requested.amountMinor,
      currency: requested.currency,
      failureCode: code,
      failureMessage: message,
      redirectUrl: null,
      savedCardToken: null,
      actionUrl: null,
    };
  }
  return null;
}
