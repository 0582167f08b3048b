import type { MikroORM } from '@mikro-orm/postgresql';
import { Gauge } from 'prom-client';
import type { Logger } from '../logger';

/**
 * Records stuck where nothing should be, as gauges the alert rules read (ops/prometheus/alerts.yml):
 * - `payments_stuck_created`: payments still `created` or `requires_action` more than
 *   PAYMENT_EXPIRY_GRACE_SECONDS after their expiresAt (their workflow voids them at expiry);
 * - `payments_stuck_processing`: payments `processing` (the processor decides later, no expiry)
 *   created more than PAYMENT_PROCESSING_MAX_SECONDS (7 days) ago: their workflow keeps asking;
 * - `invoices_stuck_processing`: subscription invoices `processing` since more than the same
 *   7 days (their last change: the attempt the processor has not decided), by the
 *   subscription's environment;
 * - `refunds_stuck_pending`: refunds `pending` for more than REFUND_PENDING_MAX_SECONDS.
 * Counted by the API at scrape time, by key environment, with small queries over partial
 * indexes (rows in flight only), answered from a cache for CACHE_MS so several scrapers (or a
 * cluster's API processes) cost one set of queries per interval. A failed query leaves the gauges
 * without series (the scrape still answers); the next scrape asks again.
 */
export const PAYMENT_EXPIRY_GRACE_SECONDS = 300;
export const REFUND_PENDING_MAX_SECONDS = 86_400;
export const PAYMENT_PROCESSING_MAX_SECONDS = 7 * 86_400;
const CACHE_MS = 15_000;

interface Snapshot {
  payments: Array<{ environment: string; n: number }>;
  processing: Array<{ environment: string; n: number }>;
  invoices: Array<{ environment: string; n: number }>;
  refunds: Array<{ environment: string; n: number }>;
}

let registered = false;

export function registerBacklogGauges(orm: MikroORM, logger: Logger): void {
  if (registered) return;
  registered = true;
  let cached: { at: number; snapshot: Promise<Snapshot | null> } | undefined;
  const snapshot = (): Promise<Snapshot | null> => {
    const now = Date.now();
    if (cached && now - cached.at < CACHE_MS) return cached.snapshot;
    const sql = orm.em.getConnection();
    const taken = Promise.all([
      sql.execute(
        `select environment, count(*)::int as n from payments
          where status in ('created', 'requires_action') and expires_at < now() - make_interval(secs => ?)
          group by environment`,
        [PAYMENT_EXPIRY_GRACE_SECONDS],
      ),
      sql.execute(
        `select environment, count(*)::int as n from payments
          where status = 'processing' and created_at < now() - make_interval(secs => ?) group by environment`,
        [PAYMENT_PROCESSING_MAX_SECONDS],
      ),
      sql.execute(
        `select s.environment, count(*)::int as n from invoices i join subscriptions s on s.id = i.subscription_id
          where i.status = 'processing' and i.updated_at < now() - make_interval(secs => ?) group by s.environment`,
        [PAYMENT_PROCESSING_MAX_SECONDS],
      ),
      sql.execute(
        `select p.environment, count(*)::int as n from refunds r join payments p on p.id = r.payment_id
          where r.status = 'pending' and r.created_at < now() - make_interval(secs => ?) group by p.environment`,
        [REFUND_PENDING_MAX_SECONDS],
      ),
    ]).then(
      ([payments, processing, invoices, refunds]) => ({ payments, processing, invoices, refunds }) as Snapshot,
      (err: unknown) => {
        logger.warn({ err }, 'backlog gauges: query failed');
        cached = undefined;
        return null;
      },
    );
    cached = { at: now, snapshot: taken };
    return taken;
  };
  const gauge = (name: string, help: string, pick: (s: Snapshot) => Snapshot['payments']) =>
    new Gauge({
      name,
      help,
      labelNames: ['environment'],
      // Every API process counts the same rows: a cluster shows one count, not their sum.
      aggregator: 'max',
      async collect() {
        const s = await snapshot();
        this.reset();
        if (!s) return;
        // Both environments always have a series (0 when nothing is stuck).
        for (const environment of ['test', 'live']) this.set({ environment }, 0);
        for (const row of pick(s)) this.set({ environment: row.environment }, Number(row.n));
      },
    });
  gauge(
    'payments_stuck_created',
    `Payments still created or requires_action more than ${PAYMENT_EXPIRY_GRACE_SECONDS} s past their expiry`,
    (s) => s.payments,
  );
  gauge(
    'payments_stuck_processing',
    `Payments processing for more than ${PAYMENT_PROCESSING_MAX_SECONDS} s (the processor has not decided)`,
    (s) => s.processing,
  );
  gauge(
    'invoices_stuck_processing',
    `Subscription invoices processing for more than ${PAYMENT_PROCESSING_MAX_SECONDS} s (the processor has not decided)`,
    (s) => s.invoices,
  );
  gauge('refunds_stuck_pending', `Refunds pending for more than ${REFUND_PENDING_MAX_SECONDS} s`, (s) => s.refunds);
}
