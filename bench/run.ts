import os from 'node:os';
import fs from 'node:fs';
import path from 'node:path';
import autocannon from 'autocannon';
import { Client, Connection } from '@temporalio/client';
import { temporal as proto } from '@temporalio/proto';
import { envSchema } from '../src/config';
import { paymentWorkflowId } from '../workflows/paymentApi';
import { refundWorkflowId } from '../workflows/refundApi';
import { measureUpdateWithStart, startFloor, type UpdateWithStartFloor } from './floor/scenarios';
import { evaluateTargets, formatTargets, type Figure } from './targets';
import {
  OUT_DIR,
  ROOT,
  STACK_GROUPS,
  abort,
  children,
  cpuBetween,
  envInt,
  formatCpu,
  freePorts,
  getOk,
  beginRun,
  buildForBench,
  ledger,
  sampleCpu,
  say,
  settledLedger,
  sleep,
  spawnChild,
  startServices,
  tail,
  teardown,
  waitFor,
  RUN_SOURCES,
  workerEnv,
  workerNodeArgs,
  type LedgerEntry,
} from './stack';

/**
 * `npm run bench`: a throw-away stack (embedded PostgreSQL, in-memory Temporal dev server, the
 * real sandbox, API and worker processes), then autocannon scenarios in one run:
 *   1. baseline      GET /payments/:id on bench/baseline.ts (bare Koa + one indexed SELECT)
 *   2. product GET   GET /payments/{id} on the API, with Basic auth
 *   3. product POST  token-flow POST /payments (cardToken tok_success), a fresh externalId each
 * Prints a table and writes bench/.out/latest.json. Everything is stopped at the end, even on error.
 *
 * A fourth, diagnostic run repeats the POST with one connection (its latency without queueing).
 *
 * The Temporal floor (bench/floor/): Update-with-Start of a minimal workflow answering from one
 * no-op local activity, on the same Temporal server, by its own worker process on its own task
 * queue, at the concurrency of the product scenario it is the floor of. Every product figure is
 * also printed as a ratio to its floor (GET: the baseline; POST and refunds: the Update-with-Start
 * floor at the same concurrency), and a final `Targets` block has one line per target of issue 12
 * (bench/targets.ts), each ending in `met` or `MISSED`.
 *
 * The work floor (bench/floor/, not a denominator): the same Update-with-Start, but the client first
 * commits the payment's row and the local activity marks it sent, asks the sandbox and records the
 * capture, written the cheapest way. A `Bounds` block then says what it reaches against the floor
 * (the best any implementation of the POST or the refund could show on this stack) and what the
 * product reaches against it.
 *
 * The refunds are not autocannon: every request must be a terminal answer, and only one refund may
 * be in flight per payment. P token-flow payments of 1000 USD, P concurrent loops each doing
 * sequential POST /payments/{id}/refund of 0.01 on its own payment (a fresh externalId each), each
 * timed from send to answer with performance.now(); then the same with one loop (P = 1). The
 * sandbox ledger and each payment's amountRefunded are checked.
 *
 * Every ratio compares figures of the same moment: each product scenario and its floor (and the
 * work floor, and the GET without limits) are measured as one group, in BENCH_ROUNDS mirrored
 * rounds (floor, product, then product, floor, ...), each arm a slice of BENCH_DURATION_S, and each
 * arm's slices are combined. The machine's speed drifts by tens of percent within minutes, and the
 * dev server slows as finished runs pile up in its memory (bench/RESULTS.md): in mirrored order a
 * steady drift weighs on every arm alike. Groups: GET (baseline, product, product without limits),
 * token POST at 10 (floor, work floor, product), at 1 (the same), refunds at 10 (floor, product),
 * at 1 (the same).
 *
 * Knobs (env): BENCH_DURATION_S (10: one slice), BENCH_WARMUP_S (3: before an arm's first slice;
 * 1 s before its others), BENCH_ROUNDS (2), BENCH_GET_CONNECTIONS (20), BENCH_POST_CONNECTIONS (10),
 * BENCH_SERIAL_POST (1), BENCH_CPU_PROF (0), BENCH_REFUNDS (1), BENCH_REFUND_PARALLEL (10),
 * BENCH_SERIAL_REFUNDS (1; 0 skips the one-loop refunds), BENCH_REFUNDS_FIRST (0; 1 measures the
 * refund groups before the POST groups), BENCH_FLOOR (1; 0 skips the floor, and
 * its target lines are then MISSED), BENCH_WORK_FLOOR (1; 0 skips the work floor and its Bounds
 * block), BENCH_RATE_LIMIT (10000: the API's RATE_LIMIT_PER_SECOND; 0 off), BENCH_GET_UNLIMITED
 * (1; 0 skips the GET without rate limits), BENCH_TEMPORAL (dev; server: the real Temporal server
 * on PostgreSQL, see bench/stack.ts), BENCH_TEMPORAL_METRICS_PORT (the dev server's /metrics port,
 * bench/stack.ts), BENCH_SOURCES (0; 1 runs the sources through tsx, not the production build:
 * bench/stack.ts).
 */

const DURATION_S = envInt('BENCH_DURATION_S', 10);
const WARMUP_S = envInt('BENCH_WARMUP_S', 3, 0);
/** Before an arm's later slices: the processes are warm; the other arm's last requests drain. */
const SETTLE_S = Math.min(WARMUP_S, 1);
/** Mirrored rounds per group: 2 is one arm order and its mirror, each arm measured twice. */
const ROUNDS = envInt('BENCH_ROUNDS', 2);
// 2 cores are shared by autocannon, the API (one event loop), PostgreSQL and, for POST, the worker,
// Temporal and the sandbox. 20 connections keep both pools of 10 busy with a request queued behind
// each, which saturates a single Node process; more would only add queueing latency, not throughput.
const GET_CONNECTIONS = envInt('BENCH_GET_CONNECTIONS', 20);
const POST_CONNECTIONS = envInt('BENCH_POST_CONNECTIONS', 10);
/** BENCH_SERIAL_POST=0 skips the diagnostic one-connection POST run. */
const SERIAL_POST = process.env.BENCH_SERIAL_POST !== '0';
/** BENCH_CPU_PROF=1 runs the API, worker, sandbox and floor worker with --cpu-prof (into bench/.out/profiles); numbers then suffer. */
const CPU_PROF = process.env.BENCH_CPU_PROF === '1';
/** BENCH_REFUNDS=0 skips the refund scenarios. */
const REFUNDS = process.env.BENCH_REFUNDS !== '0';
/** Concurrent refund loops, each on its own payment (one refund in flight per payment). */
const REFUND_PARALLEL = envInt('BENCH_REFUND_PARALLEL', 10);
/** BENCH_SERIAL_REFUNDS=0 skips the one-loop refunds (their latency without queueing). */
const SERIAL_REFUNDS = process.env.BENCH_SERIAL_REFUNDS !== '0';
/** BENCH_REFUNDS_FIRST=1 measures the refund groups before the POST groups. */
const REFUNDS_FIRST = process.env.BENCH_REFUNDS_FIRST === '1';
const REFUND_PAYMENT_AMOUNT = 1000;
const REFUND_AMOUNT = 0.01;
/**
 * Rate limiting is ON in the API (PRODUCT.md, "Rate limits"), with a per-key limit above what the
 * GET scenario sends (2 cores give ~2-4k req/s), so every request goes through the limiter (its
 * leases included: about 20 per second at a key's full rate) and none is refused: the figure is
 * what the limiter costs. BENCH_RATE_LIMIT sets RATE_LIMIT_PER_SECOND (burst twice that); 0 turns
 * limiting off. BENCH_GET_UNLIMITED=0 skips the diagnostic GET on a second API process without
 * limits (the limiter's cost measured in the same run).
 */
