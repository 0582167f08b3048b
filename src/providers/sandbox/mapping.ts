import { z } from 'zod';
import { toMinor } from '../../rules/money';
import { ProviderError } from '../errors';
import type {
  AttachPaymentMethodResult,
  CardDetails,
  ProviderDispute,
  ProviderDisputeStatus,
  ProviderPayment,
  ProviderPaymentStatus,
  ProviderRefund,
  ProviderWebhookEvent,
} from '../types';

/**
 * Pure mapping between the sandbox's wire format (docs/provider-sandbox.md) and our provider
 * types. Every response is validated: anything unexpected is `invalid_response`, never a guess.
 */
const metadata = z.record(z.string(), z.string()).nullable().optional();

export const sandboxPaymentSchema = z.object({
  object: z.literal('payment'),
  id: z.string().min(1),
  mode: z.enum(['card', 'checkout', 'setup']),
  // Any string: a status we do not know is a well-formed answer that says nothing we can act on
  // (mapPayment), not a malformed body.
  status: z.string().min(1),
  amount: z.number(),
  currency: z.string().length(3),
  idempotencyKey: z.string(),
  failureCode: z.string().nullable(),
  failureMessage: z.string().nullable(),
  checkoutUrl: z.string().nullable(),
  /** Where the customer authenticates while `requires_action` (absent from older sandboxes). */
  actionUrl: z.string().nullable().optional(),
  savedCardToken: z.string().nullable(),
  /** What the saved card is (absent from older sandboxes). */
  savedCard: z
    .object({ brand: z.string(), last4: z.string(), expMonth: z.number().int(), expYear: z.number().int() })
    .nullable()
    .optional(),
  metadata,
});

const sandboxCardSchema = z.object({
  brand: z.string().min(1).max(32),
  last4: z.string().regex(/^\d{4}$/),
  expMonth: z.number().int().min(1).max(12),
  expYear: z.number().int(),
});

export const sandboxPaymentMethodSchema = z.object({
  object: z.literal('payment_method'),
  id: z.string().min(1).max(255),
  customer: z.string().min(1),
  card: sandboxCardSchema,
  detached: z.boolean(),
  metadata,
});

/** A card kept for a customer: its saved token is what charges send. */
export function mapPaymentMethod(pm: z.infer<typeof sandboxPaymentMethodSchema>): AttachPaymentMethodResult {
  const card: CardDetails = { ...pm.card };
  return { status: 'attached', reference: pm.id, providerCustomerId: pm.customer, card };
}

const declineSchema = z.object({
  error: z.object({ code: z.literal('card_declined'), message: z.string().optional(), declineCode: z.string().min(1) }),
});

/** A 402 of a card verification: the decline, with the card's code; null when the body says something else. */
export function mapVerificationDecline(status: number, text: string): AttachPaymentMethodResult | null {
  if (status !== 402) return null;
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return null;
  }
  const parsed = declineSchema.safeParse(json);
  if (!parsed.success) return null;
  return {
    status: 'declined',
    declineCode: parsed.data.error.declineCode,
    message: parsed.data.error.message ?? 'The card was declined.',
  };
}

export const sandboxRefundSchema = z.object({
  object: z.literal('refund'),
  id: z.string().min(1),
  paymentId: z.string().min(1),
  // Any string, as a payment's: a status we do not know is mapped to `invalid_response` (mapRefund).
  status: z.string().min(1),
  amount: z.number(),
  currency: z.string().length(3),
  reference_id: z.string(),
  idempotencyKey: z.string().nullable().optional(),
  failureCode: z.string().nullable(),
  failureMessage: z.string().nullable(),
  metadata,
});

export const sandboxDisputeSchema = z.object({
  object: z.literal('dispute'),
  id: z.string().min(1),
  paymentId: z.string().min(1),
  // Any string, as a payment's: a status we do not know is mapped to `invalid_response` (mapDispute).
  status: z.string().min(1),
  amount: z.number(),
  currency: z.string().length(3),
  reason: z.string(),
  evidenceDueBy: z.iso.datetime({ offset: true }),
  metadata,
});

const listOf = <T extends z.ZodType>(item: T) => z.object({ data: z.array(item) });
export const sandboxPaymentList = listOf(sandboxPaymentSchema);
export const sandboxRefundList = listOf(sandboxRefundSchema);

const errorSchema = z.object({ error: z.object({ code: z.string(), message: z.string().optional() }) });

export const sandboxWebhookSchema = z.object({
  id: z.string(),
  type: z.string(),
  createdAt: z.string(),
  data: z.discriminatedUnion('object', [sandboxPaymentSchema, sandboxRefundSchema, sandboxDisputeSchema]),
});

function minor(amount: number, currency: string): number {
  const r = toMinor(amount, currency, { allowZero: true });
  if (!r.ok) throw new ProviderError('invalid_response', `provider amount ${amount} ${currency}: ${r.message}`);
  return r.minor;
}

const KNOWN_PAYMENT_STATUSES: ReadonlySet<string> = new Set<ProviderPaymentStatus>([
  'pending',
  'requires_action',
  'processing',
  'succeeded',
  'failed',
  'canceled',
]);

const isKnownStatus = (status: string): status is ProviderPaymentStatus => KNOWN_PAYMENT_STATUSES.has(status);

/**
 * A payment as our types hold it. A status we do not know (a processor's new state) is an answer
 * whose outcome is unknown: `invalid_response`, so the record stays where it is and the workflow
 * asks again until the provider answers one we know; never a decline, never a guess.
 */
