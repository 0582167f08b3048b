import { Context } from '@temporalio/activity';
import type { KeyEnvironment } from '../src/db/entities';
import type { LiveKind, OrphanKind } from '../src/rules/orphanKinds';
import { subscriptionRecordOf, subscriptionStartOf } from '../src/domain/subscriptions';
import type { ActivityDeps, ReviveAnswer, WorkflowStarters } from './deps';

/**
 * The orphan sweeper. The API commits a record, then starts its workflow; if Temporal was
 * unreachable in between (the merchant got a 503 with the record in `details`) or the API died,
 * the record has no workflow. The sweeper starts it (USE_EXISTING: a no-op for a running one;
 * REJECT_DUPLICATE: a closed one is never started again):
 * - a payment: its workflow only waits for the expiry and voids; it never sends the merchant's
 *   submit, so nothing is captured without a new request;
 * - a refund: its workflow calls the provider, so the refund the merchant asked for proceeds;
 * - a subscription: its workflow charges the first period (or opens the hosted page), as the
 *   merchant asked (it was answered 503 with the subscription in `details`);
 * - an open dispute: its workflow follows the processor's decision (disputes are created by a
 *   webhook, whose start of the workflow may have failed every time);
 * - an email never attempted, or a merchant event never delivered (the outbox relay): the run
 *   that recorded it was lost before it handed it on (a local activity's marker lost with its
 *   worker) and the workflow went on without it; or its send was lost mid-way, its claim lapsed
 *   unreleased (a failed send releases it, and its own run retries). A workflow of its own sends it; the send claims
 *   the email (a late send by the original run is no second email), and a delivery skips an
 *   event already delivered.
 *
 * Each kind's candidates are paged by (created_at, id), older than a grace age (the API starts
 * the workflow right after its commit), without a sign of having had a workflow (a provider
 * reference). A watermark per kind remembers the last row examined; each run starts
 * WATERMARK_LOOKBACK_MS behind it, so a row committed late is still examined, and a candidate
 * examined again is a no-op: after the first look it has a workflow, or had one. Outbox rows need none: a row leaves
 * the candidates once sent, held by a sender, or failed (its claim released), so each run pages
 * from the start over what is still unsent, and a row committed late is never passed over.
 */

/** The last row examined. ISO timestamp: heartbeat details are JSON. */
interface SweepCursor {
  createdAt: string;
  id: string;
}

interface CandidateRow {
  id: string;
  created_at: Date;
}

/** One kind of record the sweeper looks after. */
interface OrphanKindSweep<Row extends CandidateRow> {
  /**
   * Candidates after the cursor, oldest first. Placeholders in order: cursor created_at,
   * cursor id, grace seconds, the merchant id (only `byMerchant`), limit.
   */
  candidates: (byMerchant: boolean) => string;
  /** Whether a persisted watermark skips rows examined by earlier runs. */
  watermarked: boolean;
  /** Starts the row's workflow through its gateway (closed ones are never started again). */
  start(starters: WorkflowStarters, row: Row, deps: ActivityDeps): Promise<unknown>;
}

interface PaymentCandidate extends CandidateRow {
  external_id: string;
  merchant_id: string;
  expires_at: Date;
  callback_url: string | null;
  /** bigint: the driver answers a string. */
  amount_minor: string | number;
  currency: string;
  environment: KeyEnvironment;
}

/** Open disputes after the cursor (needs_response, under_review), with their payment's callbackUrl. */
const openDisputeCandidates = (byMerchant: boolean) =>
  `select d.id, d.created_at, d.merchant_id, d.payment_id, p.callback_url, d.amount_minor, d.currency,
          d.evidence_due_by
      from disputes d join payments p on p.id = d.payment_id
      where d.status in ('needs_response', 'under_review')
        and (d.created_at, d.id) > (?, ?) and d.created_at < now() - make_interval(secs => ?)
        ${byMerchant ? 'and d.merchant_id = ?' : ''}
      order by d.created_at, d.id limit ?`;