const RATE_LIMIT = envInt('BENCH_RATE_LIMIT', 10_000, 0);
const GET_UNLIMITED = RATE_LIMIT > 0 && process.env.BENCH_GET_UNLIMITED !== '0';
/** How the API, worker, sandbox, baseline and floor worker run (bench/stack.ts, buildForBench). */
const PROCESSES = RUN_SOURCES ? 'the sources through tsx (BENCH_SOURCES=1)' : 'the production build (tsc, bundle file)';
/** BENCH_FLOOR=0 skips the Temporal floor scenarios. */
const FLOOR = process.env.BENCH_FLOOR !== '0';
/** BENCH_WORK_FLOOR=0 skips the work floor (a token payment's required work on the floor's shape). */
const WORK_FLOOR = FLOOR && process.env.BENCH_WORK_FLOOR !== '0';
/** The floor's callers: the POST's connections, then one. */
const FLOOR_CALLERS = POST_CONNECTIONS;

/** Slices the run measures: an arm per scenario and floor, ROUNDS slices each. */
const SLICES =
  ROUNDS *
  (2 +
    (GET_UNLIMITED ? 1 : 0) +
    (1 + (SERIAL_POST ? 1 : 0)) * (1 + (FLOOR ? 1 : 0) + (WORK_FLOOR ? 1 : 0)) +
    (REFUNDS ? (1 + (SERIAL_REFUNDS ? 1 : 0)) * (1 + (FLOOR ? 1 : 0)) : 0));
/** The watchdog: start-up, checks and histories ~3 min, then every slice with its warm-up, twice over. */
const RUN_TIMEOUT_MS = 180_000 + SLICES * 2 * (WARMUP_S + DURATION_S) * 1000;

/**
 * The API, worker and sandbox, with --cpu-prof when BENCH_CPU_PROF=1 (never the baseline); the
 * worker with the product's Node flags (WORKER_NODE_ARGS, compiled with the build) and bundle.
 */
function spawnProcess(name: string, script: string, env: NodeJS.ProcessEnv, logDir: string) {
  const profile =
    CPU_PROF && name !== 'baseline' ? ['--cpu-prof', '--cpu-prof-dir', path.join(OUT_DIR, 'profiles', name)] : [];
  if (name !== 'worker') return spawnChild(name, script, env, logDir, profile);
  return spawnChild(name, script, { ...env, ...workerEnv() }, logDir, [...workerNodeArgs(), ...profile]);
}

// ---------------------------------------------------------------------------------------------
// autocannon

function cannon(opts: autocannon.Options): Promise<autocannon.Result> {
  return new Promise((resolve, reject) => {
    autocannon(opts, (err, result) => (err ? reject(err) : resolve(result)));
  });
}

interface ScenarioResult {
  name: string;
  method: string;
  path: string;
  connections: number;
  durationS: number;
  requestsPerSec: number;
  requestsTotal: number;
  latencyMs: { p50: number; p90: number; p99: number; max: number; mean: number };
  status2xx: number;
  non2xx: number;
  errors: number;
  timeouts: number;
  statusCodes: Record<string, number>;
  cpuCores: Record<string, number>;
  /** CPU time the stack (every process but autocannon) spent per answered request. */
  stackCpuMsPerRequest: number;
  loadAverage1mBefore: number;
  /** A combined row's slices (`combine`), in the order they were measured. */
  slices?: Array<{ requestsPerSec: number; p50: number; durationS: number }>;
}

async function measure(
  name: string,
  opts: autocannon.Options & { url: string },
  hooks: { beforeMeasure?: () => void | Promise<void> } = {},
  warmupS = WARMUP_S,
): Promise<ScenarioResult> {
  say(`\n${name}: ${opts.connections} connections, ${warmupS} s warm-up + ${DURATION_S} s...`);
  if (warmupS > 0) await cannon({ ...opts, duration: warmupS });
  await hooks.beforeMeasure?.();
  const loadAverage1mBefore = Number(os.loadavg()[0]?.toFixed(2));
  const before = sampleCpu();
  const t0 = process.hrtime.bigint();
  const r = await cannon({ ...opts, duration: DURATION_S });
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
  const after = sampleCpu();
  const cpuCores = cpuBetween(before, after, seconds);
  const stackCores = Object.entries(cpuCores)
    .filter(([g]) => STACK_GROUPS.includes(g))
    .reduce((sum, [, c]) => sum + c, 0);
  const statusCodes: Record<string, number> = {};
  for (const [code, { count }] of Object.entries(r.statusCodeStats ?? {})) statusCodes[code] = count ?? 0;
  const result: ScenarioResult = {
    name,
    method: opts.method ?? 'GET',
    path: new URL(opts.url).pathname,
    connections: opts.connections ?? 10,
    durationS: r.duration,
    requestsPerSec: r.requests.average,
    requestsTotal: r.requests.total,
    latencyMs: {
      p50: r.latency.p50,
      p90: r.latency.p90,
      p99: r.latency.p99,
      max: r.latency.max,
      mean: r.latency.mean,
    },
    status2xx: r['2xx'],
    non2xx: r.non2xx,
    errors: r.errors,
    timeouts: r.timeouts,
    statusCodes,
    cpuCores,
    stackCpuMsPerRequest:
      r.requests.total > 0 ? Number(((stackCores * seconds * 1000) / r.requests.total).toFixed(2)) : 0,
    loadAverage1mBefore,
  };
  say(
    `  ${result.requestsPerSec.toFixed(0)} req/s, p50 ${result.latencyMs.p50} ms, p99 ${result.latencyMs.p99} ms, ` +
      `2xx ${result.status2xx}, non-2xx ${result.non2xx}, errors ${result.errors}`,
  );
  say(`  CPU (cores): ${formatCpu(result.cpuCores)}; stack CPU per request ${result.stackCpuMsPerRequest} ms`);
  return result;
}

// ---------------------------------------------------------------------------------------------
// Groups measured in mirrored rounds, and their slices combined

/**
 * Measures each arm ROUNDS times, in mirrored rounds (arms in order, then reversed, ...), so that a
 * drift of the machine or of Temporal's state during the group weighs on every arm alike. An arm
 * gets the full warm-up before its first slice and SETTLE_S before the others. Answers each arm's
 * slices, in the arms' order.
 */
async function mirrored<T>(arms: Array<(warmupS: number) => Promise<T>>): Promise<T[][]> {
  const slices = arms.map((): T[] => []);
  for (let round = 0; round < ROUNDS; round++) {
    const order = arms.map((_, i) => (round % 2 === 0 ? i : arms.length - 1 - i));
    for (const i of order) slices[i]!.push(await arms[i]!(slices[i]!.length === 0 ? WARMUP_S : SETTLE_S));
  }
  return slices;
}

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};
const sum = (values: number[]) => values.reduce((a, b) => a + b, 0);

/**
 * One row from an arm's slices: counts added up, throughput over the whole measured time (each
 * slice's rate weighted by its length), CPU cores weighted the same way, CPU per request over all
 * requests, and each latency percentile as the median of the slices' (the mean of two), max the
 * largest. Each slice's rate and p50 are kept in `slices`.
 */
