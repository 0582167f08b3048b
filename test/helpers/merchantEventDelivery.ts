import type { MikroORM } from '@mikro-orm/postgresql';
import { Client, Connection } from '@temporalio/client';
import { MockActivityEnvironment } from '@temporalio/testing';
import { createEventDeliveryActivities, type DueDeliveries } from '../../activities/eventDeliveries';
import { createWorkflowStarters } from '../../src/worker';
import { recordEvent } from '../../src/domain/events';
import { Merchant, type DeliveryJobStatus, type KeyEnvironment } from '../../src/db/entities';
import type { ResolveHost } from '../../src/net/pinnedPost';
import type { ProviderRegistry } from '../../src/providers/registry';
import { openTestOrm, testLogger, testProviders, uniqueTaskQueue } from './stack';
import { createMerchant } from '../../src/domain/merchants';
import { paymentRow } from './records';
import { testStack } from '../setup/stackInfo';

/** A delivery job as its row says (delivery_jobs). */
export interface JobRow {
  id: string;
  eventId: string;
  url: string | null;
  status: DeliveryJobStatus;
  attempts: number;
  nextAttemptAt: Date;
  claimedUntil: Date | null;
  lastError: string | null;
}

/** One attempt as GET /events/{id} shows it (event_deliveries). */
export interface AttemptRow {
  attempt: number;
  url: string;
  status: 'pending' | 'succeeded' | 'failed';
  httpStatus: number | null;
  error: string | null;
}

/**
 * The delivery step (activities/eventDeliveries.ts `deliverDueEvents`) called directly, on the
 * real database, for tests of what one step does: a merchant of its own, `payment.succeeded`
 * events of payments in a chosen environment (each event's trigger writes its callback's
 * delivery job), and delivery steps with the options a test needs. The step runs in Temporal's
 * MockActivityEnvironment: the activity context it heartbeats to, nothing else.
 *
 * The merchant is made without createTestMerchant, so it is not one of this file's merchants: a
 * test worker's delivery kicker never wakes a workflow for it, and nothing but the test's own
 * calls delivers its jobs (nor does the orphan sweeper, whose schedule is not running in tests).
 */
export async function startDeliveryFixture(name: string) {
  const orm: MikroORM = await openTestOrm();
  const { merchant } = await createMerchant(orm.em.fork(), { name, email: 'merchant@example.com' });
  const merchantId = merchant.id;
  // The activities' dependencies include workflow starters (a Temporal client); delivering never uses them.
  const connection = await Connection.connect({ address: testStack().temporalAddress });
  const client = new Client({ connection, namespace: 'default' });
  const sql = <T = Record<string, unknown>>(text: string, values: unknown[] = []): Promise<T[]> =>
    orm.em.getConnection().execute(text, values);

  /** A `payment.succeeded` event of a new payment, to `callbackUrl` (its delivery job due now); answers its id. */
  const eventFor = async (callbackUrl: string, environment: KeyEnvironment = 'test'): Promise<string> => {
    const em = orm.em.fork();
    const payment = paymentRow(em, merchantId, { environment, status: 'succeeded', callbackUrl });
    const event = recordEvent(em, {
      merchant: em.getReference(Merchant, merchantId),
      type: 'payment.succeeded',
      resourceId: payment.id,
      dedupeKey: `${payment.id}:payment.succeeded`,
      callbackUrl,
      environment,
      data: { id: payment.id, environment },
    });
    await em.flush();
    return event.id;
  };

  /** A delivery step with the options a test needs (retries start at 1 s). */
  const deliverer = (
    opts: {
      privateTestCallbacks?: boolean;
      resolveHost?: ResolveHost;
      providers?: ProviderRegistry;
      concurrencyPerMerchant?: number;
      callbackTimeoutMs?: number;
    } = {},
  ) => {
    const activities = createEventDeliveryActivities({
      orm,
      logger: testLogger,
      providers: opts.providers ?? testProviders(orm),
      publicBaseUrl: 'http://127.0.0.1:9',
      starters: createWorkflowStarters({
        client,
        taskQueue: uniqueTaskQueue('delivery'),
        callbackRetryInitialSeconds: 1,
      }),
      callbackTimeoutMs: opts.callbackTimeoutMs ?? 3_000,
      privateTestCallbacks: opts.privateTestCallbacks ?? true,
      ...(opts.resolveHost ? { resolveHost: opts.resolveHost } : {}),
      deliveries: {
        retryInitialSeconds: 1,
        ...(opts.concurrencyPerMerchant ? { concurrencyPerMerchant: opts.concurrencyPerMerchant } : {}),
      },
    });
    return {
      /** One step of the fixture's merchant (or another's), in an activity context of its own. */
      deliverDueEvents: (forMerchant = merchantId): Promise<DueDeliveries> =>
        new MockActivityEnvironment().run(() => activities.deliverDueEvents(forMerchant)),
    };
  };

  /** The delivery job of an event (its callback's: the fixture's merchant has no endpoints). */
  const jobOf = async (eventId: string): Promise<JobRow> => {
    const [row] = await sql<{
      id: string;
      event_id: string;
      url: string | null;
      status: DeliveryJobStatus;
      attempts: number;
      next_attempt_at: Date;
      claimed_until: Date | null;
      last_error: string | null;
    }>(
      `select id, event_id, url, status, attempts, next_attempt_at, claimed_until, last_error
         from delivery_jobs where event_id = ? and endpoint_id is null`,
      [eventId],
    );
    if (!row) throw new Error(`no delivery job for ${eventId}`);
    return {
      id: row.id,
      eventId: row.event_id,
      url: row.url,
      status: row.status,
      attempts: row.attempts,
      nextAttemptAt: new Date(row.next_attempt_at),
      claimedUntil: row.claimed_until ? new Date(row.claimed_until) : null,
      lastError: row.last_error,
    };
  };

  /** An event's attempts (event_deliveries), first first. */
  const attemptsOf = async (eventId: string): Promise<AttemptRow[]> => {
    const rows = await sql<{
      attempt: number;
      url: string;
      status: AttemptRow['status'];
      http_status: number | null;
      error: string | null;
    }>(`select attempt, url, status, http_status, error from event_deliveries where event_id = ? order by attempt`, [
      eventId,
    ]);
    return rows.map((r) => ({
      attempt: r.attempt,
      url: r.url,
      status: r.status,
      httpStatus: r.http_status,
      error: r.error,
    }));
  };

  /**
   * Leaves the merchant as a test found it: every job still pending ended (a failure's retry, a
   * pause's deferrals), its hosts' failure counts and pauses gone, no lease. The next test's
   * step finds only its own jobs.
   */
  const reset = async () => {
    await sql(
      `update delivery_jobs set status = 'cancelled', claimed_until = null, last_error = 'test over', updated_at = now()
        where merchant_id = ? and status = 'pending'`,
      [merchantId],
    );
    await sql(`delete from delivery_host_pauses where merchant_id = ?`, [merchantId]);
    await sql(`delete from delivery_leases where merchant_id = ?`, [merchantId]);
  };

  const close = async () => {
    await connection.close();
    await orm.close();
  };
  return { orm, merchantId, sql, eventFor, deliverer, jobOf, attemptsOf, reset, close };
}