/** What a dispute's workflow starts from, read from its row (a first start or a revival). */
const disputeStartOf = (row: DisputeCandidate): Parameters<WorkflowStarters['dispute']['start']>[0] => ({
  id: row.id,
  paymentId: row.payment_id,
  merchantId: row.merchant_id,
  amountMinor: Number(row.amount_minor),
  currency: row.currency,
  createdAt: new Date(row.created_at),
  evidenceDueBy: new Date(row.evidence_due_by),
  callbackUrl: row.callback_url,
});

/** What a payment's workflow starts from, read from its row (a first start or a revival). */
const paymentStartOf = (row: PaymentCandidate): Parameters<WorkflowStarters['payment']['start']>[0] => ({
  id: row.id,
  externalId: row.external_id,
  expiresAt: new Date(row.expires_at),
  callbackUrl: row.callback_url,
  merchant: { id: row.merchant_id },
  amountMinor: Number(row.amount_minor),
  currency: row.currency,
  environment: row.environment,
});

interface RefundCandidate extends CandidateRow {
  external_id: string;
  merchant_id: string;
  payment_id: string;
  callback_url: string | null;
  amount_minor: string | number;
  currency: string;
}

interface DisputeCandidate extends CandidateRow {
  merchant_id: string;
  payment_id: string;
  callback_url: string | null;
  amount_minor: string | number;
  currency: string;
  evidence_due_by: Date;
}

interface OutboxCandidate extends CandidateRow {
  merchant_id: string;
}

/**
 * Per kind: which rows may lack a workflow, and how their workflow starts (through the gateway
 * the API uses: the same options). A new kind (subscriptions) is one more entry here and in ORPHAN_KINDS.
 */