function combine<T extends ScenarioResult>(slices: T[]): T {
  const first = slices[0]!;
  if (slices.length === 1) return first;
  const seconds = sum(slices.map((r) => r.durationS));
  const weighted = (pick: (r: T) => number) => sum(slices.map((r) => pick(r) * r.durationS)) / seconds;
  const requests = sum(slices.map((r) => r.requestsTotal));
  const latency = (key: keyof T['latencyMs']) =>
    Number(median(slices.map((r) => (r.latencyMs as Record<string, number>)[key as string] ?? 0)).toFixed(1));
  const statusCodes: Record<string, number> = {};
  for (const r of slices)
    for (const [code, n] of Object.entries(r.statusCodes)) statusCodes[code] = (statusCodes[code] ?? 0) + n;
  const groups = new Set(slices.flatMap((r) => Object.keys(r.cpuCores)));
  return {
    ...first,
    durationS: Number(seconds.toFixed(2)),
    requestsPerSec: weighted((r) => r.requestsPerSec),
    requestsTotal: requests,
    latencyMs: {
      ...Object.fromEntries(Object.keys(first.latencyMs).map((k) => [k, latency(k as keyof T['latencyMs'])])),
      max: Math.max(...slices.map((r) => r.latencyMs.max)),
      mean: Number(weighted((r) => r.latencyMs.mean).toFixed(1)),
    },
    status2xx: sum(slices.map((r) => r.status2xx)),
    non2xx: sum(slices.map((r) => r.non2xx)),
    errors: sum(slices.map((r) => r.errors)),
    timeouts: sum(slices.map((r) => r.timeouts)),
    statusCodes,
    cpuCores: Object.fromEntries([...groups].map((g) => [g, Number(weighted((r) => r.cpuCores[g] ?? 0).toFixed(2))])),
    stackCpuMsPerRequest:
      requests > 0
        ? Number((sum(slices.map((r) => r.stackCpuMsPerRequest * r.requestsTotal)) / requests).toFixed(2))
        : 0,
    slices: slices.map((r) => ({
      requestsPerSec: Number(r.requestsPerSec.toFixed(1)),
      p50: r.latencyMs.p50,
      durationS: r.durationS,
    })),
  };
}

// ---------------------------------------------------------------------------------------------
// Temporal history

/**
 * One workflow's history as the Temporal server recorded it: event types with their offset from
 * the start in ms, and counts of workflow and activity tasks (server round trips).
 */
async function workflowHistory(address: string, workflowId: string) {
  const connection = await Connection.connect({ address });
  try {
    const client = new Client({ connection });
    const history = await client.workflow.getHandle(workflowId).fetchHistory();
    const events = history.events ?? [];
    const at = (e: (typeof events)[number]) =>
      Number(e.eventTime?.seconds ?? 0) * 1000 + Math.floor((e.eventTime?.nanos ?? 0) / 1e6);
    const t0 = events[0] ? at(events[0]) : 0;
    const name = (e: (typeof events)[number]) =>
      (proto.api.enums.v1.EventType[e.eventType ?? 0] ?? String(e.eventType)).replace(/^EVENT_TYPE_/, '');
    const timeline = events.map((e) => `${name(e)} +${at(e) - t0}`);
    const count = (type: string) => events.filter((e) => name(e) === type).length;
    return {
      workflowId,
      events: events.length,
      workflowTasks: count('WORKFLOW_TASK_COMPLETED'),
      activities: count('ACTIVITY_TASK_SCHEDULED'),
      activityTypes: events
        .filter((e) => name(e) === 'ACTIVITY_TASK_SCHEDULED')
        .map((e) => e.activityTaskScheduledEventAttributes?.activityType?.name ?? '?'),
      updateCompletedAtMs: (() => {
        const e = events.find((x) => name(x) === 'WORKFLOW_EXECUTION_UPDATE_COMPLETED');
        return e ? at(e) - t0 : null;
      })(),
      totalMs: events.length ? at(events[events.length - 1]!) - t0 : 0,
      timeline,
    };
  } finally {
    await connection.close();
  }
}

// ---------------------------------------------------------------------------------------------
// Refunds: plain fetch loops (undici keeps the connections alive), one refund in flight per payment

interface RefundAttempt {
  paymentId: string;
  externalId: string;
  /** Send to answer (body read), performance.now(). */
  ms: number;
  /** HTTP status; 0 when no answer came (network error, client timeout). */
  status: number;
  refundId?: string;
  refundStatus?: string;
  /** Set unless the answer was 200 with a `succeeded` refund. */
  error?: string;
}

const REFUND_CLIENT_TIMEOUT_MS = 30_000;

async function refundOnce(
  apiUrl: string,
  headers: Record<string, string>,
  paymentId: string,
  externalId: string,
): Promise<RefundAttempt> {
  const body = JSON.stringify({ externalId, amount: REFUND_AMOUNT });
  const started = performance.now();
  try {
    const res = await fetch(`${apiUrl}/payments/${paymentId}/refund`, {
      method: 'POST',
      headers,
      body,
      signal: AbortSignal.timeout(REFUND_CLIENT_TIMEOUT_MS),
    });
    const text = await res.text();
    const ms = performance.now() - started;
    let parsed: { id?: string; status?: string; error?: { code?: string } } = {};
    try {
      parsed = JSON.parse(text) as typeof parsed;
    } catch {
      // reported below as the raw body
    }
    const ok = res.status === 200 && parsed.status === 'succeeded';
    return {
      paymentId,
      externalId,
      ms,
      status: res.status,
      refundId: parsed.id,
      refundStatus: parsed.status,
      error: ok ? undefined : `${res.status} ${parsed.status ?? parsed.error?.code ?? text.slice(0, 200)}`,
    };
  } catch (err) {
    return { paymentId, externalId, ms: performance.now() - started, status: 0, error: (err as Error).message };
  }
}

/**
 * One loop per payment, each sending its next refund only once the previous one is answered,
 * until `untilMs` (performance.now()); a refund sent before it is waited for.
 */
async function refundLoops(
  send: (paymentId: string) => Promise<RefundAttempt>,
  paymentIds: string[],
  untilMs: number,
): Promise<{ attempts: RefundAttempt[]; seconds: number }> {
  const attempts: RefundAttempt[] = [];
  const t0 = performance.now();
  await Promise.all(
    paymentIds.map(async (paymentId) => {
      while (performance.now() < untilMs) attempts.push(await send(paymentId));
    }),
  );
  return { attempts, seconds: (performance.now() - t0) / 1000 };
}

/** Nearest-rank percentile of ascending values, to 0.1 ms. */
function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return 0;
  const rank = Math.min(sorted.length, Math.max(1, Math.ceil((p / 100) * sorted.length)));
  return Number(sorted[rank - 1]!.toFixed(1));
}

/** Major units to integer cents, exactly (USD). */
const cents = (major: number) => Math.round(major * 100);

// ---------------------------------------------------------------------------------------------

