import type { EntityManager } from '@mikro-orm/postgresql';
import type { EventDeliveryStatus, KeyEnvironment } from '../db/entities';
import { Conditions, pageOf, positionOfRow, type Page, type PageRequest } from './paging';
import { MERCHANT_EVENT_TYPES, type MerchantEventType } from './events';
import type { RecordScope } from './scope';

/**
 * The event log (PRODUCT.md, "Events, webhook endpoints and deliveries"; decision 0065): every
 * event recorded, listed newest first by keyset on (created_at, id) within the caller's merchant
 * and environment, on the merchant_events_merchant_env_* indexes.
 */

export interface EventView {
  id: string;
  type: string;
  createdAt: string;
  environment: KeyEnvironment;
  objectId: string;
  sequence: number;
  data: unknown;
}

export interface EventDeliveryView {
  endpointId: string | null;
  url: string;
  attempt: number;
  status: EventDeliveryStatus;
  httpStatus: number | null;
  error: string | null;
  durationMs: number | null;
  at: string;
}

export interface EventFilters {
  /** An exact type, or a family's prefix `payment.*`. */
  type?: string;
  objectId?: string;
  /** Inclusive. */
  createdFrom?: Date;
  /** Exclusive. */
  createdTo?: Date;
}

const EVENT_COLUMNS = `id, type, created_at, environment, object_id, sequence, payload -> 'data' as data`;

function eventOfRow(row: Record<string, unknown>): EventView {
  return {
    id: row.id as string,
    type: row.type as string,
    createdAt: new Date(row.created_at as Date).toISOString(),
    environment: row.environment as KeyEnvironment,
    objectId: row.object_id as string,
    sequence: Number(row.sequence),
    data: row.data ?? null,
  };
}

/** The types a `type` filter names: itself, or every type of its family (`payment.*`). */
export function typesOfFilter(filter: string): MerchantEventType[] {
  if (filter.endsWith('.*')) {
    const family = filter.slice(0, -1);
    return MERCHANT_EVENT_TYPES.filter((t) => t.startsWith(family));
  }
  return MERCHANT_EVENT_TYPES.filter((t) => t === filter);
}

export async function listEvents(
  em: EntityManager,
  scope: RecordScope,
  filters: EventFilters,
  page: PageRequest,
): Promise<Page<EventView>> {
  const where = new Conditions().add('merchant_id = ?', scope.merchantId).add('environment = ?', scope.environment);
  if (filters.type !== undefined) {
    // A family is its exact types: each one an equality the (merchant, environment, type) index serves.
    const types = typesOfFilter(filters.type);
    if (types.length === 0) return { items: [], next: null };
    where.add(`type in (${types.map(() => '?').join(', ')})`, ...types);
  }
  if (filters.objectId !== undefined) where.add('object_id = ?', filters.objectId);
  if (filters.createdFrom) where.add('created_at >= ?', filters.createdFrom);
  if (filters.createdTo) where.add('created_at < ?', filters.createdTo);
  where.after('', page.after);
  const rows: Array<Record<string, unknown>> = await em
    .getConnection()
    .execute(`select ${EVENT_COLUMNS} from merchant_events where ${where} order by created_at desc, id desc limit ?`, [
      ...where.bindings,
      page.limit + 1,
    ]);
  return pageOf(rows, page.limit, positionOfRow, (kept) => kept.map(eventOfRow));
}

/** One event of the caller's merchant and environment, with its delivery attempts (oldest first); null: none. */
export async function findEvent(
  em: EntityManager,
  scope: RecordScope,
  id: string,
): Promise<(EventView & { deliveries: EventDeliveryView[] }) | null> {
  const connection = em.getConnection();
  const row: Record<string, unknown> | undefined = await connection.execute(
    `select ${EVENT_COLUMNS} from merchant_events where id = ? and merchant_id = ? and environment = ?`,
    [id, scope.merchantId, scope.environment],
    'get',
  );
  if (!row) return null;
  const deliveries: Array<Record<string, unknown>> = await connection.execute(
    `select endpoint_id, url, attempt, status, http_status, error, duration_ms, at
       from event_deliveries where event_id = ? order by at, attempt, id`,
    [id],
  );
  return {
    ...eventOfRow(row),
    deliveries: deliveries.map(deliveryOfRow),
  };
}

/** An event_deliveries row (endpoint_id, url, attempt, status, http_status, error, duration_ms, at) as the API shows it. */
export function deliveryOfRow(d: Record<string, unknown>): EventDeliveryView {
  return {
    endpointId: (d.endpoint_id as string | null) ?? null,
    url: d.url as string,
    attempt: Number(d.attempt),
    status: d.status as EventDeliveryStatus,
    httpStatus: d.http_status === null || d.http_status === undefined ? null : Number(d.http_status),
    error: (d.error as string | null) ?? null,
    durationMs: d.duration_ms === null || d.duration_ms === undefined ? null : Number(d.duration_ms),
    at: new Date(d.at as Date).toISOString(),
  };
}