const kind = <Row extends CandidateRow>(sweep: OrphanKindSweep<Row>) => sweep;
const orphanKinds = {
  // Never reached the provider (a payment that did has a workflow that got that far).
  payments: kind<PaymentCandidate>({
    watermarked: true,
    candidates: (byMerchant) =>
      `select id, created_at, external_id, merchant_id, expires_at, callback_url, amount_minor, currency, environment
          from payments
          where status = 'created' and provider_transaction_id is null
            and (created_at, id) > (?, ?) and created_at < now() - make_interval(secs => ?)
            ${byMerchant ? 'and merchant_id = ?' : ''}
          order by created_at, id limit ?`,
    start: ({ payment }, row) => payment.start(paymentStartOf(row)),
  }),
  // Pending without a provider refund id: never answered by the provider.
  refunds: kind<RefundCandidate>({
    watermarked: true,
    candidates: (byMerchant) =>
      `select r.id, r.created_at, r.external_id, r.merchant_id, r.payment_id, p.callback_url, r.amount_minor, r.currency
          from refunds r join payments p on p.id = r.payment_id
          where r.status = 'pending' and r.provider_refund_id is null
            and (r.created_at, r.id) > (?, ?) and r.created_at < now() - make_interval(secs => ?)
            ${byMerchant ? 'and r.merchant_id = ?' : ''}
          order by r.created_at, r.id limit ?`,
    start: ({ refund }, row) =>
      refund.start({
        id: row.id,
        externalId: row.external_id,
        paymentId: row.payment_id,
        merchantId: row.merchant_id,
        amountMinor: Number(row.amount_minor),
        currency: row.currency,
        callbackUrl: row.callback_url,
      }),
  }),
  // Still `created`: its workflow (if any) never got past its first step.
  subscriptions: kind<CandidateRow>({
    watermarked: true,
    candidates: (byMerchant) =>
      `select id, created_at from subscriptions
          where status = 'created'
            and (created_at, id) > (?, ?) and created_at < now() - make_interval(secs => ?)
            ${byMerchant ? 'and merchant_id = ?' : ''}
          order by created_at, id limit ?`,
    start: async ({ subscription }, row, deps) => {
      const start = await subscriptionStartOf(deps.orm.em.fork(), row.id);
      if (!start) return; // discarded meanwhile
      return subscription.start(start);
    },
  }),
  // Unsent, and either never attempted or held by a claim that lapsed: the run that recorded it
  // never sent it, or its send was lost mid-way (the step cancelled with its subscription, the
  // worker killed). A failed send releases its claim and is retried by its own run.
  emails: kind<OutboxCandidate>({
    watermarked: false,
    candidates: (byMerchant) =>
      `select id, created_at, merchant_id from emails
          where sent_at is null and ((attempts = 0 and claimed_until is null) or claimed_until < now())
            and (created_at, id) > (?, ?) and created_at < now() - make_interval(secs => ?)
            ${byMerchant ? 'and merchant_id = ?' : ''}
          order by created_at, id limit ?`,
    start: ({ outboxEmail }, row) => outboxEmail.start({ emailId: row.id, merchantId: row.merchant_id }),
  }),
  // Deliveries overdue that no delivery step holds (decision 0069): the delivery kicker wakes
  // their merchant's workflow within a second; this wakes it when no kicker looked (none running,
  // or scoped to other merchants). Was: the relay of each undelivered event (decision 0013).
  merchantEvents: kind<OutboxCandidate>({
    watermarked: false,
    // Each merchant once a page: its first such job after the cursor.
    candidates: (byMerchant) =>
      `select id, created_at, merchant_id from (
         select distinct on (j.merchant_id) j.id, j.created_at, j.merchant_id from delivery_jobs j
          where j.status = 'pending' and (j.claimed_until is null or j.claimed_until < now())
            and (j.created_at, j.id) > (?, ?) and j.next_attempt_at < now() - make_interval(secs => ?)
            ${byMerchant ? 'and j.merchant_id = ?' : ''}
            and not exists (select 1 from delivery_leases l where l.merchant_id = j.merchant_id and l.until > now())
          order by j.merchant_id, j.created_at, j.id
       ) due order by created_at, id limit ?`,
    start: ({ eventDeliveries }, row) => eventDeliveries.wake(row.merchant_id),
  }),
  // Open: its workflow follows it until the processor decides (started by the webhook that
  // created it; a start that failed every time leaves it without one).
  disputes: kind<DisputeCandidate>({
    watermarked: true,
    candidates: openDisputeCandidates,
    start: ({ dispute }, row) => dispute.start(disputeStartOf(row)),
  }),
} satisfies Record<OrphanKind, unknown>;

/**
 * A live record the sweeper keeps running (decision 0059): its workflow ended, for whatever reason
 * (failed on an answer the old code did not know, terminated by an operator, timed out), while
 * the record is not final. Paged by (created_at, id) from a cursor per kind that wraps around to
 * the start once past the newest row: every live record is looked at again, a page per run.
 */
interface LiveKindSweep<Row extends CandidateRow> {
  /** Live rows after the cursor (same placeholders as OrphanKindSweep.candidates). */
  candidates: (byMerchant: boolean) => string;
  /** The row is still live (read again once its workflow is found ended). */
  stillLive: string;
  /** Starts a new run unless one is running (the gateway's revive). */
  revive(starters: WorkflowStarters, row: Row, deps: ActivityDeps): Promise<ReviveAnswer>;
}

