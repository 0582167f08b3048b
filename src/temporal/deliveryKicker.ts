import type { Client } from '@temporalio/client';
import type { MikroORM } from '@mikro-orm/postgresql';
import type { Logger } from '../logger';
import { createEventDeliveriesGateway } from './eventDeliveriesGateway';

export interface DeliveryKickerOptions {
  orm: MikroORM;
  client: Client;
  /** The delivery task queue (deliveryTaskQueue of TEMPORAL_TASK_QUEUE). */
  taskQueue: string;
  logger: Logger;
  /** How often it looks (EVENT_DELIVERY_POLL_MS). */
  intervalMs: number;
  /**
   * Only these merchants' deliveries (test files sharing one database each deliver their own);
   * unset: every merchant's.
   */
  merchantIds?: () => readonly string[];
}

export interface DeliveryKicker {
  stop(): Promise<void>;
}

/** How long stop() waits for a round in progress. */
const STOP_WAIT_MS = 2000;

/** Merchants that look for a delivery step at a time (the rest wait a round). */
const MERCHANTS_PER_ROUND = 500;

/**
 * Wakes the delivery workflow of every merchant with a due delivery that no delivery step holds
 * (decision 0069): written by an event's transaction, or due again after a retry's wait that a
 * sleeping run has not reached. It asks PostgreSQL, not the code that records events, so an event
 * recorded anywhere (an activity, the API, a statement's trigger) is delivered after its commit
 * and never before; a merchant whose step is running (its lease held) is left to it. A signal to
 * a run that would have woken anyway costs one workflow task.
 */
export function startDeliveryKicker(opts: DeliveryKickerOptions): DeliveryKicker {
  const { orm, client, taskQueue, logger, intervalMs } = opts;
  /** Merchants with a due delivery that no delivery step holds (at most a round's worth). */
  let stopped = false;
  let timer: NodeJS.Timeout | null = null;
  let round: Promise<void> = Promise.resolve();

  const dueMerchants = async (): Promise<string[]> => {
    const scope = opts.merchantIds?.();
    if (scope && scope.length === 0) return [];
    const rows: Array<{ merchant_id: string }> = await orm.em.getConnection().execute(
      `select distinct j.merchant_id from delivery_jobs j
        where j.status = 'pending' and j.next_attempt_at <= now()
          and (j.claimed_until is null or j.claimed_until < now())
          ${scope ? 'and j.merchant_id in (?)' : ''}
          and not exists (select 1 from delivery_leases l where l.merchant_id = j.merchant_id and l.until > now())
        limit ?`,
      scope ? [scope, MERCHANTS_PER_ROUND] : [MERCHANTS_PER_ROUND],
    );
    return rows.map((r) => r.merchant_id);
  };

  const { wake } = createEventDeliveriesGateway({ client, settings: { taskQueue } });

  const tick = async () => {
    try {
      const merchants = await dueMerchants();
      await Promise.all(
        merchants.map((merchantId) =>
          wake(merchantId).catch((err: unknown) =>
            logger.warn({ merchantId, err: (err as Error).message }, 'event delivery workflow not woken; next round'),
          ),
        ),
      );
    } catch (err) {
      logger.warn({ err: (err as Error).message }, 'due event deliveries not read; next round');
    }
  };

  const schedule = () => {
    if (stopped) return;
    timer = setTimeout(() => {
      round = tick().finally(schedule);
    }, intervalMs);
  };
  schedule();

  return {
    async stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      // A round waiting on a busy pool (up to its 60 s) is left to end by itself: its wake-ups
      // are harmless, and a stopping process must not wait on it (decision 0075).
      let waited: NodeJS.Timeout | undefined;
      await Promise.race([round, new Promise((resolve) => (waited = setTimeout(resolve, STOP_WAIT_MS)))]);
      clearTimeout(waited);
    },
  };
}