async function main(): Promise<void> {
  const { startedAt, git, machine, watchdog } = beginRun(RUN_TIMEOUT_MS);
  if (machine.loadAverage1mAtStart > machine.cpuCount / 2) {
    say('  (the machine is busy with other work: numbers will be lower; see "outside this benchmark" below)');
  }

  const [pgPort, temporalPort, apiPort, sandboxPort, baselinePort, unlimitedPort] = (await freePorts(6)) as [
    number,
    number,
    number,
    number,
    number,
    number,
  ];

  const t0 = Date.now();
  // The production build (unless BENCH_SOURCES=1) is made while the services start.
  const [{ dir, logDir, pg, temporal, temporalServer, merchantId, basic, postgresVersion }] = await Promise.all([
    startServices({ pgPort, temporalPort }),
    buildForBench(),
  ]);

  const apiUrl = `http://127.0.0.1:${apiPort}`;
  const sandboxUrl = `http://127.0.0.1:${sandboxPort}`;
  const baselineUrl = `http://127.0.0.1:${baselinePort}`;
  const childEnv: NodeJS.ProcessEnv = {
    ...process.env,
    DATABASE_URL: pg.databaseUrl,
    DATABASE_POOL_MAX: '10', // the same pool size as the baseline's
    TEMPORAL_ADDRESS: temporal.address,
    PORT: String(apiPort),
    SANDBOX_PORT: String(sandboxPort),
    SANDBOX_URL: sandboxUrl,
    TEMPORAL_TASK_QUEUE: `bench-${process.pid}`,
    // Per-request info logs would be part of what is measured; warn keeps errors visible.
    LOG_LEVEL: 'warn',
    DATA_DIR: dir,
    RATE_LIMIT_PER_SECOND: String(RATE_LIMIT),
    RATE_LIMIT_BURST: String(RATE_LIMIT * 2),
  };
  spawnProcess('sandbox', 'dev/sandbox/main.ts', childEnv, logDir);
  spawnProcess('api', 'src/main/api.ts', childEnv, logDir);
  spawnProcess('worker', 'src/main/worker.ts', childEnv, logDir);
  const unlimitedUrl = `http://127.0.0.1:${unlimitedPort}`;
  if (GET_UNLIMITED) {
    spawnProcess(
      'api-unlimited',
      'src/main/api.ts',
      { ...childEnv, PORT: String(unlimitedPort), RATE_LIMIT_PER_SECOND: '0', RATE_LIMIT_BURST: '0' },
      logDir,
    );
  }
  spawnProcess(
    'baseline',
    'bench/baseline.ts',
    { ...process.env, DATABASE_URL: pg.databaseUrl, PORT: String(baselinePort), BENCH_MERCHANT_ID: merchantId },
    logDir,
  );

  // The floor's bundle is built here, once, while the product processes start.
  const floor = FLOOR
    ? await startFloor({
        temporalAddress: temporal.address,
        dir,
        logDir,
        // The product worker's Node flags, and its profile with theirs.
        nodeArgs: [
          ...workerNodeArgs(),
          ...(CPU_PROF ? ['--cpu-prof', '--cpu-prof-dir', path.join(OUT_DIR, 'profiles', 'floor-worker')] : []),
        ],
        ...(WORK_FLOOR
          ? {
              work: {
                databaseUrl: pg.databaseUrl,
                sandboxUrl,
                sandboxApiKey: envSchema.shape.SANDBOX_API_KEY.parse(process.env.SANDBOX_API_KEY),
              },
            }
          : {}),
      })
    : undefined;

  await waitFor('the API (/readyz)', 60_000, () => getOk(`${apiUrl}/readyz`));
  if (GET_UNLIMITED) await waitFor('the API without limits', 60_000, () => getOk(`${unlimitedUrl}/readyz`));
  await waitFor('the sandbox', 30_000, () => getOk(`${sandboxUrl}/_admin/faults`));
  await waitFor('the baseline', 30_000, () => getOk(`${baselineUrl}/healthz`));
  // The sandbox answers instantly: no faults, no latency.
  const faults = await fetch(`${sandboxUrl}/_admin/faults`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: '{}',
  }).then((r) => r.json());

  const runTag = `${Date.now().toString(36)}-${process.pid}`;
  let seq = 0;
  const paymentBody = (amount = 12.34) =>
    JSON.stringify({
      amount,
      currency: 'USD',
      externalId: `bench-${runTag}-${++seq}`,
      customer: { email: 'bench@example.com' },
      cardToken: 'tok_success',
    });
  const postHeaders = { authorization: basic, 'content-type': 'application/json' };

  // A first token-flow payment proves the worker polls and the sandbox captures; GET reads it.
  let paymentId = '';
  await waitFor('a first token-flow POST /payments', 90_000, async () => {
    const res = await fetch(`${apiUrl}/payments`, {
      method: 'POST',
      headers: postHeaders,
      body: paymentBody(),
      signal: AbortSignal.timeout(10_000),
    });
    const body = (await res.json()) as { id?: string; status?: string };
    if (res.ok && body.status === 'succeeded' && body.id) {
      paymentId = body.id;
      return true;
    }
    return `${res.status} ${JSON.stringify(body).slice(0, 300)}`;
  });
  await waitFor('product GET', 10_000, () => getOk(`${apiUrl}/payments/${paymentId}`, { authorization: basic }));
  await waitFor('baseline GET', 10_000, () => getOk(`${baselineUrl}/payments/${paymentId}`));
  const readyS = (Date.now() - t0) / 1000;
  say(
    `Stack ready in ${readyS.toFixed(1)} s (PostgreSQL ${postgresVersion}, Temporal ${temporalServer} at ${temporal.address}; processes: ${PROCESSES}).`,
  );
  say(`Sandbox faults: ${JSON.stringify(faults)}`);

  // 1-2. The GET group: the baseline, the product's GET, and the diagnostic: the same GET on an
  // API process without rate limits, for the limiter's cost.
  const getArms = [
    (warmupS: number) =>
      measure(
        'baseline GET /payments/:id (bare Koa + pg)',
        { url: `${baselineUrl}/payments/${paymentId}`, connections: GET_CONNECTIONS },
        {},
        warmupS,
      ),
    (warmupS: number) =>
      measure(
        'product GET /payments/{id}',
        { url: `${apiUrl}/payments/${paymentId}`, connections: GET_CONNECTIONS, headers: { authorization: basic } },
        {},
        warmupS,
      ),
    ...(GET_UNLIMITED
      ? [
          (warmupS: number) =>
            measure(
              'product GET /payments/{id}, rate limiting off',
              {
                url: `${unlimitedUrl}/payments/${paymentId}`,
                connections: GET_CONNECTIONS,
                headers: { authorization: basic },
              },
              {},
              warmupS,
            ),
        ]
      : []),
  ];
  const [baselineSlices, getSlices, unlimitedSlices] = await mirrored(getArms);
  const baseline = combine(baselineSlices!);
  const productGet = combine(getSlices!);
  const productGetUnlimited = unlimitedSlices ? combine(unlimitedSlices) : undefined;

  /** A floor arm: Update-with-Start loops at `callers`, named for the group it is measured in. */
  const floorArm = (name: string, callers: number, kind: 'bare' | 'work' = 'bare') =>
    floor
      ? [(warmupS: number) => measureUpdateWithStart(floor, name, callers, { warmupS, durationS: DURATION_S }, kind)]
      : [];
  /** The token POST's floor arms: the floor, and the work floor unless BENCH_WORK_FLOOR=0. */
  const postFloorArms = (callers: number) => [
    ...floorArm(`floor: update-with-start${callers === 1 ? ', 1 caller' : ''} (beside the token POST)`, callers),
    ...(WORK_FLOOR
      ? floorArm(`work floor: a payment's required work${callers === 1 ? ', 1 caller' : ''}`, callers, 'work')
      : []),
  ];

  // 3. Product token-flow POST; every 2xx answer's payment id is kept for the ledger check.
  const postScenario = async (name: string, connections: number, warmupS: number) => {
    let collecting = false;
    const answered: string[] = [];
    let otherBody = 0;
    let ledgerStart = 0;
    const result = await measure(
      name,
      {
        url: `${apiUrl}/payments`,
        connections,
        method: 'POST',
        headers: postHeaders,
        requests: [
          {
            method: 'POST',
            setupRequest: (req) => ({ ...req, body: paymentBody() }),
            onResponse: (status, body) => {
              if (!collecting || status < 200 || status >= 300) return;
              try {
                const parsed = JSON.parse(body) as { id?: string; status?: string };
                if (parsed.id && parsed.status === 'succeeded') answered.push(parsed.id);
                else otherBody++;
              } catch {
                otherBody++;
              }
            },
          },
        ],
      },
      {
        beforeMeasure: async () => {
          // Warm-up payments still in flight settle first, so the measured run starts at a known ledger index.
          ledgerStart = (await settledLedger(sandboxUrl)).length;
          collecting = true;
        },
      },
      warmupS,
    );
    collecting = false;

    // Ledger check: exactly one capture per 2xx answer, and no payment captured twice.
    const entries = await settledLedger(sandboxUrl);
    const perKey = new Map<string, LedgerEntry[]>();
    for (const e of entries) {
      if (e.type !== 'capture' || !e.idempotencyKey) continue;
      perKey.set(e.idempotencyKey, [...(perKey.get(e.idempotencyKey) ?? []), e]);
    }
    const runCaptures = entries.slice(ledgerStart).filter((e) => e.type === 'capture');
    const answeredSet = new Set(answered);
    const wrong = answered.filter((id) => {
      const list = perKey.get(id) ?? [];
      return list.length !== 1 || list[0]?.status !== 'succeeded';
    });
    const duplicates = [...perKey.values()].filter((l) => l.length > 1).length;
    const withoutAnswer = runCaptures.filter((e) => !e.idempotencyKey || !answeredSet.has(e.idempotencyKey)).length;
    const check = {
      answered2xx: result.status2xx,
      answered2xxSucceededWithId: answered.length,
      answered2xxOtherBody: otherBody,
      capturesDuringRun: runCaptures.length,
      answeredWithExactlyOneSucceededCapture: answered.length - wrong.length,
      answeredWithoutExactlyOneCapture: wrong.length,
      paymentsCapturedTwiceInWholeLedger: duplicates,
      capturesWithoutA2xxAnswer: withoutAnswer,
      ok: wrong.length === 0 && duplicates === 0 && otherBody === 0 && answered.length === result.status2xx,
    };
    say(
      `  Ledger check: ${result.status2xx} 2xx answers, ${runCaptures.length} captures during the run; ` +
        `${check.answeredWithExactlyOneSucceededCapture} answers have exactly one succeeded capture, ` +
        `${wrong.length} do not; ${duplicates} payments captured twice (whole ledger); ` +
        `${withoutAnswer} captures without a 2xx answer (requests in flight when autocannon stopped, or non-2xx). ` +
        `${check.ok ? 'OK' : 'FAILED'}`,
    );
    return { result, check, answered };
  };
  /** A POST group: its floor arms, then the product's POST; each arm's slices combined. */
  const postGroup = async (name: string, connections: number) => {
    const arms = postFloorArms(connections);
    const slices = await mirrored<ScenarioResult | Awaited<ReturnType<typeof postScenario>>>([
      ...arms,
      (warmupS: number) => postScenario(name, connections, warmupS),
    ]);
    const posts = slices[arms.length] as Array<Awaited<ReturnType<typeof postScenario>>>;
    const floors = slices.slice(0, arms.length) as UpdateWithStartFloor[][];
    return {
      result: combine(posts.map((p) => p.result)),
      checks: posts.map((p) => p.check),
      answered: posts.flatMap((p) => p.answered),
      floor: floors[0] ? combine(floors[0]) : undefined,
      workFloor: floors[1] ? combine(floors[1]) : undefined,
    };
  };
  const postGroups = async () => {
    const post = await postGroup('product POST /payments (token flow)', POST_CONNECTIONS);
    // Diagnostic: one request at a time, the path's own latency without queueing behind other requests.
    const serial = SERIAL_POST ? await postGroup('product POST /payments, 1 connection', 1) : undefined;
    return { post, serial };
  };

  // 5. Refunds: P payments of 1000 USD, P loops of sequential 0.01 refunds, each on its own payment.
  let refundSeq = 0;
  const sendRefund = (id: string) => refundOnce(apiUrl, postHeaders, id, `bench-refund-${runTag}-${++refundSeq}`);
  const createPaymentToRefund = async (): Promise<string> => {
    const res = await fetch(`${apiUrl}/payments`, {
      method: 'POST',
      headers: postHeaders,
      body: paymentBody(REFUND_PAYMENT_AMOUNT),
      signal: AbortSignal.timeout(30_000),
    });
    const body = (await res.json()) as { id?: string; status?: string };
    if (res.status !== 201 && res.status !== 200) throw new Error(`POST /payments for refunds: ${res.status}`);
    if (body.status !== 'succeeded' || !body.id) throw new Error(`POST /payments for refunds: ${JSON.stringify(body)}`);
    return body.id;
  };

  /** The ledger and balance check of every refund sent on these payments, warm-up included. */
  const checkRefunds = async (paymentIds: string[], attempts: RefundAttempt[]) => {
    await sleep(1000); // a refund whose answer never came may still be completing
    const entries = (await ledger(sandboxUrl)).filter((e) => e.type === 'refund');
    const byReference = new Map<string, LedgerEntry[]>();
    const byRefundId = new Map<string, LedgerEntry[]>();
    for (const e of entries) {
      if (e.reference) byReference.set(e.reference, [...(byReference.get(e.reference) ?? []), e]);
      const refundId = e.metadata?.refundId;
      if (refundId) byRefundId.set(refundId, [...(byRefundId.get(refundId) ?? []), e]);
    }
    const answered = attempts.filter((a) => a.status >= 200 && a.status < 300);
    const wrong = answered.filter((a) => {
      const list = byReference.get(a.externalId) ?? [];
      return (
        list.length !== 1 ||
        list[0]?.status !== 'succeeded' ||
        !a.refundId ||
        list[0]?.metadata?.refundId !== a.refundId ||
        byRefundId.get(a.refundId)?.length !== 1
      );
    });
    const ours = new Set(paymentIds);
    const ourEntries = entries.filter((e) => ours.has(e.metadata?.paymentId ?? ''));
    const answeredReferences = new Set(answered.map((a) => a.externalId));
    const payments = await Promise.all(
      paymentIds.map(async (id) => {
        const res = await fetch(`${apiUrl}/payments/${id}`, {
          headers: { authorization: basic },
          signal: AbortSignal.timeout(10_000),
        });
        const body = (await res.json()) as { amountRefunded?: number; status?: string };
        const refunds = attempts.filter(
          (a) => a.paymentId === id && a.status === 200 && a.refundStatus === 'succeeded',
        );
        return {
          paymentId: id,
          status: body.status,
          succeededRefundAnswers: refunds.length,
          succeededLedgerEntries: ourEntries.filter((e) => e.metadata?.paymentId === id && e.status === 'succeeded')
            .length,
          amountRefundedCents: typeof body.amountRefunded === 'number' ? cents(body.amountRefunded) : null,
          expectedCents: refunds.length * cents(REFUND_AMOUNT),
        };
      }),
    );
    const amountMismatches = payments.filter((p) => p.amountRefundedCents !== p.expectedCents);
    const duplicateReferences = [...byReference.values()].filter((l) => l.length > 1).length;
    const duplicateRefundIds = [...byRefundId.values()].filter((l) => l.length > 1).length;
    const check = {
      refundsSent: attempts.length,
      answered2xx: answered.length,
      answered2xxWithExactlyOneSucceededEntry: answered.length - wrong.length,
      answered2xxWithoutExactlyOneSucceededEntry: wrong.length,
      wrongExamples: wrong.slice(0, 5).map((a) => ({
        externalId: a.externalId,
        refundId: a.refundId,
        status: a.status,
        refundStatus: a.refundStatus,
        entries: byReference.get(a.externalId) ?? [],
      })),
      refundEntriesOnThesePayments: ourEntries.length,
      entriesWithoutA2xxAnswer: ourEntries.filter((e) => !e.reference || !answeredReferences.has(e.reference)).length,
      duplicatedReferencesInWholeLedger: duplicateReferences,
      duplicatedRefundIdsInWholeLedger: duplicateRefundIds,
      paymentsWithAmountRefundedMismatch: amountMismatches.length,
      payments,
      ok: wrong.length === 0 && duplicateReferences === 0 && duplicateRefundIds === 0 && amountMismatches.length === 0,
    };
    say(
      `  Refund check: ${answered.length} 2xx answers (warm-up included), ${check.answered2xxWithExactlyOneSucceededEntry} ` +
        `with exactly one succeeded ledger entry (reference = externalId, metadata.refundId = id), ${wrong.length} without; ` +
        `${duplicateReferences} duplicated references, ${duplicateRefundIds} duplicated refund ids (whole ledger); ` +
        `${ourEntries.length} refund entries on these payments, ${check.entriesWithoutA2xxAnswer} without a 2xx answer; ` +
        `amountRefunded = refunds x ${REFUND_AMOUNT} on ${payments.length - amountMismatches.length}/${payments.length} ` +
        `payments. ${check.ok ? 'OK' : 'FAILED'}`,
    );
    for (const p of amountMismatches) say(`    mismatch: ${JSON.stringify(p)}`);
    for (const w of check.wrongExamples) say(`    wrong: ${JSON.stringify(w)}`);
    return check;
  };

  /**
   * One slice of refunds on `paymentIds` (a loop each): `warmupS` thrown away, then DURATION_S
   * measured. Every attempt, warm-up included, is added to `sent` for the group's check.
   */
  const refundScenario = async (name: string, paymentIds: string[], warmupS: number, sent: RefundAttempt[]) => {
    say(
      `\n${name}: ${paymentIds.length} payment(s), one loop each of sequential ${REFUND_AMOUNT} USD refunds; ` +
        `${warmupS} s warm-up + ${DURATION_S} s...`,
    );
    const warmup =
      warmupS > 0
        ? await refundLoops(sendRefund, paymentIds, performance.now() + warmupS * 1000)
        : { attempts: [], seconds: 0 };
    const loadAverage1mBefore = Number(os.loadavg()[0]?.toFixed(2));
    const before = sampleCpu();
    const run = await refundLoops(sendRefund, paymentIds, performance.now() + DURATION_S * 1000);
    sent.push(...warmup.attempts, ...run.attempts);
    const after = sampleCpu();
    const cpuCores = cpuBetween(before, after, run.seconds);
    const stackCores = Object.entries(cpuCores)
      .filter(([g]) => STACK_GROUPS.includes(g))
      .reduce((sum, [, c]) => sum + c, 0);
    const ms = run.attempts.map((a) => a.ms).sort((a, b) => a - b);
    const statusCodes: Record<string, number> = {};
    const errorKinds: Record<string, number> = {};
    for (const a of run.attempts) {
      statusCodes[String(a.status)] = (statusCodes[String(a.status)] ?? 0) + 1;
      if (a.error) errorKinds[a.error] = (errorKinds[a.error] ?? 0) + 1;
    }
    const count = run.attempts.length;
    const result: ScenarioResult & {
      warmupRefunds: number;
      warmupErrors: number;
      errorKinds: Record<string, number>;
    } = {
      name,
      method: 'POST',
      path: '/payments/{id}/refund',
      connections: paymentIds.length,
      durationS: Number(run.seconds.toFixed(2)),
      requestsPerSec: count / run.seconds,
      requestsTotal: count,
      latencyMs: {
        p50: percentile(ms, 50),
        p90: percentile(ms, 90),
        p99: percentile(ms, 99),
        max: percentile(ms, 100),
        mean: Number((ms.reduce((a, b) => a + b, 0) / Math.max(1, count)).toFixed(1)),
      },
      status2xx: run.attempts.filter((a) => a.status >= 200 && a.status < 300).length,
      non2xx: run.attempts.filter((a) => a.status !== 0 && (a.status < 200 || a.status >= 300)).length,
      // Anything but a 200 with a `succeeded` refund (a 2xx `pending` or `failed` counts too).
      errors: run.attempts.filter((a) => a.error).length,
      timeouts: run.attempts.filter((a) => a.status === 0).length,
      statusCodes,
      cpuCores,
      stackCpuMsPerRequest: count > 0 ? Number(((stackCores * run.seconds * 1000) / count).toFixed(2)) : 0,
      loadAverage1mBefore,
      warmupRefunds: warmup.attempts.length,
      warmupErrors: warmup.attempts.filter((a) => a.error).length,
      errorKinds,
    };
    say(
      `  ${result.requestsTotal} refunds in ${result.durationS} s: ${result.requestsPerSec.toFixed(1)} refunds/s, ` +
        `p50 ${result.latencyMs.p50} ms, p90 ${result.latencyMs.p90} ms, p99 ${result.latencyMs.p99} ms, ` +
        `max ${result.latencyMs.max} ms; succeeded ${count - result.errors}, errors ${result.errors} ` +
        `(warm-up: ${result.warmupRefunds} refunds, ${result.warmupErrors} errors)`,
    );
    for (const [kind, n] of Object.entries(errorKinds)) say(`    error x${n}: ${kind}`);
    say(`  CPU (cores): ${formatCpu(result.cpuCores)}; stack CPU per request ${result.stackCpuMsPerRequest} ms`);
    return { result, attempts: run.attempts };
  };

  /**
   * A refund group: `parallel` payments to refund, its floor arm, then the refund loops; the
   * ledger and balances checked once over every refund the group sent.
   */
  const refundGroup = async (name: string, parallel: number) => {
    const paymentIds = await Promise.all(Array.from({ length: parallel }, () => createPaymentToRefund()));
    const sent: RefundAttempt[] = [];
    const arms = floorArm(
      `floor: update-with-start${parallel === 1 ? ', 1 caller' : ''} (beside the refunds)`,
      parallel,
    );
    const slices = await mirrored<ScenarioResult | Awaited<ReturnType<typeof refundScenario>>>([
      ...arms,
      (warmupS: number) => refundScenario(name, paymentIds, warmupS, sent),
    ]);
    const runs = slices[arms.length] as Array<Awaited<ReturnType<typeof refundScenario>>>;
    const floors = slices.slice(0, arms.length) as UpdateWithStartFloor[][];
    return {
      result: combine(runs.map((r) => r.result)),
      check: await checkRefunds(paymentIds, sent),
      attempts: runs.flatMap((r) => r.attempts),
      floor: floors[0] ? combine(floors[0]) : undefined,
    };
  };

  const refundGroups = async () => {
    const refunds = REFUNDS ? await refundGroup('refund POST /payments/{id}/refund', REFUND_PARALLEL) : undefined;
    const refundsSerial =
      REFUNDS && SERIAL_REFUNDS ? await refundGroup('refund POST /payments/{id}/refund, 1 connection', 1) : undefined;
    return { refunds, refundsSerial };
  };

  // Payments, then refunds; BENCH_REFUNDS_FIRST=1 swaps them (the dev server's cost per call grows
  // over a run, so whichever runs last pays more: bench/RESULTS.md, "Twenty-first", item 8).
  let postResults: Awaited<ReturnType<typeof postGroups>>;
  let refundResults: Awaited<ReturnType<typeof refundGroups>>;
  if (REFUNDS_FIRST) {
    refundResults = await refundGroups();
    postResults = await postGroups();
  } else {
    postResults = await postGroups();
    refundResults = await refundGroups();
  }
  const { post, serial } = postResults;
  const { refunds, refundsSerial } = refundResults;
  const productPost = post.result;
  const floorAt10 = post.floor;
  const workFloorAt10 = post.workFloor;
  const floorAt1 = serial?.floor;
  const workFloorAt1 = serial?.workFloor;
  const ledgerCheck: Record<string, unknown> = {
    [productPost.name]: post.checks,
    ...(serial ? { [serial.result.name]: serial.checks } : {}),
  };
  for (const r of [refunds, refundsSerial]) if (r) ledgerCheck[r.result.name] = r.check;
  const ledgerOk =
    post.checks.every((c) => c.ok) &&
    (serial?.checks.every((c) => c.ok) ?? true) &&
    (refunds?.check.ok ?? true) &&
    (refundsSerial?.check.ok ?? true);

  // What one payment and one refund cost in Temporal round trips: a history from the quietest run.
  const printHistory = (what: string, history: Awaited<ReturnType<typeof workflowHistory>> | { error: string }) => {
    if ('error' in history) {
      say(`\n${what} workflow history: unavailable (${history.error})`);
      return;
    }
    say(
      `\n${what} workflow history (${history.workflowId}): ${history.events} events, ${history.workflowTasks} workflow ` +
        `tasks, ${history.activities} activities (${history.activityTypes.join(', ')}); update completed at ` +
        `+${history.updateCompletedAtMs} ms, workflow closed at +${history.totalMs} ms (server clock)`,
    );
    say(`  ${history.timeline.join(', ')}`);
  };
  const sampleIds = serial?.answered ?? post.answered;
  const sampleId = sampleIds[Math.floor(sampleIds.length / 2)] ?? paymentId;
  const history = await workflowHistory(temporal.address, paymentWorkflowId(sampleId)).catch((err: unknown) => ({
    error: (err as Error).message,
  }));
  printHistory('Payment', history);
  const refundSamples = (refundsSerial ?? refunds)?.attempts.filter((a) => a.refundId && !a.error) ?? [];
  const refundSample = refundSamples[Math.floor(refundSamples.length / 2)];
  const refundHistory = refundSample?.refundId
    ? await workflowHistory(temporal.address, refundWorkflowId(refundSample.refundId))
        .then((h) => ({ ...h, answerMs: Number(refundSample.ms.toFixed(1)) }))
        .catch((err: unknown) => ({ error: (err as Error).message }))
    : undefined;
  if (refundHistory) {
    printHistory('Refund', refundHistory);
    if (!('error' in refundHistory)) say(`  (this refund's answer took ${refundHistory.answerMs} ms at the client)`);
  }

  // Summary: every product figure against its floor (GET: the baseline; POST and refunds: the
  // Update-with-Start floor at the same concurrency).
  const ratio = productGet.requestsPerSec / baseline.requestsPerSec;
  const floorOf = (r: ScenarioResult): ScenarioResult | undefined => {
    if (r === productGet || r === productGetUnlimited) return baseline;
    if (r === productPost || r === workFloorAt10) return floorAt10;
    if (r === serial?.result || r === workFloorAt1) return floorAt1;
    if (r === refunds?.result) return refunds.floor;
    if (r === refundsSerial?.result) return refundsSerial.floor;
    return undefined;
  };
  const over = (a: number, b: number | undefined) => (b && b > 0 ? Number((a / b).toFixed(3)) : null);
  const vsFloor = (r: ScenarioResult) => {
    const f = floorOf(r);
    if (!f) return undefined;
    return {
      floor: f.name,
      requestsPerSec: over(r.requestsPerSec, f.requestsPerSec),
      p50: over(r.latencyMs.p50, f.latencyMs.p50),
      p90: over(r.latencyMs.p90, f.latencyMs.p90),
      p99: over(r.latencyMs.p99, f.latencyMs.p99),
    };
  };
  const rows: ScenarioResult[] = [
    baseline,
    productGet,
    ...(productGetUnlimited ? [productGetUnlimited] : []),
    ...(floorAt10 ? [floorAt10] : []),
    ...(floorAt1 ? [floorAt1] : []),
    ...(workFloorAt10 ? [workFloorAt10] : []),
    ...(workFloorAt1 ? [workFloorAt1] : []),
    productPost,
    ...(serial ? [serial.result] : []),
    ...(refunds?.floor ? [refunds.floor] : []),
    ...(refunds ? [refunds.result] : []),
    ...(refundsSerial?.floor ? [refundsSerial.floor] : []),
    ...(refundsSerial ? [refundsSerial.result] : []),
  ];
  const header = [
    'scenario',
    'conns',
    'req/s',
    'p50 ms',
    'p90 ms',
    'p99 ms',
    'max ms',
    '2xx',
    'non-2xx',
    'errors',
    'stack CPU ms/req',
    'req/s vs floor',
    'p50 vs floor',
  ];
  const x = (n: number | null | undefined) => (n === null || n === undefined ? '-' : `${n.toFixed(2)}x`);
  const table = [
    header,
    ...rows.map((r) => [
      r.name,
      String(r.connections),
      r.requestsPerSec.toFixed(0),
      String(r.latencyMs.p50),
      String(r.latencyMs.p90),
      String(r.latencyMs.p99),
      String(r.latencyMs.max),
      String(r.status2xx),
      String(r.non2xx),
      String(r.errors),
      r.stackCpuMsPerRequest.toFixed(2),
      x(vsFloor(r)?.requestsPerSec),
      r === productGet || r === productGetUnlimited ? '-' : x(vsFloor(r)?.p50),
    ]),
  ];
  const widths = header.map((_, i) => Math.max(...table.map((row) => (row[i] ?? '').length)));
  say(
    `\nResults (${startedAt.toISOString()}; every row ${ROUNDS} slices of ${DURATION_S} s, measured in mirrored ` +
      `rounds with the other rows of its group, after ${WARMUP_S} s warm-up (${SETTLE_S} s before later slices); ` +
      `p50/p90/p99: the slices' median; refunds: errors = answers other than 200 \`succeeded\`; floor: ` +
      `Update-with-Start loops; "vs floor": GET against the baseline, POST and refunds against the floor of their ` +
      `group, at the same concurrency):\n`,
  );
  for (const row of table)
    say(row.map((cell, i) => (i === 0 ? cell.padEnd(widths[i]!) : cell.padStart(widths[i]!))).join('  '));
  say(`\nCPU cores used during each measured run:`);
  for (const r of rows) say(`  ${r.name}: ${formatCpu(r.cpuCores)}`);
  say('\nEach slice (req/s, p50 ms), in the order measured:');
  for (const r of rows) {
    say(`  ${r.name}: ${(r.slices ?? []).map((x) => `${x.requestsPerSec}/s ${x.p50} ms`).join(', ')}`);
  }
  if (productGetUnlimited) {
    say(
      `rate limiting (RATE_LIMIT_PER_SECOND=${RATE_LIMIT}): product GET ${productGet.requestsPerSec.toFixed(0)} req/s ` +
        `with it, ${productGetUnlimited.requestsPerSec.toFixed(0)} req/s without ` +
        `(${(productGet.requestsPerSec / productGetUnlimited.requestsPerSec).toFixed(3)}x); stack CPU per GET ` +
        `${productGet.stackCpuMsPerRequest} ms vs ${productGetUnlimited.stackCpuMsPerRequest} ms`,
    );
  }
  const cpuRatio = baseline.stackCpuMsPerRequest / productGet.stackCpuMsPerRequest;
  say(
    `stack CPU per GET: baseline ${baseline.stackCpuMsPerRequest} ms, product ${productGet.stackCpuMsPerRequest} ms ` +
      `(ratio ${cpuRatio.toFixed(2)}: what the throughput ratio tends to when both are CPU-bound)`,
  );

  // Targets (issue 41): a figure from a run with errors does not count.
  // The p50 lines compare at 1 connection, the throughput lines at 10: other knobs make them not count.
  const figure = (
    r: ScenarioResult | undefined,
    pick: (r: ScenarioResult) => number,
    connections?: number,
  ): Figure | undefined => {
    if (!r) return undefined;
    const bad = r.errors + r.non2xx;
    const flaws = [
      bad > 0 ? `${bad} errors or non-2xx answers` : '',
      connections !== undefined && r.connections !== connections
        ? `${r.connections} connections, not ${connections}`
        : '',
    ].filter(Boolean);
    return { value: pick(r), ...(flaws.length ? { flaw: flaws.join(', ') } : {}) };
  };
  const rps = (r: ScenarioResult) => r.requestsPerSec;
  const p50 = (r: ScenarioResult) => r.latencyMs.p50;
  const targets = evaluateTargets(
    {
      node: process.version,
      baselineGet: figure(baseline, rps),
      productGet: figure(productGet, rps),
      floorP50At1: figure(floorAt1, p50, 1),
      floorRpsAt10: figure(floorAt10, rps, 10),
      workP50At1: figure(workFloorAt1, p50, 1),
      workRpsAt10: figure(workFloorAt10, rps, 10),
      postP50At1: figure(serial?.result, p50, 1),
      postRpsAt10: figure(productPost, rps, 10),
      refundP50At1: figure(refundsSerial?.result, p50, 1),
      refundRpsAt10: figure(refunds?.result, rps, 10),
      refundFloorP50At1: figure(refundsSerial?.floor, p50, 1),
      refundFloorRpsAt10: figure(refunds?.floor, rps, 10),
    },
    'run',
  );
  say('');
  for (const line of formatTargets(targets)) say(line);

  const output = {
    date: startedAt.toISOString(),
    machine,
    git,
    stack: {
      postgres: `${postgresVersion} (embedded, ephemeral: fsync/synchronous_commit/full_page_writes off)`,
      temporal: temporalServer,
      processes: PROCESSES,
      logLevel: 'warn',
      poolMax: 10,
      readyS: Number(readyS.toFixed(1)),
    },
    settings: {
      durationS: DURATION_S,
      warmupS: WARMUP_S,
      settleS: SETTLE_S,
      rounds: ROUNDS,
      getConnections: GET_CONNECTIONS,
      postConnections: POST_CONNECTIONS,
      serialPost: SERIAL_POST,
      rateLimitPerSecond: RATE_LIMIT,
      rateLimitBurst: RATE_LIMIT * 2,
      cpuProfiles: CPU_PROF,
      floor: FLOOR ? { callers: [FLOOR_CALLERS, 1], warmupS: WARMUP_S, durationS: DURATION_S } : false,
      refunds: REFUNDS
        ? {
            parallel: REFUND_PARALLEL,
            serial: SERIAL_REFUNDS,
            first: REFUNDS_FIRST,
            paymentAmount: REFUND_PAYMENT_AMOUNT,
            refundAmount: REFUND_AMOUNT,
            currency: 'USD',
            warmupS: WARMUP_S,
          }
        : false,
    },
    scenarios: {
      baseline,
      productGet,
      ...(productGetUnlimited ? { productGetUnlimited } : {}),
      productPost,
      ...(serial ? { productPostSerial: serial.result } : {}),
      ...(refunds ? { refunds: refunds.result } : {}),
      ...(refundsSerial ? { refundsSerial: refundsSerial.result } : {}),
    },
    floors: {
      ...(floorAt10 ? { updateWithStart: floorAt10 } : {}),
      ...(floorAt1 ? { updateWithStartSerial: floorAt1 } : {}),
      ...(workFloorAt10 ? { workFloor: workFloorAt10 } : {}),
      ...(workFloorAt1 ? { workFloorSerial: workFloorAt1 } : {}),
      ...(refunds?.floor ? { updateWithStartBesideRefunds: refunds.floor } : {}),
      ...(refundsSerial?.floor ? { updateWithStartSerialBesideRefunds: refundsSerial.floor } : {}),
    },
    /** Each product scenario against its floor (product / floor; for latencies, above 1 is slower). */
    vsFloor: Object.fromEntries(rows.flatMap((r) => (vsFloor(r) ? [[r.name, vsFloor(r)]] : []))),
    getThroughputRatio: Number(ratio.toFixed(3)),
    ...(productGetUnlimited
      ? { getRateLimitingCost: Number((productGet.requestsPerSec / productGetUnlimited.requestsPerSec).toFixed(3)) }
      : {}),
    getCpuPerRequestRatio: Number(cpuRatio.toFixed(3)),
    targets,
    ledgerCheck,
    paymentWorkflowHistory: history,
    ...(refundHistory ? { refundWorkflowHistory: refundHistory } : {}),
    sandboxFaults: faults,
  };
  fs.mkdirSync(OUT_DIR, { recursive: true });
  fs.writeFileSync(path.join(OUT_DIR, 'latest.json'), `${JSON.stringify(output, null, 2)}\n`);
  say(`\nWrote ${path.relative(ROOT, path.join(OUT_DIR, 'latest.json'))}.`);

  say('Stopping the stack...');
  await teardown();
  clearTimeout(watchdog);
  say('Stopped.');
  process.exit(ledgerOk ? 0 : 1);
}

main().catch(async (err: unknown) => {
  const logs = children.map((c) => `--- ${c.name} log (tail) ---\n${tail(c.logFile)}`).join('\n');
  await abort(`Benchmark failed: ${(err as Error).stack ?? String(err)}${logs ? `\n${logs}` : ''}`);
});