const live = <Row extends CandidateRow>(sweep: LiveKindSweep<Row>) => sweep;
const liveKinds = {
  // Not final: created (hosted, or never attempted), requires_action, processing.
  payments: live<PaymentCandidate>({
    candidates: (byMerchant) =>
      `select id, created_at, external_id, merchant_id, expires_at, callback_url, amount_minor, currency, environment
          from payments
          where status in ('created', 'requires_action', 'processing')
            and (created_at, id) > (?, ?) and created_at < now() - make_interval(secs => ?)
            ${byMerchant ? 'and merchant_id = ?' : ''}
          order by created_at, id limit ?`,
    stillLive: `select 1 from payments where id = ? and status in ('created', 'requires_action', 'processing')`,
    revive: ({ payment }, row) => payment.revive(paymentStartOf(row)),
  }),
  // Pending, with or without a provider refund id.
  refunds: live<RefundCandidate>({
    candidates: (byMerchant) =>
      `select r.id, r.created_at, r.external_id, r.merchant_id, r.payment_id, p.callback_url, r.amount_minor, r.currency
          from refunds r join payments p on p.id = r.payment_id
          where r.status = 'pending'
            and (r.created_at, r.id) > (?, ?) and r.created_at < now() - make_interval(secs => ?)
            ${byMerchant ? 'and r.merchant_id = ?' : ''}
          order by r.created_at, r.id limit ?`,
    stillLive: `select 1 from refunds where id = ? and status = 'pending'`,
    revive: ({ refund }, row) =>
      refund.revive({
        id: row.id,
        externalId: row.external_id,
        paymentId: row.payment_id,
        merchantId: row.merchant_id,
        amountMinor: Number(row.amount_minor),
        currency: row.currency,
        callbackUrl: row.callback_url,
      }),
  }),
  // Not cancelled: taken up where its record says (decision 0061): `created` starts over, a paid
  // latest invoice waits for the next period, an invoice being collected is collected on from
  // where the record shows it (subscriptionRecordOf here; the pure subscriptionRevivalOf in
  // src/rules/subscriptionCollection.ts; the gateway reads the record once no run is running).
  // Not on a test clock: its dates are the clock's, never real time's (decision 0090).
  subscriptions: live<CandidateRow>({
    candidates: (byMerchant) =>
      `select id, created_at from subscriptions
          where status <> 'cancelled' and test_clock_id is null
            and (created_at, id) > (?, ?) and created_at < now() - make_interval(secs => ?)
            ${byMerchant ? 'and merchant_id = ?' : ''}
          order by created_at, id limit ?`,
    stillLive: `select 1 from subscriptions where id = ? and status <> 'cancelled'`,
    revive: async ({ subscription }, row, deps) => {
      const em = deps.orm.em.fork();
      const start = await subscriptionStartOf(em, row.id);
      if (!start) return 'running'; // discarded meanwhile: nothing to run
      return subscription.revive(start, () => subscriptionRecordOf(deps.orm.em.fork(), row.id));
    },
  }),
  // Open (not decided by the processor, nor accepted): followed until the processor decides.
  disputes: live<DisputeCandidate>({
    candidates: openDisputeCandidates,
    stillLive: `select 1 from disputes where id = ? and status in ('needs_response', 'under_review')`,
    revive: ({ dispute }, row) => dispute.revive(disputeStartOf(row)),
  }),
} satisfies Record<LiveKind, unknown>;

export interface ReviveLiveRequest {
  kind: LiveKind;
  graceSeconds: number;
  pageSize: number;
  maxRows: number;
  merchantId?: string;
}

/**
 * How far behind its watermark a sweep starts (issue 44, item 7): a row's created_at is its
 * transaction's start, so a transaction that commits late (a lock wait, a slow client) makes a
 * row appear behind a watermark that already passed its time. Rows looked at again cost a
 * no-op start of a workflow that exists (or a closed one never started again).
 */
export const WATERMARK_LOOKBACK_MS = 10 * 60_000;

const EPOCH: SweepCursor = { createdAt: new Date(0).toISOString(), id: '' };
const after = (a: SweepCursor, b: SweepCursor) =>
  a.createdAt > b.createdAt || (a.createdAt === b.createdAt && a.id > b.id);

/** How long the event log keeps an event (and its delivery attempts). */
export const EVENT_RETENTION_DAYS = 30;

export interface SweepOrphansRequest {
  kind: OrphanKind;
  graceSeconds: number;
  pageSize: number;
  maxRows: number;
  merchantId?: string;
}

