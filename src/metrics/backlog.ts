import type { MikroORM } from '@mikro-orm/postgresql';
import type { Logger } from '../logger';
import { registerEnvironmentGauges, type EnvironmentCount } from './environmentGauges';

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
 * indexes (rows in flight only), cached and published as src/metrics/environmentGauges.ts says.
 */
export const PAYMENT_EXPIRY_GRACE_SECONDS = 300;
export const REFUND_PENDING_MAX_SECONDS = 86_400;
export const PAYMENT_PROCESSING_MAX_SECONDS = 7 * 86_400;

interface Snapshot {
  payments: EnvironmentCount[];
  processing: EnvironmentCount[];
  invoices: EnvironmentCount[];
  refunds: EnvironmentCount[];
}

let registered = false;

export function registerBacklogGauges(orm: MikroORM, logger: Logger): void {
  if (registered) return;
  registered = true;
  const sql = orm.em.getConnection();
  const read = (): Promise<Snapshot> =>
    Promise.all([
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
    ]).then(([payments, processing, invoices, refunds]) => ({ payments, processing, invoices, refunds }) as Snapshot);
  registerEnvironmentGauges<Snapshot>({
    what: 'backlog gauges',
    logger,
    read,
    gauges: [
      {
        name: 'payments_stuck_created',
        help: `Payments still created or requires_action more than ${PAYMENT_EXPIRY_GRACE_SECONDS} s past their expiry`,
        pick: (s) => s.payments,
      },
      {
        name: 'payments_stuck_processing',
        help: `Payments processing for more than ${PAYMENT_PROCESSING_MAX_SECONDS} s (the processor has not decided)`,
        pick: (s) => s.processing,
      },
      {
        name: 'invoices_stuck_processing',
        help: `Subscription invoices processing for more than ${PAYMENT_PROCESSING_MAX_SECONDS} s (the processor has not decided)`,
        pick: (s) => s.invoices,
      },
      {
        name: 'refunds_stuck_pending',
        help: `Refunds pending for more than ${REFUND_PENDING_MAX_SECONDS} s`,
        pick: (s) => s.refunds,
      },
    ],
  });
}
