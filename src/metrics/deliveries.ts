import type { MikroORM } from '@mikro-orm/postgresql';
import type { Logger } from '../logger';
import { registerEnvironmentGauges, type EnvironmentCount } from './environmentGauges';

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
 * Counted by the API at scrape time as src/metrics/backlog.ts does (src/metrics/environmentGauges.ts;
 * pending rows through the partial index delivery_jobs_due_idx; endpoints are few per merchant).
 */
export const EVENT_DELIVERY_OVERDUE_SECONDS = 300;

interface Snapshot {
  pending: EnvironmentCount[];
  overdue: EnvironmentCount[];
  disabled: EnvironmentCount[];
  failing: EnvironmentCount[];
  failingSeconds: EnvironmentCount[];
}

let registered = false;

export function registerDeliveryGauges(orm: MikroORM, logger: Logger): void {
  if (registered) return;
  registered = true;
  const sql = orm.em.getConnection();
  const read = (): Promise<Snapshot> =>
    Promise.all([
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
    ]).then(([jobs, endpoints]) => {
      const pick = (rows: Array<Record<string, unknown>>, column: string): EnvironmentCount[] =>
        rows.map((r) => ({ environment: String(r.environment), n: Number(r[column]) }));
      return {
        pending: pick(jobs, 'pending'),
        overdue: pick(jobs, 'overdue'),
        disabled: pick(endpoints, 'disabled'),
        failing: pick(endpoints, 'failing'),
        failingSeconds: pick(endpoints, 'failing_seconds'),
      };
    });
  registerEnvironmentGauges<Snapshot>({
    what: 'delivery gauges',
    logger,
    read,
    gauges: [
      {
        name: 'event_deliveries_pending',
        help: 'Event deliveries still to deliver (due or waiting for a retry)',
        pick: (s) => s.pending,
      },
      {
        name: 'event_deliveries_overdue',
        help: `Event deliveries due for more than ${EVENT_DELIVERY_OVERDUE_SECONDS} s that no delivery step has taken`,
        pick: (s) => s.overdue,
      },
      {
        name: 'webhook_endpoints_disabled',
        help: 'Webhook endpoints disabled (by their merchant, or after 3 days of failures)',
        pick: (s) => s.disabled,
      },
      {
        name: 'webhook_endpoints_failing',
        help: 'Enabled webhook endpoints whose deliveries all fail',
        pick: (s) => s.failing,
      },
      {
        name: 'webhook_endpoints_failing_seconds',
        help: 'How long the longest-failing enabled webhook endpoint has failed (disabled at 3 days)',
        pick: (s) => s.failingSeconds,
      },
    ],
  });
}