export function createSweeperActivities(deps: ActivityDeps) {
  const { orm, starters } = deps;
  const connection = () => orm.em.getConnection();

  const loadWatermark = async (scope: string): Promise<SweepCursor | undefined> => {
    const rows: Array<{ last_created_at: Date; last_id: string }> = await connection().execute(
      'select last_created_at, last_id from sweep_watermarks where scope = ?',
      [scope],
    );
    const row = rows[0];
    return row ? { createdAt: new Date(row.last_created_at).toISOString(), id: row.last_id } : undefined;
  };

  /** Only ever forward: two sweeps at once (an operator's and the schedule's) cannot move it back. */
  const saveWatermark = (scope: string, cursor: SweepCursor) =>
    connection().execute(
      `insert into sweep_watermarks (scope, last_created_at, last_id, updated_at) values (?, ?, ?, now())
        on conflict (scope) do update set last_created_at = excluded.last_created_at, last_id = excluded.last_id,
          updated_at = excluded.updated_at
        where (sweep_watermarks.last_created_at, sweep_watermarks.last_id) < (excluded.last_created_at, excluded.last_id)`,
      [scope, cursor.createdAt, cursor.id],
    );

  async function sweep<Row extends CandidateRow>(kindSweep: OrphanKindSweep<Row>, req: SweepOrphansRequest) {
    const ctx = Context.current();
    const scope = req.merchantId ? `${req.kind}:${req.merchantId}` : req.kind;
    // A retried attempt resumes where the last one heartbeated (it may be past the watermark).
    const heartbeated = ctx.info.heartbeatDetails as SweepCursor | undefined;
    const saved = kindSweep.watermarked ? await loadWatermark(scope) : undefined;
    // Rows stamped before the watermark but committed after it passed are looked at again.
    const lookedBack = saved && {
      createdAt: new Date(Date.parse(saved.createdAt) - WATERMARK_LOOKBACK_MS).toISOString(),
      id: '',
    };
    let cursor = [heartbeated, lookedBack].reduce<SweepCursor>((max, c) => (c && after(c, max) ? c : max), EPOCH);
    const sql = kindSweep.candidates(req.merchantId !== undefined);
    let examined = 0;
    /** Rows past the watermark: what this run counts (a row looked at again is not counted twice). */
    let counted = 0;
    while (examined < req.maxRows) {
      const limit = Math.min(req.pageSize, req.maxRows - examined);
      const rows: Row[] = await connection().execute(sql, [
        cursor.createdAt,
        cursor.id,
        req.graceSeconds,
        ...(req.merchantId ? [req.merchantId] : []),
        limit,
      ]);
      for (const row of rows) {
        // Started, or closed: the record's own workflow settled or discarded it.
        await kindSweep.start(starters, row, deps);
        cursor = { createdAt: new Date(row.created_at).toISOString(), id: row.id };
        if (!saved || after(cursor, saved)) counted++;
        ctx.heartbeat(cursor);
      }
      examined += rows.length;
      if (rows.length > 0 && kindSweep.watermarked) await saveWatermark(scope, cursor);
      if (rows.length < limit) break;
    }
    return counted;
  }

  /**
   * The event log keeps events EVENT_RETENTION_DAYS (PRODUCT.md: at least 30 days): older ones
   * are deleted with their delivery attempts (cascade), oldest first, at most `limit` a run (the
   * schedule runs every minute); a sweep scoped to one merchant prunes only its events. The per-object sequence counters stay, so an object's numbers
   * never start again.
   */
  const pruneEvents = async (limit: number, merchantId?: string): Promise<number> => {
    const rows: unknown[] = await connection().execute(
      `delete from merchant_events where id in (
         select id from merchant_events where created_at < now() - make_interval(days => ?)
           ${merchantId ? 'and merchant_id = ?' : ''}
          order by created_at limit ?
       ) returning id`,
      [EVENT_RETENTION_DAYS, ...(merchantId ? [merchantId] : []), limit],
    );
    return rows.length;
  };

  /** The live pass's cursor: saved as it goes, back to the start once past the newest row. */
  const saveCursor = (scope: string, cursor: SweepCursor) =>
    connection().execute(
      `insert into sweep_watermarks (scope, last_created_at, last_id, updated_at) values (?, ?, ?, now())
        on conflict (scope) do update set last_created_at = excluded.last_created_at, last_id = excluded.last_id,
          updated_at = excluded.updated_at`,
      [scope, cursor.createdAt, cursor.id],
    );

  async function revive<Row extends CandidateRow>(kindSweep: LiveKindSweep<Row>, req: ReviveLiveRequest) {
    const ctx = Context.current();
    const scope = `live:${req.merchantId ? `${req.kind}:${req.merchantId}` : req.kind}`;
    const heartbeated = ctx.info.heartbeatDetails as { cursor: SweepCursor; revived: number } | undefined;
    let cursor = heartbeated?.cursor ?? (await loadWatermark(scope)) ?? EPOCH;
    let revived = heartbeated?.revived ?? 0;
    const sql = kindSweep.candidates(req.merchantId !== undefined);
    for (let examined = 0; examined < req.maxRows;) {
      const limit = Math.min(req.pageSize, req.maxRows - examined);
      const rows: Row[] = await connection().execute(sql, [
        cursor.createdAt,
        cursor.id,
        req.graceSeconds,
        ...(req.merchantId ? [req.merchantId] : []),
        limit,
      ]);
      for (const row of rows) {
        // Read again: a run that just settled the record and ended is no reason for a new one.
        const still: unknown[] = await connection().execute(kindSweep.stillLive, [row.id]);
        const answer = still.length > 0 ? await kindSweep.revive(starters, row, deps) : 'running';
        if (answer === 'started') {
          revived++;
          deps.logger.warn({ kind: req.kind, id: row.id }, 'live record without a running workflow: started one');
        } else if (answer === 'skipped') {
          deps.logger.error(
            { kind: req.kind, id: row.id },
            'live record without a running workflow, not resumable by the sweeper: an operator must look',
          );
        }
        cursor = { createdAt: new Date(row.created_at).toISOString(), id: row.id };
        ctx.heartbeat({ cursor, revived });
      }
      examined += rows.length;
      if (rows.length < limit) {
        cursor = EPOCH; // past the newest: the next run starts over
        break;
      }
    }
    await saveCursor(scope, cursor);
    return revived;
  }

  return {
    /**
     * Gives every live record of one kind whose workflow ended a new run (decision 0059); answers
     * how many it started.
     */
    async reviveLiveRecords(req: ReviveLiveRequest): Promise<number> {
      const kindSweep: LiveKindSweep<never> = liveKinds[req.kind];
      return revive(kindSweep, req);
    },

    /**
     * Gives the records of one kind left without a workflow theirs; answers how many it examined.
     * The schedule's pass over merchant events also prunes the event log (decision 0065).
     */
    async sweepOrphans(req: SweepOrphansRequest): Promise<number> {
      const kindSweep: OrphanKindSweep<never> = orphanKinds[req.kind];
      const examined = await sweep(kindSweep, req);
      if (req.kind === 'merchantEvents') await pruneEvents(req.maxRows, req.merchantId);
      return examined;
    },

    /** The superseded payments-only sweep (sweepOrphanPaymentsWorkflow): every candidate, no watermark. */
    async startOrphanPaymentWorkflows(olderThanSeconds: number, limit: number): Promise<number> {
      const rows: PaymentCandidate[] = await connection().execute(orphanKinds.payments.candidates(false), [
        EPOCH.createdAt,
        EPOCH.id,
        olderThanSeconds,
        limit,
      ]);
      for (const row of rows) await orphanKinds.payments.start(starters, row, deps);
      return rows.length;
    },
  };
}