export function mapPayment(p: z.infer<typeof sandboxPaymentSchema>): ProviderPayment {
  const status = p.status;
  if (!isKnownStatus(status)) {
    throw new ProviderError('invalid_response', `provider answered payment ${p.id} with an unknown status "${status}"`);
  }
  return {
    transactionId: p.id,
    status,
    amountMinor: minor(p.amount, p.currency),
    currency: p.currency,
    failureCode: p.failureCode,
    failureMessage: p.failureMessage,
    redirectUrl: p.checkoutUrl,
    savedCardToken: p.savedCardToken,
    actionUrl: p.status === 'requires_action' ? (p.actionUrl ?? null) : null,
    ...(p.savedCard !== undefined ? { savedCard: p.savedCard } : {}),
  };
}

const KNOWN_REFUND_STATUSES: ReadonlySet<string> = new Set<ProviderRefund['status']>([
  'pending',
  'succeeded',
  'failed',
]);

/**
 * A refund as our types hold it. A status we do not know is an answer whose outcome is unknown
 * (`invalid_response`, as for a payment): the refund stays pending and its workflow asks again.
 */
export function mapRefund(r: z.infer<typeof sandboxRefundSchema>): ProviderRefund {
  const status = r.status;
  if (!KNOWN_REFUND_STATUSES.has(status)) {
    throw new ProviderError('invalid_response', `provider answered refund ${r.id} with an unknown status "${status}"`);
  }
  return {
    refundId: r.id,
    transactionId: r.paymentId,
    status: status as ProviderRefund['status'],
    amountMinor: minor(r.amount, r.currency),
    currency: r.currency,
    referenceId: r.reference_id,
    failureCode: r.failureCode,
    failureMessage: r.failureMessage,
  };
}

const KNOWN_DISPUTE_STATUSES: ReadonlySet<string> = new Set<ProviderDisputeStatus>([
  'needs_response',
  'under_review',
  'won',
  'lost',
  'accepted',
]);

/**
 * A dispute as our types hold it. A status we do not know is an answer whose outcome is unknown
 * (`invalid_response`, retryable, as for a payment): the dispute stays where it is and its workflow
 * asks again.
 */
export function mapDispute(d: z.infer<typeof sandboxDisputeSchema>): ProviderDispute {
  if (!KNOWN_DISPUTE_STATUSES.has(d.status)) {
    throw new ProviderError(
      'invalid_response',
      `provider answered dispute ${d.id} with an unknown status "${d.status}"`,
    );
  }
  return {
    disputeId: d.id,
    transactionId: d.paymentId,
    status: d.status as ProviderDisputeStatus,
    amountMinor: minor(d.amount, d.currency),
    currency: d.currency,
    reason: d.reason,
    evidenceDueBy: new Date(d.evidenceDueBy),
  };
}

/**
 * A verified sandbox event -> our event. One whose object carries a status we do not know is
 * `ignored` with the reason, as at Stripe: acknowledged (2xx, so the sandbox stops resending),
 * routed nowhere; the record's workflow asks the provider itself and keeps it where it is.
 */
export function mapWebhook(body: unknown): ProviderWebhookEvent {
  const event = sandboxWebhookSchema.parse(body);
  const data = event.data;
  try {
    switch (data.object) {
      case 'payment':
        return { kind: 'payment', type: event.type, payment: mapPayment(data), metadata: data.metadata ?? {} };
      case 'refund':
        return { kind: 'refund', type: event.type, refund: mapRefund(data), metadata: data.metadata ?? {} };
      case 'dispute':
        return { kind: 'dispute', type: event.type, dispute: mapDispute(data), metadata: data.metadata ?? {} };
    }
  } catch (err) {
    if (!(err instanceof ProviderError)) throw err;
    return { kind: 'ignored', type: event.type, reason: `unexpected ${data.object} object: ${err.message}` };
  }
}

/** Parses a 2xx body with the schema, or says the response was invalid. */
export function parseBody<T extends z.ZodType>(schema: T, text: string): z.output<T> {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new ProviderError('invalid_response', 'provider answered a body that is not JSON');
  }
  const parsed = schema.safeParse(json);
  if (!parsed.success)
    throw new ProviderError(
      'invalid_response',
      `provider answered an unexpected body: ${parsed.error.message.slice(0, 200)}`,
    );
  return parsed.data;
}

/** Maps a non-2xx answer to what it means for money. */
export function mapErrorStatus(status: number, text: string): ProviderError {
  const parsed = (() => {
    try {
      return errorSchema.safeParse(JSON.parse(text));
    } catch {
      return undefined;
    }
  })();
  const code = parsed?.success ? parsed.data.error.code : null;
  const message = parsed?.success ? (parsed.data.error.message ?? code ?? '') : `HTTP ${status}`;
  if (status === 503 || status === 429) return new ProviderError('unavailable', `provider unavailable (${status})`);
  // Other 5xx: the provider may have acted before failing.
  if (status >= 500) return new ProviderError('invalid_response', `provider error ${status}`);
  if (status === 401 || status === 403) return new ProviderError('unavailable', 'provider refused our credentials');
  return new ProviderError(
    'rejected',
    message || `provider rejected the request (${status})`,
    code ?? `http_${status}`,
    // 409 idempotency_key_reused / reference_reused: another request holds the key or reference.
    status === 409,
  );
}
