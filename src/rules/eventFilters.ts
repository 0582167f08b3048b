/**
 * Webhook endpoint filters and signing secrets (PRODUCT.md, "Events, webhook endpoints and
 * deliveries"; decision 0068). Pure: the delivery step matches events and picks secrets with these.
 */

/** Every event type a merchant can receive (PRODUCT.md, "Events to merchants"): the one list (src/domain/events.ts names it MERCHANT_EVENT_TYPES). */
export const EVENT_TYPES = [
  'payment.requires_action',
  'payment.processing',
  'payment.succeeded',
  'payment.failed',
  'payment.voided',
  'payment.partially_refunded',
  'payment.refunded',
  'refund.succeeded',
  'refund.failed',
  'dispute.created',
  'dispute.updated',
  'dispute.evidence_due_soon',
  'dispute.closed',
  'subscription.activated',
  'subscription.charge_succeeded',
  'subscription.charge_failed',
  'subscription.past_due',
  'subscription.payment_action_required',
  'subscription.cancelled',
] as const;

export type EventType = (typeof EVENT_TYPES)[number];

/** The object prefixes of the event types (`payment`, `refund`, ...): what `<prefix>.*` may name. */
export const EVENT_PREFIXES: readonly string[] = [...new Set(EVENT_TYPES.map((t) => t.slice(0, t.indexOf('.'))))];

/** An `enabledEvents` entry the API takes: an event type, `<prefix>.*` of a known prefix, or `*`. */
export function isKnownEventFilter(filter: string): boolean {
  if (filter === '*') return true;
  if (filter.endsWith('.*')) return EVENT_PREFIXES.includes(filter.slice(0, -2));
  return (EVENT_TYPES as readonly string[]).includes(filter);
}

/** Whether an event of `type` goes to an endpoint with these filters: exact, `<prefix>.*`, or `*`. */
export function matchesFilter(enabledEvents: readonly string[], type: string): boolean {
  return enabledEvents.some((filter) => {
    if (filter === '*') return true;
    if (filter.endsWith('.*')) return type.startsWith(filter.slice(0, -1));
    return filter === type;
  });
}

/** An endpoint's secrets, decrypted. */
export interface EndpointSecrets {
  secret: string;
  previousSecret: string | null;
  previousSecretExpiresAt: Date | null;
}

/**
 * The secrets a delivery at `now` signs with: the current one first, then the previous one while
 * its overlap lasts (`now` before `previousSecretExpiresAt`).
 */
export function signingSecretsOf(endpoint: EndpointSecrets, now: Date): string[] {
  const { secret, previousSecret, previousSecretExpiresAt } = endpoint;
  if (
    previousSecret !== null &&
    previousSecretExpiresAt !== null &&
    now.getTime() < previousSecretExpiresAt.getTime()
  ) {
    return [secret, previousSecret];
  }
  return [secret];
}
