import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection, WithStartWorkflowOperation } from '@temporalio/client';
import { bundleWorkflowCode } from '@temporalio/worker';
import { Pool } from 'pg';
import {
  stackCores,
  cpuBetween,
  onTeardown,
  sampleCpu,
  say,
  sleep,
  spawnChild,
  waitFor,
  type Child,
  type CpuSample,
} from '../stack';
import { FLOOR_PAYMENTS_TABLE, FLOOR_REFUNDS_TABLE } from './activities';
import {
  floorChargeUpdate,
  floorPingUpdate,
  floorRefundUpdate,
  floorRefundWorkflow,
  floorTimerWorkflow,
  floorUpdateWorkflow,
  floorWorkWorkflow,
} from './workflows';

/**
 * The Temporal floor (issue 12): the bare Temporal scenarios the product's figures are divided
 * by, on the same Temporal server as the product, in the same run. A minimal workflow bundle
 * (bench/floor/workflows.ts, built once with bundleWorkflowCode) on its own task queue, run by
 * its own worker process (bench/floor/worker.ts, spawned like the product worker), with one no-op
 * local activity and no business work.
 *
 *   update-with-start: the client does Update-with-Start of floorUpdateWorkflow and waits for the
 *     Update's answer (one no-op local activity), as the token POST /payments does; loops of
 *     sequential calls, timed with performance.now() from the call to the answer.
 *   work floor (the bare floor plus a token payment's required work, written the cheapest way):
 *     the client commits the payment's row (one INSERT), then Update-with-Start of floorWorkWorkflow,
 *     whose one local activity marks the row sent, asks the provider sandbox and records the
 *     capture (bench/floor/activities.ts). The token POST lines' denominator: what any
 *     implementation of the product must do at the least, so the POST at 1.0x of it is perfect.
 *   refund work floor (the bare floor plus a refund's required work, written the cheapest way):
 *     on a payment the work floor charged first (1000 USD, captured at the sandbox), the client
 *     reserves the refund in ONE statement (the payment's row locked by the UPDATE that checks it is
 *     refundable, nothing in flight and the amount within what is left to refund, which is reading
 *     the payment and what was refunded; the refund row inserted from it), then Update-with-Start
 *     of floorRefundWorkflow, whose one local activity marks the refund sent and reads what the
 *     provider needs (one statement), asks the sandbox to refund (POST /v1/refunds, the refund's id
 *     as idempotency key and reference_id), and records the settlement on the refund and the
 *     payment's balance (one statement). One loop per payment, one refund in flight on each, as
 *     the product's refunds are measured. The refund lines' denominator.
 *     What neither work floor does, and why it is not required work here: authentication (the
 *     floors call Temporal directly, with no HTTP hop; the API's key check is an in-memory cache
 *     hit on every request of the bench: src/auth/authenticator.ts), a replay lookup by externalId
 *     (a fresh externalId on every request; the refund's primary key is its reference, so a replay
 *     would meet the key), outbox events (none without a callbackUrl, as in the bench: the product
 *     writes none either), and the answer's read-back (the Update answers the status).
 *   timer storm: N floorTimerWorkflow runs sleep until one common instant T, then each runs one
 *     no-op local activity and completes; charges/s = N / (T to the last close time, from the
 *     server's visibility records).
 */

export interface Floor {
  client: Client;
  taskQueue: string;
  worker: Child;
  runTag: string;
  /** The bench's pool for the work floor's inserts (when started with `work`). */
  pool?: Pool;
}

/** Which floor an Update-with-Start scenario measures: the bare floor, a payment's work or a refund's. */
export type FloorKind = 'bare' | 'work' | 'refund';

/** Where the work floor's rows and provider calls go. */
export interface WorkFloorOptions {
  databaseUrl: string;
  sandboxUrl: string;
  sandboxApiKey: string;
}

