import type { EntityManager } from '@mikro-orm/postgresql';
import { MerchantEvent, type KeyEnvironment, type Merchant } from '../db/entities';
import { newId } from '../ids';
import { EVENT_PREFIXES, EVENT_TYPES, type EventType } from '../rules/eventFilters';

/** Event types sent to merchants (PRODUCT.md, "Events to merchants"): listed once, in src/rules/eventFilters.ts. */
export const MERCHANT_EVENT_TYPES = EVENT_TYPES;
export type MerchantEventType = EventType;

/** The families of event types (`payment` of `payment.succeeded`), for `payment.*` filters. */
export const MERCHANT_EVENT_FAMILIES = EVENT_PREFIXES;

/**
 * What an event is about; `dedupeKey` makes recording it idempotent. `environment` is the
 * record's key environment (a refund's is its payment's); the event's object is `data`'s id.
 */
export interface EventInput {
  type: MerchantEventType;
  resourceId: string;
  dedupeKey: string;
  callbackUrl: string | null;
  environment: KeyEnvironment;
  data: { id: string } & Record<string, unknown>;
}

/**
 * An event row's fields as they are stored. Every event is recorded (the event log, GET /events),
 * with or without a callbackUrl; only one with a callbackUrl is delivered. `sequence` is not here:
 * the database allocates it when the row is inserted (the `assign_sequence` trigger,
 * Migration20261202000000EventLog), in the inserting transaction, whichever path inserts it.
 */
export function outboxEventFields(input: EventInput, createdAt = new Date()) {
  const id = newId('event');
  return {
    id,
    type: input.type,
    resourceId: input.resourceId,
    objectId: input.data.id,
    environment: input.environment,
    dedupeKey: input.dedupeKey,
    callbackUrl: input.callbackUrl,
    payload: { id, type: input.type, createdAt: createdAt.toISOString(), data: input.data },
    createdAt,
  };
}

export type OutboxEventFields = ReturnType<typeof outboxEventFields>;

/**
 * The body an event is delivered with (PRODUCT.md, "Events, webhook endpoints and deliveries"),
 * from its stored row: the same on every attempt.
 */
export function eventBody(event: {
  id: string;
  type: string;
  createdAt: Date;
  environment: KeyEnvironment;
  objectId: string;
  sequence: number;
  payload: Record<string, unknown>;
}) {
  return {
    id: event.id,
    type: event.type,
    createdAt: event.createdAt.toISOString(),
    environment: event.environment,
    objectId: event.objectId,
    sequence: event.sequence,
    data: event.payload['data'],
  };
}

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
       insert into merchant_events (id, merchant_id, type, resource_id, object_id, environment, dedupe_key, callback_url, payload, attempts, created_at)
       select ?, ${source}.merchant_id, ?, ?, ?, ?, ?, ?, ?::jsonb, 0, ?::timestamptz from ${source}
       on conflict (dedupe_key) do nothing
     )`,
    values: [
      event.id,
      event.type,
      event.resourceId,
      event.objectId,
      event.environment,
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
export function recordEvent(em: EntityManager, input: EventInput & { merchant: Merchant }): MerchantEvent {
  const fields = outboxEventFields(input);
  return em.create(MerchantEvent, {
    ...fields,
    merchant: input.merchant,
    attempts: 0,
    deliveredAt: null,
    lastError: null,
  });
}
