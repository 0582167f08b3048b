import type { EntityManager } from '@mikro-orm/postgresql';
import { AppError, errors } from '../errors';
import { isId, newId } from '../ids';
import { deliveryOfRow, type EventDeliveryView } from './eventLog';
import { webhookEndpointNotFound } from './webhookEndpoints';
import type { RecordScope } from './scope';

/**
 * `POST /events/{id}/resend` (PRODUCT.md, "Events, webhook endpoints and deliveries"; decision
 * 0070): the same event id and body once more to one endpoint, or to every destination it had,
 * whether earlier deliveries succeeded or not. Each destination gets a new delivery job (due now:
 * the delivery kicker wakes the merchant's delivery workflow within EVENT_DELIVERY_POLL_MS) and
 * its next attempt pre-created `pending` (the job's `pending_delivery_id`, which the delivery step
 * fills: activities/eventDeliveries.ts beginAttempt), both in one transaction. A resend's job is
 * retried like any delivery (same schedule, 3 days from the resend).
 */

/** Where a resend goes: one endpoint, or (undefined) every destination the event had. */
export interface ResendTarget {
  endpointId?: string | undefined;
}

interface Destination {
  endpointId: string | null;
  url: string;
}

export async function resendEvent(
  em: EntityManager,
  scope: RecordScope,
  eventId: string,
  target: ResendTarget,
): Promise<EventDeliveryView[]> {
  if (!isId('event', eventId)) throw errors.notFound('Event');
  return em.fork().transactional(async (tx) => {
    // Locked: concurrent resends of one event number their attempts one after the other.
    const [event] = await tx.execute<Array<{ id: string; callback_url: string | null }>>(
      `select id, callback_url from merchant_events where id = ? and merchant_id = ? and environment = ? for update`,
      [eventId, scope.merchantId, scope.environment],
    );
    if (!event) throw errors.notFound('Event');

    let destinations: Destination[];
    if (target.endpointId !== undefined) {
      // Named: any endpoint of the caller's merchant and environment, whether its filter matched
      // the event or not (the merchant asks for it); a disabled one is refused, not queued.
      if (!isId('webhookEndpoint', target.endpointId)) throw webhookEndpointNotFound();
      const [endpoint] = await tx.execute<Array<{ id: string; url: string; status: string }>>(
        `select id, url, status from webhook_endpoints where id = ? and merchant_id = ? and environment = ?`,
        [target.endpointId, scope.merchantId, scope.environment],
      );
      if (!endpoint) throw webhookEndpointNotFound();
      if (endpoint.status !== 'enabled') {
        throw new AppError(
          'webhook_endpoint_disabled',
          'The webhook endpoint is disabled; enable it (PATCH status: enabled) before resending to it.',
          { endpointId: endpoint.id },
        );
      }
      destinations = [{ endpointId: endpoint.id, url: endpoint.url }];
    } else {
      // `{}`: the record's callbackUrl (if the event has one), and every endpoint that had a
      // delivery of the event (a job, or an attempt) and still exists and is enabled.
      const endpoints = await tx.execute<Array<{ id: string; url: string }>>(
        `select w.id, w.url from webhook_endpoints w
          where w.merchant_id = ? and w.environment = ? and w.status = 'enabled'
            and (exists (select 1 from delivery_jobs j where j.event_id = ? and j.endpoint_id = w.id)
                 or exists (select 1 from event_deliveries d where d.event_id = ? and d.endpoint_id = w.id))
          order by w.created_at, w.id`,
        [scope.merchantId, scope.environment, eventId, eventId],
      );
      destinations = [
        ...(event.callback_url === null ? [] : [{ endpointId: null, url: event.callback_url }]),
        ...endpoints.map((w) => ({ endpointId: w.id, url: w.url })),
      ];
    }

    const deliveries: EventDeliveryView[] = [];
    for (const destination of destinations) {
      const deliveryId = newId('eventDelivery');
      const [row] = await tx.execute<Array<Record<string, unknown>>>(
        `insert into event_deliveries (id, event_id, endpoint_id, url, attempt, status, at)
         select ?, ?, ?, ?, coalesce(max(attempt), 0) + 1, 'pending', now()
           from event_deliveries where event_id = ? and endpoint_id is not distinct from ?
         returning endpoint_id, url, attempt, status, http_status, error, duration_ms, at`,
        [deliveryId, eventId, destination.endpointId, destination.url, eventId, destination.endpointId],
      );
      // As the fan-out trigger writes a job: an endpoint's url is read at each attempt (null
      // here), a callbackUrl's is the record's.
      await tx.execute(
        `insert into delivery_jobs (id, merchant_id, environment, event_id, endpoint_id, url, status, attempts,
                                    next_attempt_at, pending_delivery_id, created_at, updated_at)
         values ('dj_' || replace(gen_random_uuid()::text, '-', ''), ?, ?, ?, ?, ?, 'pending', 0, now(), ?, now(), now())`,
        [
          scope.merchantId,
          scope.environment,
          eventId,
          destination.endpointId,
          destination.endpointId === null ? destination.url : null,
          deliveryId,
        ],
      );
      deliveries.push(deliveryOfRow(row!));
    }
    return deliveries;
  });
}