/** Bundles the floor's workflows once, spawns its worker and waits until an Update-with-Start is answered. */
export async function startFloor(opts: {
  temporalAddress: string;
  dir: string;
  logDir: string;
  /**
   * The worker's NODE_OPTIONS: the product worker's, so that both get the same heap, SDK cache and
   * workflow-thread preload (stack traces off: src/main/workflowThreads.ts).
   */
  nodeOptions?: string;
  /** Node flags for the worker process (those NODE_OPTIONS refuses, such as --cpu-prof). */
  nodeArgs?: string[];
  /** Enables the work floor: its table is created, and its worker gets a pool and the sandbox. */
  work?: WorkFloorOptions;
}): Promise<Floor> {
  const pool = opts.work ? new Pool({ connectionString: opts.work.databaseUrl, max: 10 }) : undefined;
  if (pool) {
    // pool.end() resolves before its connections have closed: one still closing when PostgreSQL
    // stops at teardown gets its shutdown notice as an error, which must not end the run.
    pool.on('error', () => undefined);
    onTeardown('closing the work floor pool', () => pool.end());
    await pool.query(`CREATE SCHEMA IF NOT EXISTS bench_floor;
      CREATE TABLE IF NOT EXISTS ${FLOOR_PAYMENTS_TABLE} (
        id text PRIMARY KEY, amount_minor bigint NOT NULL, currency text NOT NULL, status text NOT NULL,
        provider_payment_id text, provider_call_sent_at timestamptz,
        amount_refunded_minor bigint NOT NULL DEFAULT 0, amount_pending_refund_minor bigint NOT NULL DEFAULT 0,
        created_at timestamptz NOT NULL DEFAULT now(), updated_at timestamptz NOT NULL DEFAULT now());
      CREATE TABLE IF NOT EXISTS ${FLOOR_REFUNDS_TABLE} (
        id text PRIMARY KEY, payment_id text NOT NULL, amount_minor bigint NOT NULL, currency text NOT NULL,
        status text NOT NULL, provider_refund_id text, provider_call_sent_at timestamptz,
        created_at timestamptz NOT NULL DEFAULT now(), updated_at timestamptz NOT NULL DEFAULT now())`);
  }
  const { code } = await bundleWorkflowCode({
    workflowsPath: path.join(__dirname, 'workflows.ts'),
    logger: quietLogger,
  });
  const codePath = path.join(opts.dir, 'floor-workflow-bundle.js');
  fs.writeFileSync(codePath, code);
  const taskQueue = `bench-floor-${process.pid}`;
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    TEMPORAL_ADDRESS: opts.temporalAddress,
    FLOOR_TASK_QUEUE: taskQueue,
    FLOOR_BUNDLE_PATH: codePath,
    ...(opts.nodeOptions !== undefined ? { NODE_OPTIONS: opts.nodeOptions } : {}),
    ...(opts.work
      ? {
          FLOOR_DATABASE_URL: opts.work.databaseUrl,
          FLOOR_SANDBOX_URL: opts.work.sandboxUrl,
          FLOOR_SANDBOX_API_KEY: opts.work.sandboxApiKey,
        }
      : {}),
  };
  const worker = spawnChild('floor-worker', 'bench/floor/worker.ts', env, opts.logDir, opts.nodeArgs);
  const connection = await Connection.connect({ address: opts.temporalAddress });
  onTeardown('closing the floor client', () => connection.close());
  const floor: Floor = {
    client: new Client({ connection }),
    taskQueue,
    worker,
    runTag: `${Date.now().toString(36)}-${process.pid}`,
    ...(pool ? { pool } : {}),
  };
  await waitFor('the floor worker (a first Update-with-Start)', 60_000, async () => {
    const attempt = await timed('pong', () => pingOnce(floor, 5_000));
    return attempt.error ?? true;
  });
  return floor;
}

const nothing = () => {};
const quietLogger = {
  log: nothing,
  trace: nothing,
  debug: nothing,
  info: nothing,
  warn: nothing,
  error: (msg: string) => say(`  floor bundle: ${msg}`),
};

// ---------------------------------------------------------------------------------------------
// Update-with-Start

