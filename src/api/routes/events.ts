import { z } from 'zod';
import type { EntityManager } from '@mikro-orm/postgresql';
import { EVENT_DELIVERY_STATUSES, KEY_ENVIRONMENTS } from '../../db/entities';
import { errors } from '../../errors';
import { isId } from '../../ids';
import { MERCHANT_EVENT_FAMILIES, MERCHANT_EVENT_TYPES } from '../../domain/events';
import { findEvent, listEvents } from '../../domain/eventLog';
import { resendEvent } from '../../domain/eventResend';
import { CursorCodec } from '../cursor';
import { AUTH_ERRORS, defineRoute } from '../routing';
import { timestamp } from '../schemas';
import { isoInstant, page, type ListSettings } from './lists';

/** A `type` filter: an exact event type, or every type of a family (`payment.*`). */
export const EVENT_TYPE_FILTERS = [...MERCHANT_EVENT_TYPES, ...MERCHANT_EVENT_FAMILIES.map((f) => `${f}.*`)] as const;

export const listEventsQuery = z
  .object({
    ...page,
    type: z
      .enum(EVENT_TYPE_FILTERS)
      .optional()
      .describe('an event type (`payment.succeeded`), or every type of a family (`payment.*`)'),
    objectId: z.string().min(1).max(255).optional().describe('events whose `data` is this object (its id)'),
    createdFrom: isoInstant.optional().describe('events created at or after this instant'),
    createdTo: isoInstant.optional().describe('events created before this instant'),
  })
  .strict();

const eventFields = {
  id: z.string().describe('`evt_...`; the same on every delivery of the event (`X-Event-Id`)'),
  type: z.enum(MERCHANT_EVENT_TYPES),
  createdAt: timestamp,
  environment: z.enum(KEY_ENVIRONMENTS).describe("the environment of the event's record"),
  objectId: z.string().describe("the id of `data` (a refund's events: the refund)"),
  sequence: z
    .number()
    .int()
    .describe(
      'strictly increasing per object (within merchant and environment), from 1: a receiver can drop an event older than one it has',
    ),
  data: z.unknown().describe('the object as the API returned it when the event happened'),
};

export const eventSchema = z.object(eventFields).meta({ id: 'Event' });

export const eventDeliverySchema = z
  .object({
    endpointId: z.string().nullable().describe("the webhook endpoint; null: the record's callbackUrl"),
    url: z.string(),
    attempt: z.number().int().describe('1, 2, ... per destination'),
    status: z.enum(EVENT_DELIVERY_STATUSES).describe('`pending` while the attempt is in flight'),
    httpStatus: z.number().int().nullable().describe("the receiver's HTTP status; null: no answer"),
    error: z.string().nullable().describe('why the attempt failed (`HTTP 500`, `timeout`, `network error: ...`)'),
    durationMs: z.number().int().nullable(),
    at: timestamp.describe('when the attempt began'),
  })
  .meta({ id: 'EventDelivery' });

export const eventWithDeliveriesSchema = z
  .object({ ...eventFields, deliveries: z.array(eventDeliverySchema).describe('every attempt, oldest first') })
  .meta({ id: 'EventWithDeliveries' });

const eventParams = z.object({ eventId: z.string() });

export const resendEventBody = z
  .object({
    endpointId: z
      .string()
      .max(64)
      .optional()
      .describe(
        '`we_...`: resend to this endpoint only (enabled, of the caller; its filter need not match). Absent: the callbackUrl and every endpoint the event went to that is still enabled',
      ),
  })
  .strict();

export const resendEventResponse = z
  .object({
    deliveries: z
      .array(eventDeliverySchema)
      .describe('the new attempts, `pending`: one per destination (none when the event has nowhere to go)'),
  })
  .meta({ id: 'ResentEvent' });

const PAGINATION =
  'Newest first (by creation time, then id). A page holds at most `limit` items; `nextCursor` fetches the next one and is null on the last. A cursor is bound to its list, its filters and the caller: another one, or one altered, is 400 `validation_error`. Events are kept 30 days.';

export function eventRoutes(deps: { em: EntityManager; settings: ListSettings }) {
  const codec = new CursorCodec(deps.settings.cursorSecret);
  return [
    defineRoute({
      method: 'get',
      path: '/events',
      operationId: 'listEvents',
      tag: 'Events',
      summary: "List the caller's events (its merchant and its key's environment), newest first.",
      description: `${PAGINATION} Filters: \`type\` (exact, or a family as \`payment.*\`), \`objectId\`, \`createdFrom\` (inclusive) and \`createdTo\` (exclusive).`,
      query: listEventsQuery,
      response: z.object({
        events: z.array(eventSchema),
        nextCursor: z.string().nullable().describe('pass as `cursor` for the next page; null on the last page'),
      }),
      errors: ['validation_error', ...AUTH_ERRORS],
      handler: async ({ query, caller }) => {
        const binding = {
          list: 'events',
          merchantId: caller.merchantId,
          environment: caller.environment,
          filters: {
            type: query.type,
            objectId: query.objectId,
            createdFrom: query.createdFrom?.toISOString(),
            createdTo: query.createdTo?.toISOString(),
          },
        };
        const result = await listEvents(
          deps.em,
          caller,
          { type: query.type, objectId: query.objectId, createdFrom: query.createdFrom, createdTo: query.createdTo },
          { limit: query.limit, ...(query.cursor ? { after: codec.decode(query.cursor, binding) } : {}) },
        );
        return { events: result.items, nextCursor: result.next ? codec.encode(result.next, binding) : null };
      },
    }),
    defineRoute({
      method: 'get',
      path: '/events/{eventId}',
      operationId: 'getEvent',
      tag: 'Events',
      summary: 'Retrieve an event, with every attempt to deliver it.',
      params: eventParams,
      response: eventWithDeliveriesSchema,
      errors: [...AUTH_ERRORS, 'not_found'],
      handler: async ({ params, caller }) => {
        if (!isId('event', params.eventId)) throw errors.notFound('Event');
        const event = await findEvent(deps.em, caller, params.eventId);
        if (!event) throw errors.notFound('Event');
        return event;
      },
    }),
    defineRoute({
      method: 'post',
      path: '/events/{eventId}/resend',
      operationId: 'resendEvent',
      tag: 'Events',
      summary: 'Send an event once more (the same id and body), to one endpoint or to all its destinations.',
      description:
        '202 with the new attempts, `pending`; each is delivered within moments and retried like any delivery, whether earlier deliveries succeeded or not. `{ "endpointId": "we_..." }`: that endpoint (404 `not_found` when it is not the caller\'s, 409 `webhook_endpoint_disabled` when disabled). `{}`: the record\'s callbackUrl if the event has one, and every endpoint the event was delivered to that still exists and is enabled; none: 202 with `deliveries: []`. The attempts show on GET /events/{id}.',
      params: eventParams,
      body: resendEventBody,
      response: resendEventResponse,
      successStatus: 202,
      errors: ['validation_error', ...AUTH_ERRORS, 'not_found', 'webhook_endpoint_disabled'],
      handler: async ({ params, body, caller }) => ({
        deliveries: await resendEvent(deps.em, caller, params.eventId, { endpointId: body.endpointId }),
      }),
    }),
  ];
}
