import type { MikroORM } from '@mikro-orm/postgresql';
import { Gauge } from 'prom-client';
import type { Logger } from '../logger';

/**
 * The state of event deliveries (decisions 0069, 0071) as gauges the alert rules read
 * (ops/prometheus/alerts.yml), by key environment:
 * - `event_deliveries_pending`: delivery jobs still to deliver (due now or waiting for a retry);
 * - `event_deliveries_overdue`: pending jobs due for more than EVENT_DELIVERY_OVERDUE_SECONDS that
 *   no delivery step has taken: delivery workers are down or too few, or a merchant's backlog
 *   outruns its EVENT_DELIVERY_CONCURRENCY_PER_MERCHANT;
 * - `webhook_endpoints_disabled`: endpoints disabled (by their merchant, or after 3 days of
 *   failures);
 * - `webhook_endpoints_failing`: enabled endpoints whose every delivery fails (failing_since set);
 * - `webhook_endpoints_failing_seconds`: how long the longest of them has been failing (0: none);
 *   at 3 days it is disabled.
 * Counted by the API at scrape time as src/metrics/backlog.ts does (cached for CACHE_MS, pending
 * rows through the partial index delivery_jobs_due_idx; endpoints are few per merchant). A failed
 * query leaves the gauges without series; the next scrape asks again.
 */
export const EVENT_DELIVERY_OVERDUE_SECONDS = 300;
const CACHE_MS = 15_000;
const ENVIRONMENTS = ['test', 'live'] as const;

interface Row {
  environment: string;
  n: number;
}

interface Snapshot {
  pending: Row[];
  overdue: Row[];
  disabled: Row[];
  failing: Row[];
  failingSeconds: Row[];
}

let registered = false;

export function registerDeliveryGauges(orm: MikroORM, logger: Logger): void {
  if (registered) return;
  registered = true;
  let cached: { at: number; snapshot: Promise<Snapshot | null> } | undefined;
  const snapshot = (): Promise<Snapshot | null> => {
    const now = Date.now();
    if (cached && now - cached.at < CACHE_MS) return cached.snapshot;
    const sql = orm.em.getConnection();
    const taken = Promise.all([
      sql.execute(
        `select environment,
                count(*)::int as pending,
                (count(*) filter (where next_attempt_at < now() - make_interval(secs => ?)
                                    and (claimed_until is null or claimed_until < now())))::int as overdue
           from delivery_jobs where status = 'pending' group by environment`,
        [EVENT_DELIVERY_OVERDUE_SECONDS],
      ),
      sql.execute(
        `select environment,
                (count(*) filter (where status = 'disabled'))::int as disabled,
                (count(*) filter (where status = 'enabled' and failing_since is not null))::int as failing,
                coalesce(extract(epoch from now() - min(failing_since) filter (where status = 'enabled')), 0)::float8
                  as failing_seconds
           from webhook_endpoints group by environment`,
      ),
    ]).then(
      ([jobs, endpoints]) => {
        const pick = (rows: Array<Record<string, unknown>>, column: string): Row[] =>
          rows.map((r) => ({ environment: String(r.environment), n: Number(r[column]) }));
        return {
          pending: pick(jobs, 'pending'),
          overdue: pick(jobs, 'overdue'),
          disabled: pick(endpoints, 'disabled'),
          failing: pick(endpoints, 'failing'),
          failingSeconds: pick(endpoints, 'failing_seconds'),
        };
      },
      (err: unknown) => {
        logger.warn({ err }, 'delivery gauges: query failed');
        cached = undefined;
        return null;
      },
    );
    cached = { at: now, snapshot: taken };
    return taken;
  };
  const gauge = (name: string, help: string, pick: (s: Snapshot) => Row[]) =>
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
        // Both environments always have a series (0 when there is nothing).
        for (const environment of ENVIRONMENTS) this.set({ environment }, 0);
        for (const row of pick(s)) this.set({ environment: row.environment }, row.n);
      },
    });
  gauge('event_deliveries_pending', 'Event deliveries still to deliver (due or waiting for a retry)', (s) => s.pending);
  gauge(
    'event_deliveries_overdue',
    `Event deliveries due for more than ${EVENT_DELIVERY_OVERDUE_SECONDS} s that no delivery step has taken`,
    (s) => s.overdue,
  );
  gauge(
    'webhook_endpoints_disabled',
    'Webhook endpoints disabled (by their merchant, or after 3 days of failures)',
    (s) => s.disabled,
  );
  gauge('webhook_endpoints_failing', 'Enabled webhook endpoints whose deliveries all fail', (s) => s.failing);
  gauge(
    'webhook_endpoints_failing_seconds',
    'How long the longest-failing enabled webhook endpoint has failed (disabled at 3 days)',
    (s) => s.failingSeconds,
  );
}