interface Attempt {
  ms: number;
  error?: string;
}

let seq = 0;

/** Times one call from its start to its answer; `expected` is the answer that counts as a success. */
async function timed(expected: string, call: () => Promise<string>): Promise<Attempt> {
  const started = performance.now();
  try {
    const answer = await call();
    const ms = performance.now() - started;
    return answer === expected ? { ms } : { ms, error: `unexpected answer ${JSON.stringify(answer)}` };
  } catch (err) {
    return { ms: performance.now() - started, error: (err as Error).message.slice(0, 200) };
  }
}

const withDeadline = <T>(floor: Floor, timeoutMs: number, send: () => Promise<T>) =>
  floor.client.withDeadline(Date.now() + timeoutMs, send);

/** The bare floor: Update-with-Start of a new floorUpdateWorkflow, answered by a no-op local activity. */
async function pingOnce(floor: Floor, timeoutMs: number): Promise<string> {
  const op = new WithStartWorkflowOperation(floorUpdateWorkflow, {
    workflowId: `floor-uws-${floor.runTag}-${++seq}`,
    taskQueue: floor.taskQueue,
    workflowIdConflictPolicy: 'USE_EXISTING',
  });
  return withDeadline(floor, timeoutMs, () =>
    floor.client.workflow.executeUpdateWithStart(floorPingUpdate, { startWorkflowOperation: op }),
  );
}

function workPool(floor: Floor): Pool {
  if (!floor.pool) throw new Error('the floor was started without `work`');
  return floor.pool;
}

/**
 * The work floor: the payment's row committed (one INSERT), then Update-with-Start of a new
 * floorWorkWorkflow that charges it. Answers the payment's status; `paymentId` is the row's id.
 */
async function chargeOnce(floor: Floor, timeoutMs: number, paymentId: string, amountMinor = 1234): Promise<string> {
  await workPool(floor).query(
    `INSERT INTO ${FLOOR_PAYMENTS_TABLE} (id, amount_minor, currency, status) VALUES ($1, $2, 'USD', 'processing')`,
    [paymentId, amountMinor],
  );
  const op = new WithStartWorkflowOperation(floorWorkWorkflow, {
    workflowId: `floor-work-${paymentId}`,
    taskQueue: floor.taskQueue,
    workflowIdConflictPolicy: 'USE_EXISTING',
    args: [paymentId],
  });
  return withDeadline(floor, timeoutMs, () =>
    floor.client.workflow.executeUpdateWithStart(floorChargeUpdate, { startWorkflowOperation: op }),
  );
}

/**
 * The refund work floor: the refund reserved and its row inserted in one statement (the UPDATE
 * takes the payment's row lock and checks it is refundable, with nothing in flight and the amount
 * within what is left; the INSERT happens only with it), then Update-with-Start of a new
 * floorRefundWorkflow that refunds it. Answers the refund's status.
 */
async function refundOnce(floor: Floor, timeoutMs: number, paymentId: string, amountMinor = 1): Promise<string> {
  const refundId = `floor-refund-${floor.runTag}-${++seq}`;
  const reserved = await workPool(floor).query(
    `WITH reserved AS (
       UPDATE ${FLOOR_PAYMENTS_TABLE} SET amount_pending_refund_minor = $3, updated_at = now()
        WHERE id = $2 AND status IN ('succeeded', 'partially_refunded') AND amount_pending_refund_minor = 0
          AND amount_refunded_minor + $3 <= amount_minor
       RETURNING id, currency
     )
     INSERT INTO ${FLOOR_REFUNDS_TABLE} (id, payment_id, amount_minor, currency, status)
     SELECT $1, id, $3, currency, 'pending' FROM reserved`,
    [refundId, paymentId, amountMinor],
  );
  if (reserved.rowCount !== 1) return `payment ${paymentId} not refundable`;
  const op = new WithStartWorkflowOperation(floorRefundWorkflow, {
    workflowId: `floor-refund-${refundId}`,
    taskQueue: floor.taskQueue,
    workflowIdConflictPolicy: 'USE_EXISTING',
    args: [refundId],
  });
  return withDeadline(floor, timeoutMs, () =>
    floor.client.workflow.executeUpdateWithStart(floorRefundUpdate, { startWorkflowOperation: op }),
  );
}

