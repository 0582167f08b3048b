import type { EntityManager } from '@mikro-orm/postgresql';
import { MerchantEvent, type Merchant } from '../db/entities';
import { newId } from '../ids';

/** Event types sent to merchants' callbackUrls (PRODUCT.md, Events). */
export type MerchantEventType =
  | 'payment.requires_action'
  | 'payment.processing'
  | 'payment.succeeded'
  | 'payment.failed'
  | 'payment.voided'
  | 'payment.partially_refunded'
  | 'payment.refunded'
  | 'refund.succeeded'
  | 'refund.failed'
  | 'dispute.created'
  | 'dispute.updated'
  | 'dispute.evidence_due_soon'
  | 'dispute.closed'
  | 'subscription.activated'
  | 'subscription.charge_succeeded'
  | 'subscription.charge_failed'
  | 'subscription.past_due'
  | 'subscription.payment_action_required'
  | 'subscription.cancelled';

/** What an event is about; `dedupeKey` makes recording it idempotent. */
export interface EventInput {
  type: MerchantEventType;
  resourceId: string;
  dedupeKey: string;
  callbackUrl: string | null;
  data: unknown;
}

/** An outbox row's fields as they are stored (the payload the merchant receives); null without a callbackUrl. */
export function outboxEventFields(input: EventInput, createdAt = new Date()) {
  if (!input.callbackUrl) return null;
  const id = newId('event');
  return {
    id,
    type: input.type,
    resourceId: input.resourceId,
    dedupeKey: input.dedupeKey,
    callbackUrl: input.callbackUrl,
    payload: { id, type: input.type, createdAt: createdAt.toISOString(), data: input.data },
    createdAt,
  };
}

export type OutboxEventFields = NonNullable<ReturnType<typeof outboxEventFields>>;

/**
 * An outbox row recorded by a data-modifying CTE of a plain statement (`with ... , <name> as
 * (...)`), for the merchant of the rows `source` returns (its `merchant_id`), once per dedupeKey;
 * nothing when `source` returns no row. The statement-side twin of recordEvent.
 */
export function outboxEventCte(
  name: string,
  source: string,
  event: OutboxEventFields,
): { sql: string; values: unknown[] } {
  return {
    sql: `${name} as (
       insert into merchant_events (id, merchant_id, type, resource_id, dedupe_key, callback_url, payload, attempts, created_at)
       select ?, ${source}.merchant_id, ?, ?, ?, ?, ?::jsonb, 0, ?::timestamptz from ${source}
       on conflict (dedupe_key) do nothing
     )`,
    values: [
      event.id,
      event.type,
      event.resourceId,
      event.dedupeKey,
      event.callbackUrl,
      JSON.stringify(event.payload),
      event.createdAt,
    ],
  };
}

/**
 * Records an event in the outbox, inside the caller's transaction, so it exists exactly when
 * the state change it reports does. `dedupeKey` makes a retried transaction record it once.
 */
export function recordEvent(em: EntityManager, input: EventInput & { merchant: Merchant }): MerchantEvent | null {
  const fields = outboxEventFields(input);
  if (!fields) return null;
  return em.create(MerchantEvent, {
    ...fields,
    merchant: input.merchant,
    attempts: 0,
    deliveredAt: null,
    lastError: null,
  });
}