/** One call of a floor scenario by caller `caller`, timed from the call to the answer. */
function callOnce(floor: Floor, kind: FloorKind, timeoutMs: number, paymentIds: string[], caller: number) {
  switch (kind) {
    case 'bare':
      return timed('pong', () => pingOnce(floor, timeoutMs));
    case 'work':
      return timed('succeeded', () => chargeOnce(floor, timeoutMs, `floor-pay-${floor.runTag}-${++seq}`));
    case 'refund': {
      const paymentId = paymentIds[caller];
      if (!paymentId) throw new Error(`the refund work floor has no payment for caller ${caller}`);
      return timed('succeeded', () => refundOnce(floor, timeoutMs, paymentId));
    }
  }
}

/**
 * `count` payments of 1000 USD the refund work floor refunds, charged by the work floor (the
 * sandbox captured each): one refund loop runs on each, as the product's refunds do.
 */
export async function floorPaymentsToRefund(floor: Floor, count: number): Promise<string[]> {
  return Promise.all(
    Array.from({ length: count }, async () => {
      const paymentId = `floor-pay-${floor.runTag}-${++seq}`;
      const status = await chargeOnce(floor, 30_000, paymentId, 100_000);
      if (status !== 'succeeded') throw new Error(`floor payment to refund ${paymentId}: ${status}`);
      return paymentId;
    }),
  );
}

/**
 * `callers` loops of sequential calls until `untilMs` (performance.now()); a refund loop `i`
 * refunds `paymentIds[i]`.
 */
async function loops(floor: Floor, callers: number, untilMs: number, kind: FloorKind, paymentIds: string[]) {
  const attempts: Attempt[] = [];
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: callers }, async (_, caller) => {
      while (performance.now() < untilMs) attempts.push(await callOnce(floor, kind, 30_000, paymentIds, caller));
    }),
  );
  return { attempts, seconds: (performance.now() - t0) / 1000 };
}

/** Nearest-rank percentile of ascending values, to 0.1 ms. */
export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return 0;
  const rank = Math.min(sorted.length, Math.max(1, Math.ceil((p / 100) * sorted.length)));
  return Number(sorted[rank - 1]!.toFixed(1));
}

/** One floor scenario's figures, in the shape of bench/run.ts's rows (plus p95 and the error kinds). */
export interface UpdateWithStartFloor {
  name: string;
  method: string;
  path: string;
  connections: number;
  durationS: number;
  requestsPerSec: number;
  requestsTotal: number;
  latencyMs: { p50: number; p90: number; p95: number; p99: number; max: number; mean: number };
  status2xx: number;
  non2xx: number;
  errors: number;
  timeouts: number;
  statusCodes: Record<string, number>;
  errorKinds: Record<string, number>;
  cpuCores: Record<string, number>;
  stackCpuMsPerRequest: number;
  loadAverage1mBefore: number;
  warmupCalls: number;
}

const PATHS: Record<FloorKind, string> = {
  bare: 'floorUpdateWorkflow / floorPing',
  work: 'floorWorkWorkflow / floorCharge',
  refund: 'floorRefundWorkflow / floorRefund',
};

/**
 * `callers` concurrent loops of sequential Update-with-Start calls: `warmupS` thrown away, then
 * `durationS` measured (the product scenarios' warm-up and duration). The refund work floor's
 * loop `i` refunds `paymentIds[i]` (floorPaymentsToRefund).
 */
export async function measureUpdateWithStart(
  floor: Floor,
  name: string,
  callers: number,
  timing: { warmupS: number; durationS: number },
  kind: FloorKind = 'bare',
  paymentIds: string[] = [],
): Promise<UpdateWithStartFloor> {
  say(`\n${name}: ${callers} caller(s), ${timing.warmupS} s warm-up + ${timing.durationS} s...`);
  const warmup =
    timing.warmupS > 0
      ? await loops(floor, callers, performance.now() + timing.warmupS * 1000, kind, paymentIds)
      : { attempts: [] };
  const loadAverage1mBefore = Number(os.loadavg()[0]?.toFixed(2));
  const before = sampleCpu();
  const run = await loops(floor, callers, performance.now() + timing.durationS * 1000, kind, paymentIds);
  const after = sampleCpu();
  const cpuCores = cpuBetween(before, after, run.seconds);
  const ok = run.attempts.filter((a) => !a.error);
  const ms = ok.map((a) => a.ms).sort((a, b) => a - b);
  const errorKinds: Record<string, number> = {};
  for (const a of run.attempts) if (a.error) errorKinds[a.error] = (errorKinds[a.error] ?? 0) + 1;
  const count = run.attempts.length;
  const result: UpdateWithStartFloor = {
    name,
    method: 'Update-with-Start',
    path: PATHS[kind],
    connections: callers,
    durationS: Number(run.seconds.toFixed(2)),
    requestsPerSec: ok.length / run.seconds,
    requestsTotal: count,
    latencyMs: {
      p50: percentile(ms, 50),
      p90: percentile(ms, 90),
      p95: percentile(ms, 95),
      p99: percentile(ms, 99),
      max: percentile(ms, 100),
      mean: Number((ms.reduce((a, b) => a + b, 0) / Math.max(1, ms.length)).toFixed(1)),
    },
    status2xx: ok.length,
    non2xx: 0,
    errors: count - ok.length,
    timeouts: 0,
    statusCodes: {},
    errorKinds,
    cpuCores,
    stackCpuMsPerRequest: count > 0 ? Number(((stackCores(cpuCores) * run.seconds * 1000) / count).toFixed(2)) : 0,
    loadAverage1mBefore,
    warmupCalls: warmup.attempts.length,
  };
  say(
    `  ${ok.length} answers in ${result.durationS} s: ${result.requestsPerSec.toFixed(1)}/s, p50 ${result.latencyMs.p50} ms, ` +
      `p95 ${result.latencyMs.p95} ms, p99 ${result.latencyMs.p99} ms; errors ${result.errors} ` +
      `(warm-up: ${result.warmupCalls} calls)`,
  );
  for (const [kind, n] of Object.entries(errorKinds)) say(`    error x${n}: ${kind}`);
  return result;
}

// ---------------------------------------------------------------------------------------------
// Timer storm

export interface TimerStormFloor {
  n: number;
  started: number;
  startFailures: number;
  startSeconds: number;
  /** Seconds between the last start and T (negative: starting overran T). */
  secondsLeftBeforeT: number;
  dueAt: string;
  completed: number;
  complete: boolean;
  lastClose: string | null;
  /** T to the last close time (server clock, from visibility). */
  seconds: number | null;
  chargesPerSecond: number | null;
  /** T to each run's close, ms. */
  lagMs: { p50: number; p90: number; p99: number; max: number };
  cpu: { seconds: number; cores: Record<string, number>; stackCpuMsPerUnit: number };
}

/**
 * N floorTimerWorkflow runs started (`concurrency` starts in flight), all due at T = start +
 * `dueInS`; from T, the completed count is polled (visibility) until all N closed or `timeoutS`.
 */
export async function timerStorm(
  floor: Floor,
  opts: { n: number; dueInS: number; concurrency: number; timeoutS: number },
): Promise<TimerStormFloor> {
  const { client, taskQueue } = floor;
  const type = 'floorTimerWorkflow';
  const t0 = Date.now();
  const dueAt = t0 + opts.dueInS * 1000;
  say(
    `\nfloor: timer storm: ${opts.n} ${type} runs due together at T = start + ${opts.dueInS} s ` +
      `(${new Date(dueAt).toISOString()}), ${opts.concurrency} starts in flight...`,
  );
  let next = 0;
  let started = 0;
  const failures: string[] = [];
  await Promise.all(
    Array.from({ length: Math.min(opts.concurrency, opts.n) }, async () => {
      for (;;) {
        const i = next++;
        if (i >= opts.n) return;
        try {
          await client.workflow.start(floorTimerWorkflow, {
            workflowId: `floor-storm-${floor.runTag}-${i}`,
            taskQueue,
            args: [dueAt],
          });
          started++;
        } catch (err) {
          failures.push((err as Error).message);
        }
      }
    }),
  );
  const startSeconds = (Date.now() - t0) / 1000;
  const secondsLeftBeforeT = (dueAt - Date.now()) / 1000;
  say(
    `  ${started} started (${failures.length} failed) in ${startSeconds.toFixed(1)} s; ` +
      `${secondsLeftBeforeT.toFixed(1)} s left before T`,
  );
  if (failures[0]) say(`    first start failure: ${failures[0]}`);
  if (secondsLeftBeforeT < 0) say('  (starting overran T: the first timers fired while runs were still starting)');

  const query = `WorkflowType="${type}" AND TaskQueue="${taskQueue}"`;
  while (Date.now() < dueAt) await sleep(Math.min(500, dueAt - Date.now()));
  const cpu0: CpuSample = sampleCpu();
  let completed = 0;
  let lastPrint = Date.now();
  while (Date.now() - dueAt < opts.timeoutS * 1000) {
    completed = (await client.workflow.count(`${query} AND ExecutionStatus="Completed"`)).count;
    if (completed >= started) break;
    if (Date.now() - lastPrint >= 10_000) {
      lastPrint = Date.now();
      say(`  ${completed}/${started} completed at T+${((Date.now() - dueAt) / 1000).toFixed(0)} s`);
    }
    await sleep(500);
  }
  const cpuSeconds = (Date.now() - dueAt) / 1000;
  const cpu1 = sampleCpu();

  // Every run's close time, as the server recorded it.
  const lags: number[] = [];
  let lastClose = 0;
  for await (const wf of client.workflow.list({ query: `${query} AND ExecutionStatus="Completed"` })) {
    const closed = wf.closeTime?.getTime();
    if (closed === undefined) continue;
    lags.push(closed - dueAt);
    lastClose = Math.max(lastClose, closed);
  }
  lags.sort((a, b) => a - b);
  const complete = started === opts.n && lags.length >= started;
  const seconds = complete ? Number(((lastClose - dueAt) / 1000).toFixed(1)) : null;
  const cores = cpuBetween(cpu0, cpu1, cpuSeconds);
  const result: TimerStormFloor = {
    n: opts.n,
    started,
    startFailures: failures.length,
    startSeconds: Number(startSeconds.toFixed(1)),
    secondsLeftBeforeT: Number(secondsLeftBeforeT.toFixed(1)),
    dueAt: new Date(dueAt).toISOString(),
    completed: lags.length,
    complete,
    lastClose: lastClose ? new Date(lastClose).toISOString() : null,
    seconds,
    chargesPerSecond: seconds ? Number((lags.length / Math.max(seconds, 0.001)).toFixed(1)) : null,
    lagMs: {
      p50: Math.round(percentile(lags, 50)),
      p90: Math.round(percentile(lags, 90)),
      p99: Math.round(percentile(lags, 99)),
      max: Math.round(percentile(lags, 100)),
    },
    cpu: {
      seconds: Number(cpuSeconds.toFixed(1)),
      cores,
      stackCpuMsPerUnit:
        lags.length > 0 ? Number(((stackCores(cores) * cpuSeconds * 1000) / lags.length).toFixed(1)) : 0,
    },
  };
  say(
    `  ${result.completed}/${opts.n} completed in ${result.seconds ?? '-'} s from T ` +
      `(${result.chargesPerSecond ?? '-'} charges/s; T-to-close p50 ${result.lagMs.p50} ms, ` +
      `p99 ${result.lagMs.p99} ms)${complete ? '' : ' -- INCOMPLETE'}`,
  );
  return result;
}
