import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { Client, Connection } from '@temporalio/client';
import { startClusterChild, type ClusterChild } from '../dev/stack/clusterChild';
import type { ClusterFile } from '../dev/stack/clusterFile';
import { devPayloadKeysPath } from '../src/config';
import { payloadDataConverter } from '../src/temporal/payloadCodec';
import { subscriptionWorkflowId } from '../workflows/subscriptionApi';
import { OUT_DIR, ROOT, envInt, gitState, ledger, say, sleep } from './stack';

/**
 * `npm run bench:capacity`: what one payment, refund and subscription renewal cost in CPU, per
 * process kind, on the production shape (`npm run cluster`: PostgreSQL, the real Temporal server
 * with frontend/history/matching/worker as separate processes, the sandbox, API_PROCESSES API
 * processes and WORKER_PROCESSES workers), for each worker count in BENCH_CAP_WORKERS. Each worker
 * count gets a fresh cluster in a temp dir on free ports, and the same phases:
 *
 *   baseline  no-op HTTP round trip (sandbox GET /healthz) and the raw sandbox POST /v1/payments,
 *             the same closed loop: what the machine does with no Temporal and no database
 *   payments  token-flow POST /payments, CONCURRENCY in flight (closed loop)
 *   refunds   POST /payments/{id}/refund of 0.01, one loop per payment of 1000 USD (one refund in
 *             flight per payment), CONCURRENCY loops
 *   renewals  SUBSCRIPTIONS subscriptions renewing every billing day of BILLING_DAY_S seconds
 *             (offered SUBSCRIPTIONS / BILLING_DAY_S renewals/s, open loop: timers, not clients);
 *             renewals counted as the sandbox ledger's succeeded captures carrying an invoiceId
 *             made during the window (all subscriptions were created before it)
 *
 * Each phase: WARMUP_S thrown away, then PHASE_S measured. CPU is utime+stime (+ the reaped
 * children's cutime+cstime, so exited PostgreSQL backends count) of every process of the cluster
 * from /proc, grouped by the pids the cluster publishes in cluster.json. PostgreSQL's WAL bytes
 * and commits per database are read at the phase edges. At the end, the bytes per record of our
 * tables and of Temporal's. Writes bench/.out/capacity-latest.{json,md} and prints the tables.
 *
 * Knobs (env): BENCH_CAP_WORKERS (1,2,3), BENCH_CAP_API_PROCESSES (2), BENCH_CAP_CONCURRENCY (16),
 * BENCH_CAP_WARMUP_S (10), BENCH_CAP_PHASE_S (60), BENCH_CAP_BASELINE_S (10),
 * BENCH_CAP_SUBSCRIPTIONS (240), BENCH_CAP_BILLING_DAY_S (8).
 */

const WORKER_COUNTS = (process.env.BENCH_CAP_WORKERS ?? '1,2,3').split(',').map((s) => {
  const n = Number(s.trim());
  if (!Number.isInteger(n) || n < 1) throw new Error(`BENCH_CAP_WORKERS: "${s}" is not a worker count`);
  return n;
});
const API_PROCESSES = envInt('BENCH_CAP_API_PROCESSES', 2);
const CONCURRENCY = envInt('BENCH_CAP_CONCURRENCY', 16);
const WARMUP_S = envInt('BENCH_CAP_WARMUP_S', 10, 0);
const PHASE_S = envInt('BENCH_CAP_PHASE_S', 60);
const BASELINE_S = envInt('BENCH_CAP_BASELINE_S', 10);
const SUBSCRIPTIONS = envInt('BENCH_CAP_SUBSCRIPTIONS', 240);
const BILLING_DAY_S = envInt('BENCH_CAP_BILLING_DAY_S', 8);
const CLIENT_TIMEOUT_MS = 30_000;

const round = (n: number, digits = 1) => Number(n.toFixed(digits));

// ---------------------------------------------------------------------------------------------
// CPU per process kind, from /proc

const CLOCK_TICKS = (() => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  } catch {
    return 100;
  }
})();

const LOAD_GENERATOR = 'load generator (bench)';

interface ProcStat {
  ppid: number;
  /** utime + stime + cutime + cstime: its own CPU and that of its children it has reaped. */
  ticks: number;
  cmd: string;
}

function readProcs(): Map<number, ProcStat> {
  const procs = new Map<number, ProcStat>();
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
      // Fields after "(comm) ": state ppid ... utime(14) stime(15) cutime(16) cstime(17), 1-based.
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      procs.set(Number(entry), {
        ppid: Number(f[1]),
        ticks: Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14]),
        cmd: fs.readFileSync(`/proc/${entry}/cmdline`, 'utf8').replace(/\0/g, ' '),
      });
    } catch {
      // ended meanwhile
    }
  }
  return procs;
}

interface CpuSample {
  /** Ticks per pid with its kind. */
  procs: Map<number, { kind: string; ticks: number }>;
  machineBusyTicks: number;
  at: number;
}

function machineBusyTicks(): number {
  const line = fs.readFileSync('/proc/stat', 'utf8').split('\n')[0] ?? '';
  const [, user, nice, system, , , irq, softirq, steal] = line.trim().split(/\s+/).map(Number);
  return [user, nice, system, irq, softirq, steal].reduce<number>((a, b) => a + (b ?? 0), 0);
}

/**
 * Every process of the cluster by kind: a process published in cluster.json is its kind's root,
 * and its descendants (PostgreSQL's backends, esbuild under tsx) take the nearest root's kind.
 */
function sampleCpu(clusterPid: number, file: ClusterFile): CpuSample {
  const roots = new Map<number, string>([[clusterPid, 'cluster primary']]);
  if (file.pids.postgres) roots.set(file.pids.postgres, 'postgres');
  if (file.pids.sandbox) roots.set(file.pids.sandbox, 'sandbox');
  for (const pid of Object.values(file.pids.api)) if (pid) roots.set(pid, 'api');
  for (const pid of Object.values(file.pids.worker)) if (pid) roots.set(pid, 'worker');
  for (const pid of Object.values(file.pids.deliveryWorker ?? {})) if (pid) roots.set(pid, 'delivery worker');
  for (const [service, pid] of Object.entries(file.pids.temporal)) if (pid) roots.set(pid, `temporal ${service}`);
  roots.set(process.pid, LOAD_GENERATOR);

  const machine = machineBusyTicks();
  const procs = readProcs();
  const kindOf = (pid: number): string | undefined => {
    for (let p = pid, depth = 0; depth < 30; depth++) {
      const root = roots.get(p);
      if (root === 'cluster primary' && p !== pid) {
        // A direct child of the primary that is not published: the Temporal UI server, or else other.
        const own = procs.get(pid);
        return own && /ui-server/.test(own.cmd) ? 'temporal ui' : 'other';
      }
      if (root) return root;
      const next = procs.get(p)?.ppid;
      if (next === undefined || next <= 1) return undefined;
      p = next;
    }
    return undefined;
  };
  const sample: CpuSample = { procs: new Map(), machineBusyTicks: machine, at: performance.now() };
  for (const [pid, p] of procs) {
    let kind = kindOf(pid);
    // A backend's title names its database ("postgres: user db host(port) state"); the rest
    // (checkpointer, WAL writer, autovacuum, the postmaster with its reaped children) is server work.
    if (kind === 'postgres') {
      const db = /^postgres: \S+ (payments|temporal|temporal_visibility) /.exec(p.cmd)?.[1];
      kind = db ? `postgres ${db}` : 'postgres server';
    }
    if (kind) sample.procs.set(pid, { kind, ticks: p.ticks });
  }
  return sample;
}

/** CPU seconds per kind between two samples, the machine's busy seconds, and the wall time. */
function cpuBetween(before: CpuSample, after: CpuSample) {
  const seconds: Record<string, number> = {};
  let ours = 0;
  for (const [pid, { kind, ticks }] of after.procs) {
    const delta = Math.max(0, ticks - (before.procs.get(pid)?.ticks ?? 0)) / CLOCK_TICKS;
    seconds[kind] = (seconds[kind] ?? 0) + delta;
    ours += delta;
  }
  const machine = (after.machineBusyTicks - before.machineBusyTicks) / CLOCK_TICKS;
  return {
    seconds,
    machineSeconds: machine,
    outsideSeconds: Math.max(0, machine - ours),
    wallSeconds: (after.at - before.at) / 1000,
  };
}

// ---------------------------------------------------------------------------------------------
// PostgreSQL: WAL and commits per database at the phase edges; sizes at the end

async function withDb<T>(databaseUrl: string, database: string, use: (db: pg.Client) => Promise<T>): Promise<T> {
  const url = new URL(databaseUrl);
  url.pathname = `/${database}`;
  const db = new pg.Client({ connectionString: url.toString() });
  await db.connect();
  try {
    return await use(db);
  } finally {
    await db.end();
  }
}

interface DbSample {
  walBytes: number;
  commits: Record<string, number>;
}

async function sampleDb(databaseUrl: string): Promise<DbSample> {
  return withDb(databaseUrl, 'payments', async (db) => {
    // Pending statistics of other backends reach pg_stat_database within about a second.
    const wal = await db.query<{ b: string }>(`select pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::text as b`);
    const rows = await db.query<{ datname: string; xact_commit: string }>(
      `select datname, xact_commit::text from pg_stat_database where datname in ('payments', 'temporal', 'temporal_visibility')`,
    );
    return {
      walBytes: Number(wal.rows[0]!.b),
      commits: Object.fromEntries(rows.rows.map((r) => [r.datname, Number(r.xact_commit)])),
    };
  });
}

function dbBetween(before: DbSample, after: DbSample) {
  const commits: Record<string, number> = {};
  for (const [db, n] of Object.entries(after.commits)) commits[db] = n - (before.commits[db] ?? 0);
  return { walBytes: after.walBytes - before.walBytes, commits };
}

interface TableSize {
  database: string;
  table: string;
  rows: number;
  /** pg_total_relation_size: heap, indexes and TOAST, with their empty-page minimum on small tables. */
  bytes: number;
  /** avg(pg_column_size(row)): the row's own data, without page, index or tuple-header overhead. */
  meanRowBytes: number;
}

/** Row count and total size (heap, indexes, TOAST) of every table with rows. */
async function tableSizes(databaseUrl: string): Promise<TableSize[]> {
  const sizes: TableSize[] = [];
  for (const database of ['payments', 'temporal', 'temporal_visibility']) {
    await withDb(databaseUrl, database, async (db) => {
      const tables = await db.query<{ name: string; bytes: string }>(
        `select quote_ident(schemaname) || '.' || quote_ident(relname) as name,
                pg_total_relation_size(relid)::text as bytes
           from pg_stat_user_tables order by pg_total_relation_size(relid) desc`,
      );
      for (const t of tables.rows) {
        const count = await db.query<{ n: string; row: string | null }>(
          `select count(*)::text as n, avg(pg_column_size(t.*))::text as row from ${t.name} t`,
        );
        const rows = Number(count.rows[0]!.n);
        if (rows > 0) {
          sizes.push({
            database,
            table: t.name.replace(/^public\./, ''),
            rows,
            bytes: Number(t.bytes),
            meanRowBytes: Math.round(Number(count.rows[0]!.row ?? 0)),
          });
        }
      }
    });
  }
  return sizes;
}

/** Temporal's own account of each workflow type: runs, events and history bytes per run. */
async function historyByWorkflowType(databaseUrl: string) {
  return withDb(databaseUrl, 'temporal_visibility', async (db) => {
    const { rows } = await db.query<{ type: string; runs: string; events: string; bytes: string }>(
      `select workflow_type_name as type, count(*)::text as runs,
              coalesce(avg(history_length), 0)::text as events,
              coalesce(avg(history_size_bytes), 0)::text as bytes
         from executions_visibility group by workflow_type_name order by count(*) desc`,
    );
    return rows.map((r) => ({
      workflowType: r.type,
      runs: Number(r.runs),
      meanEvents: round(Number(r.events)),
      meanHistoryBytes: Math.round(Number(r.bytes)),
    }));
  });
}

/**
 * Running subscription workflows are not in visibility's history columns until they close: their
 * current run's length and size from describe(), and the invoices paid so far.
 */
async function sampleSubscriptionHistories(file: ClusterFile, subscriptionIds: string[], dataDir: string) {
  const connection = await Connection.connect({ address: file.temporalAddress });
  try {
    // The cluster's processes encrypt payloads under the key its DATA_DIR keeps (decision 0078).
    const keys = fs.existsSync(devPayloadKeysPath(dataDir))
      ? fs.readFileSync(devPayloadKeysPath(dataDir), 'utf8').trim()
      : undefined;
    const client = new Client({ connection, ...payloadDataConverter(keys) });
    const described = await Promise.all(
      subscriptionIds.map((id) => client.workflow.getHandle(subscriptionWorkflowId(id)).describe()),
    );
    const paid = await withDb(file.databaseUrl, 'payments', async (db) => {
      const { rows } = await db.query<{ n: string }>(
        `select count(*)::text as n from invoices where status = 'paid' and subscription_id = any($1)`,
        [subscriptionIds],
      );
      return Number(rows[0]!.n);
    });
    const n = Math.max(1, described.length);
    return {
      sample: described.length,
      meanEventsCurrentRun: round(described.reduce((a, d) => a + d.historyLength, 0) / n),
      meanBytesCurrentRun: Math.round(described.reduce((a, d) => a + (d.historySize ?? 0), 0) / n),
      maxEventsCurrentRun: Math.max(0, ...described.map((d) => d.historyLength)),
      meanPaidInvoices: round(paid / n),
    };
  } finally {
    await connection.close();
  }
}

// ---------------------------------------------------------------------------------------------
// Closed-loop load: `concurrency` loops, each sending its next request once the previous answered

interface Outcome {
  /** Set unless the operation did what it should (e.g. 200 with a `succeeded` payment). */
  error?: string;
}

interface LoopResult {
  ok: number;
  failed: number;
  errors: Record<string, number>;
  latenciesMs: number[];
  seconds: number;
}

async function closedLoop(
  concurrency: number,
  durationMs: number,
  op: (loop: number) => Promise<Outcome>,
): Promise<LoopResult> {
  const result: LoopResult = { ok: 0, failed: 0, errors: {}, latenciesMs: [], seconds: 0 };
  const t0 = performance.now();
  const until = t0 + durationMs;
  await Promise.all(
    Array.from({ length: concurrency }, async (_, loop) => {
      while (performance.now() < until) {
        const started = performance.now();
        let outcome: Outcome;
        try {
          outcome = await op(loop);
        } catch (err) {
          outcome = { error: (err as Error).name === 'TimeoutError' ? 'client timeout' : (err as Error).message };
        }
        if (outcome.error === undefined) {
          result.ok++;
          result.latenciesMs.push(performance.now() - started);
        } else {
          result.failed++;
          result.errors[outcome.error] = (result.errors[outcome.error] ?? 0) + 1;
        }
      }
    }),
  );
  result.seconds = (performance.now() - t0) / 1000;
  return result;
}

/** Nearest-rank percentile, to 0.1 ms. */
function percentile(values: number[], p: number): number {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.min(sorted.length, Math.max(1, Math.ceil((p / 100) * sorted.length)));
  return round(sorted[rank - 1]!);
}

async function postJson(url: string, headers: Record<string, string>, body: unknown) {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(CLIENT_TIMEOUT_MS),
  });
  const text = await res.text();
  let json: Record<string, unknown> | undefined;
  try {
    json = JSON.parse(text) as Record<string, unknown>;
  } catch {
    // reported as text
  }
  return { status: res.status, json, text };
}

/** 200 with body.status === `want`, else a short error kind for the tally. */
function expectStatus(res: Awaited<ReturnType<typeof postJson>>, want: string): Outcome {
  if (res.status === 200 && res.json?.status === want) return {};
  const code = (res.json?.error as { code?: string } | undefined)?.code ?? res.json?.status ?? res.text.slice(0, 80);
  return { error: `${res.status} ${String(code)}` };
}

// ---------------------------------------------------------------------------------------------
// Phases

interface PhaseResult {
  phase: string;
  workers: number;
  concurrency: number | null;
  seconds: number;
  ops: number;
  failed: number;
  errors: Record<string, number>;
  opsPerSecond: number;
  latencyMs: { p50: number; p99: number; max: number; mean: number };
  /** CPU seconds per kind over the measured window. */
  cpuSeconds: Record<string, number>;
  /** Cores busy per kind (CPU seconds / wall seconds). */
  cores: Record<string, number>;
  /** CPU ms per operation per kind (CPU seconds × 1000 / operations). */
  cpuMsPerOp: Record<string, number>;
  /** Every process of the cluster (not the load generator). */
  stackCpuMsPerOp: number;
  machineCores: number;
  outsideCores: number;
  walBytesPerOp: number;
  commitsPerOp: Record<string, number>;
  /** Over the whole window (for the idle phase, where there are no operations). */
  walBytes: number;
  commits: Record<string, number>;
  /** Supervisor restarts during the measured window (a result with restarts is suspect). */
  restarts: Record<string, number>;
  note?: string;
}

function phaseResult(
  phase: string,
  workers: number,
  concurrency: number | null,
  ops: number,
  failed: number,
  errors: Record<string, number>,
  latencies: number[],
  cpu: ReturnType<typeof cpuBetween>,
  db: ReturnType<typeof dbBetween>,
  restarts: Record<string, number>,
  note?: string,
): PhaseResult {
  const per = (x: number) => (ops > 0 ? x / ops : 0);
  const cpuMsPerOp: Record<string, number> = {};
  const cores: Record<string, number> = {};
  let stack = 0;
  for (const [kind, s] of Object.entries(cpu.seconds)) {
    cpuMsPerOp[kind] = round(per(s * 1000), 2);
    cores[kind] = round(s / cpu.wallSeconds, 2);
    if (kind !== LOAD_GENERATOR) stack += s;
  }
  const mean = latencies.length ? latencies.reduce((a, b) => a + b, 0) / latencies.length : 0;
  return {
    phase,
    workers,
    concurrency,
    seconds: round(cpu.wallSeconds, 2),
    ops,
    failed,
    errors,
    opsPerSecond: round(ops / cpu.wallSeconds, 2),
    latencyMs: {
      p50: percentile(latencies, 50),
      p99: percentile(latencies, 99),
      max: percentile(latencies, 100),
      mean: round(mean),
    },
    cpuSeconds: Object.fromEntries(Object.entries(cpu.seconds).map(([k, s]) => [k, round(s, 2)])),
    cores,
    cpuMsPerOp,
    stackCpuMsPerOp: round(per(stack * 1000), 2),
    machineCores: round(cpu.machineSeconds / cpu.wallSeconds, 2),
    outsideCores: round(cpu.outsideSeconds / cpu.wallSeconds, 2),
    walBytesPerOp: Math.round(per(db.walBytes)),
    commitsPerOp: Object.fromEntries(Object.entries(db.commits).map(([d, n]) => [d, round(per(n), 2)])),
    walBytes: db.walBytes,
    commits: db.commits,
    restarts,
    note,
  };
}

function printPhase(r: PhaseResult): void {
  const errors = Object.entries(r.errors)
    .map(([e, n]) => `${e} x${n}`)
    .join(', ');
  say(
    `  ${r.phase}: ${r.opsPerSecond}/s (${r.ops} in ${r.seconds} s), p50 ${r.latencyMs.p50} ms, p99 ${r.latencyMs.p99} ms` +
      (r.failed ? `, ${r.failed} failed (${errors})` : '') +
      (Object.keys(r.restarts).length ? ` -- RESTARTS during the phase: ${JSON.stringify(r.restarts)}` : ''),
  );
  say(
    `    CPU ms/op: ${Object.entries(r.cpuMsPerOp)
      .filter(([, v]) => v > 0)
      .map(([k, v]) => `${k} ${v}`)
      .join(', ')}; stack ${r.stackCpuMsPerOp}; machine ${r.machineCores} cores (outside ${r.outsideCores})`,
  );
}

/** Restarts counted since `before` (a copy of cluster.restarts taken at the phase start). */
function restartsSince(before: Record<string, number>, now: Record<string, number>): Record<string, number> {
  const since: Record<string, number> = {};
  for (const [kind, n] of Object.entries(now)) if (n > (before[kind] ?? 0)) since[kind] = n - (before[kind] ?? 0);
  return since;
}

interface Target {
  cluster: ClusterChild;
  apiUrl: string;
  sandboxUrl: string;
  auth: Record<string, string>;
  sandboxAuth: Record<string, string>;
  runTag: string;
}

/** A closed-loop phase: warm-up, then the measured window with CPU and PostgreSQL read at its edges. */
async function measureLoop(
  t: Target,
  workers: number,
  phase: string,
  durationS: number,
  op: (loop: number) => Promise<Outcome>,
): Promise<PhaseResult> {
  say(`\n[${workers} worker(s)] ${phase}: ${CONCURRENCY} in flight, ${WARMUP_S} s warm-up + ${durationS} s...`);
  if (WARMUP_S > 0) await closedLoop(CONCURRENCY, WARMUP_S * 1000, op);
  const file = t.cluster.readClusterFile();
  const [db0, cpu0] = [await sampleDb(file.databaseUrl), sampleCpu(t.cluster.pid, file)];
  const restarts0 = { ...t.cluster.restarts };
  const r = await closedLoop(CONCURRENCY, durationS * 1000, op);
  const cpu1 = sampleCpu(t.cluster.pid, file);
  await sleep(1500); // other backends' statistics reach pg_stat_database
  const db1 = await sampleDb(file.databaseUrl);
  const result = phaseResult(
    phase,
    workers,
    CONCURRENCY,
    r.ok,
    r.failed,
    r.errors,
    r.latenciesMs,
    cpuBetween(cpu0, cpu1),
    dbBetween(db0, db1),
    restartsSince(restarts0, t.cluster.restarts),
  );
  printPhase(result);
  return result;
}

/** The cluster running now, for the signal handler. */
let currentCluster: ClusterChild | undefined;

async function runCluster(workers: number): Promise<{ phases: PhaseResult[]; extra: Record<string, unknown> }> {
  say(`\n=== ${workers} worker process(es), ${API_PROCESSES} API processes: starting a fresh cluster...`);
  const cluster = await startClusterChild({
    env: {
      WORKER_PROCESSES: String(workers),
      API_PROCESSES: String(API_PROCESSES),
      BILLING_DAY_SECONDS: String(BILLING_DAY_S),
      // Capacity, not the per-key rate limit (the load is one merchant key): limiting stays on, above the load.
      RATE_LIMIT_PER_SECOND: process.env.RATE_LIMIT_PER_SECOND ?? '10000',
      RATE_LIMIT_BURST: process.env.RATE_LIMIT_BURST ?? '20000',
      // Load, not quotas, is measured: the per-merchant quotas and the sandbox's ledger bound are off (decision 0079).
      QUOTA_OPEN_HOSTED_PAYMENTS: '0',
      QUOTA_LIVE_TEST_SUBSCRIPTIONS: '0',
      QUOTA_REFUNDS_PER_PAYMENT: '0',
      SANDBOX_MAX_LEDGER_ENTRIES: '0',
    },
    readyTimeoutMs: 600_000,
  });
  currentCluster = cluster;
  const phases: PhaseResult[] = [];
  try {
    say(`  ready in ${cluster.startS.toFixed(0)} s (${cluster.dataDir})`);
    const file = cluster.file;
    const demo = file.demoMerchant;
    const t: Target = {
      cluster,
      apiUrl: file.apiUrl,
      sandboxUrl: file.sandboxUrl,
      auth: { authorization: `Basic ${Buffer.from(`${demo.publicKey}:${demo.secretKey}`).toString('base64')}` },
      sandboxAuth: { authorization: `Bearer ${cluster.env.SANDBOX_API_KEY ?? 'sk_sandbox_dev'}` },
      runTag: `${Date.now().toString(36)}-w${workers}`,
    };
    let seq = 0;
    const nextId = (kind: string) => `cap-${kind}-${t.runTag}-${++seq}`;

    // ---- idle: what the cluster burns with no load (Temporal's background work, pollers) ----
    say(`\n[${workers} worker(s)] idle: ${BASELINE_S} s with no load...`);
    {
      const idleFile = cluster.readClusterFile();
      const [db0, cpu0] = [await sampleDb(idleFile.databaseUrl), sampleCpu(cluster.pid, idleFile)];
      const restarts0 = { ...cluster.restarts };
      await sleep(BASELINE_S * 1000);
      const cpu1 = sampleCpu(cluster.pid, idleFile);
      await sleep(1500);
      const db1 = await sampleDb(idleFile.databaseUrl);
      const idle = phaseResult(
        'idle (no load)',
        workers,
        0,
        0,
        0,
        {},
        [],
        cpuBetween(cpu0, cpu1),
        dbBetween(db0, db1),
        restartsSince(restarts0, cluster.restarts),
      );
      say(`  machine ${idle.machineCores} cores: ${JSON.stringify(idle.cores)}`);
      phases.push(idle);
    }

    // ---- baselines: the same closed loop without Temporal or the database ----
    phases.push(
      await measureLoop(t, workers, 'baseline: no-op HTTP (sandbox GET /healthz)', BASELINE_S, async () => {
        const res = await fetch(`${t.sandboxUrl}/healthz`, { signal: AbortSignal.timeout(CLIENT_TIMEOUT_MS) });
        await res.arrayBuffer();
        return res.status === 200 ? {} : { error: String(res.status) };
      }),
    );
    phases.push(
      await measureLoop(t, workers, 'baseline: sandbox POST /v1/payments', BASELINE_S, async () => {
        const res = await postJson(
          `${t.sandboxUrl}/v1/payments`,
          { ...t.sandboxAuth, 'idempotency-key': nextId('raw') },
          { amount: 12.34, currency: 'USD', mode: 'card', cardToken: 'tok_success' },
        );
        return expectStatus(res, 'succeeded');
      }),
    );

    // ---- payments ----
    phases.push(
      await measureLoop(t, workers, 'payment (token flow POST /payments)', PHASE_S, async () =>
        expectStatus(
          await postJson(`${t.apiUrl}/payments`, t.auth, {
            amount: 12.34,
            currency: 'USD',
            externalId: nextId('pay'),
            customer: { email: 'capacity@example.com' },
            cardToken: 'tok_success',
          }),
          'succeeded',
        ),
      ),
    );

    // ---- refunds: one loop per payment of 1000 USD, 0.01 each ----
    const refundPayments: string[] = [];
    for (let i = 0; i < CONCURRENCY; i++) {
      const res = await postJson(`${t.apiUrl}/payments`, t.auth, {
        amount: 1000,
        currency: 'USD',
        externalId: nextId('refundable'),
        customer: { email: 'capacity@example.com' },
        cardToken: 'tok_success',
      });
      if (expectStatus(res, 'succeeded').error) throw new Error(`refund set-up payment: ${res.status} ${res.text}`);
      refundPayments.push(res.json!.id as string);
    }
    phases.push(
      await measureLoop(t, workers, 'refund (POST /payments/{id}/refund)', PHASE_S, async (loop) =>
        expectStatus(
          await postJson(`${t.apiUrl}/payments/${refundPayments[loop]}/refund`, t.auth, {
            externalId: nextId('refund'),
            amount: 0.01,
          }),
          'succeeded',
        ),
      ),
    );

    // ---- renewals ----
    say(
      `\n[${workers} worker(s)] renewal: creating ${SUBSCRIPTIONS} subscriptions (${CONCURRENCY} in flight), ` +
        `each renewing every ${BILLING_DAY_S} s (offered ${round(SUBSCRIPTIONS / BILLING_DAY_S)} renewals/s)...`,
    );
    const subscriptionIds: string[] = [];
    let toCreate = SUBSCRIPTIONS;
    const creationT0 = performance.now();
    const creationErrors: Record<string, number> = {};
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (toCreate > 0) {
          toCreate--;
          const res = await postJson(`${t.apiUrl}/subscriptions`, t.auth, {
            amount: 10,
            currency: 'USD',
            billingIntervalDays: 1,
            externalId: nextId('sub'),
            customer: { email: 'capacity@example.com' },
            cardToken: 'tok_success',
          }).catch((err: unknown) => ({ status: 0, json: undefined, text: (err as Error).message }));
          const outcome = expectStatus(res, 'active');
          if (outcome.error) creationErrors[outcome.error] = (creationErrors[outcome.error] ?? 0) + 1;
          else subscriptionIds.push(res.json!.id as string);
        }
      }),
    );
    const creationS = (performance.now() - creationT0) / 1000;
    say(
      `  ${subscriptionIds.length} active in ${creationS.toFixed(1)} s` +
        (Object.keys(creationErrors).length ? `; failed: ${JSON.stringify(creationErrors)}` : ''),
    );
    if (WARMUP_S > 0) await sleep(WARMUP_S * 1000);
    // Every invoice capture of the cluster: a subscription whose create answered 503 (the first
    // charge outlasted the API's bounded wait) still renews, and its CPU is in the window too.
    const renewalCaptures = async () =>
      (await ledger(t.sandboxUrl)).filter(
        (e) => e.type === 'capture' && e.status === 'succeeded' && e.metadata?.invoiceId !== undefined,
      );
    const renewFile = cluster.readClusterFile();
    const [db0, cpu0] = [await sampleDb(renewFile.databaseUrl), sampleCpu(cluster.pid, renewFile)];
    const windowStart = new Date();
    const restarts0 = { ...cluster.restarts };
    const capturesBefore = (await renewalCaptures()).length;
    await sleep(PHASE_S * 1000);
    const cpu1 = sampleCpu(cluster.pid, renewFile);
    const capturesAfter = await renewalCaptures();
    const windowEnd = new Date();
    await sleep(1500);
    const db1 = await sampleDb(renewFile.databaseUrl);
    const renewals = capturesAfter.length - capturesBefore;
    // Due-to-paid lag of the invoices paid in the window (open loop: it grows if the offer exceeds capacity).
    const lags = await withDb(renewFile.databaseUrl, 'payments', async (db) => {
      const { rows } = await db.query<{ lag_ms: string }>(
        `select (extract(epoch from (paid_at - period_start)) * 1000)::text as lag_ms from invoices
          where period_index >= 1 and status = 'paid' and paid_at >= $1 and paid_at < $2`,
        [windowStart, windowEnd],
      );
      return rows.map((r) => Number(r.lag_ms));
    });
    const invoiceIds = capturesAfter.map((e) => e.metadata?.invoiceId ?? '');
    const capturedTwice = invoiceIds.length - new Set(invoiceIds).size;
    const renewal = phaseResult(
      'renewal (subscription billing timer)',
      workers,
      null,
      renewals,
      capturedTwice,
      capturedTwice ? { 'invoice captured twice': capturedTwice } : {},
      lags,
      cpuBetween(cpu0, cpu1),
      dbBetween(db0, db1),
      restartsSince(restarts0, cluster.restarts),
      `${subscriptionIds.length} subscriptions, billing day ${BILLING_DAY_S} s: offered ` +
        `${round(subscriptionIds.length / BILLING_DAY_S)}/s; latency = invoice due (period_start) to paid_at ` +
        `for the ${lags.length} renewal invoices paid in the window`,
    );
    printPhase(renewal);
    phases.push(renewal);

    // ---- sizes and histories ----
    const [sizes, histories, subscriptionHistory] = await Promise.all([
      tableSizes(file.databaseUrl),
      historyByWorkflowType(file.databaseUrl),
      sampleSubscriptionHistories(file, subscriptionIds.slice(0, 20), cluster.dataDir),
    ]);
    say(`  subscription workflows (sample): ${JSON.stringify(subscriptionHistory)}`);
    return {
      phases,
      extra: {
        clusterStartS: round(cluster.startS),
        restarts: cluster.restarts,
        subscriptionCreation: {
          created: subscriptionIds.length,
          seconds: round(creationS),
          perSecond: round(subscriptionIds.length / creationS),
          errors: creationErrors,
        },
        sizes,
        histories,
        subscriptionHistory,
      },
    };
  } finally {
    say(`  stopping the cluster...`);
    await cluster.stop();
    currentCluster = undefined;
    if (Object.keys(cluster.restarts).length) {
      say(`  (restarts during the run: ${JSON.stringify(cluster.restarts)}; logs kept in ${cluster.dataDir}/logs)`);
    } else {
      fs.rmSync(cluster.dataDir, { recursive: true, force: true });
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Report

const KIND_HEADERS: Array<[string, string]> = [
  ['api', 'API'],
  ['worker', 'worker'],
  ['temporal frontend', 'T frontend'],
  ['temporal history', 'T history'],
  ['temporal matching', 'T matching'],
  ['temporal worker', 'T worker'],
  ['postgres payments', 'PG payments'],
  ['postgres temporal', 'PG temporal'],
  ['postgres temporal_visibility', 'PG visibility'],
  ['postgres server', 'PG server'],
  ['sandbox', 'sandbox'],
  ['cluster primary', 'primary'],
  ['temporal ui', 'T UI'],
  ['other', 'other'],
];

function markdown(results: Array<{ workers: number; phases: PhaseResult[]; extra: Record<string, unknown> }>): string {
  const lines: string[] = [];
  const row = (cells: Array<string | number>) => lines.push(`| ${cells.join(' | ')} |`);
  const measured = (p: PhaseResult) => p.concurrency !== 0;
  const fmt = (n: number | undefined, digits = 1) => (n === undefined || n === 0 ? '0' : n.toFixed(digits));

  lines.push('Throughput, latency and stack CPU per operation:', '');
  row(['workers', 'phase', 'ops/s', 'p50 ms', 'p99 ms', 'failed', 'machine cores', 'stack CPU ms/op', 'restarts']);
  row(['--:', '---', '--:', '--:', '--:', '--:', '--:', '--:', '---']);
  for (const { workers, phases } of results) {
    for (const p of phases.filter(measured)) {
      row([
        workers,
        p.phase,
        fmt(p.opsPerSecond),
        fmt(p.latencyMs.p50),
        fmt(p.latencyMs.p99),
        p.failed,
        fmt(p.machineCores, 2),
        fmt(p.stackCpuMsPerOp, 2),
        Object.entries(p.restarts)
          .map(([k, n]) => `${k} x${n}`)
          .join(', ') || '-',
      ]);
    }
  }

  lines.push('', 'CPU ms per operation, by process kind (T = Temporal service):', '');
  row(['workers', 'phase', ...KIND_HEADERS.map(([, h]) => h), 'load gen.']);
  row(['--:', '---', ...KIND_HEADERS.map(() => '--:'), '--:']);
  for (const { workers, phases } of results) {
    for (const p of phases.filter(measured)) {
      row([
        workers,
        p.phase,
        ...KIND_HEADERS.map(([k]) => fmt(p.cpuMsPerOp[k], 2)),
        fmt(p.cpuMsPerOp[LOAD_GENERATOR], 2),
      ]);
    }
  }

  lines.push('', 'Cores busy during the phase, by process kind:', '');
  row(['workers', 'phase', ...KIND_HEADERS.map(([, h]) => h), 'load gen.', 'machine', 'outside']);
  row(['--:', '---', ...KIND_HEADERS.map(() => '--:'), '--:', '--:', '--:']);
  for (const { workers, phases } of results) {
    for (const p of phases) {
      row([
        workers,
        p.phase,
        ...KIND_HEADERS.map(([k]) => fmt(p.cores[k], 2)),
        fmt(p.cores[LOAD_GENERATOR], 2),
        fmt(p.machineCores, 2),
        fmt(p.outsideCores, 2),
      ]);
    }
  }

  lines.push(
    '',
    'PostgreSQL per operation (WAL: the whole server, our tables and Temporal; transactions: xact_commit, read-only ones included):',
    '',
  );
  row([
    'workers',
    'phase',
    'WAL bytes/op',
    'transactions/op payments',
    'transactions/op temporal',
    'transactions/op visibility',
  ]);
  row(['--:', '---', '--:', '--:', '--:', '--:']);
  for (const { workers, phases } of results) {
    for (const p of phases.filter((x) => measured(x) && !x.phase.startsWith('baseline'))) {
      row([
        workers,
        p.phase,
        p.walBytesPerOp,
        fmt(p.commitsPerOp.payments, 2),
        fmt(p.commitsPerOp.temporal, 2),
        fmt(p.commitsPerOp.temporal_visibility, 2),
      ]);
    }
  }

  const last = results[results.length - 1];
  if (last) {
    const sizes = last.extra.sizes as TableSize[];
    lines.push('', `Table sizes after the ${last.workers}-worker run (rows, total bytes incl. indexes and TOAST):`, '');
    row(['database', 'table', 'rows', 'total bytes', 'total bytes/row', 'mean row data bytes']);
    row(['---', '---', '--:', '--:', '--:', '--:']);
    for (const s of sizes) row([s.database, s.table, s.rows, s.bytes, Math.round(s.bytes / s.rows), s.meanRowBytes]);
    const histories = last.extra.histories as Awaited<ReturnType<typeof historyByWorkflowType>>;
    lines.push('', 'Temporal histories (visibility: runs, mean events and history bytes per run):', '');
    row(['workflow type', 'runs', 'events/run', 'history bytes/run']);
    row(['---', '--:', '--:', '--:']);
    for (const h of histories) row([h.workflowType, h.runs, h.meanEvents, h.meanHistoryBytes]);
  }
  return lines.join('\n');
}

async function main(): Promise<void> {
  const startedAt = new Date();
  const git = gitState();
  const cpuinfo = fs.readFileSync('/proc/cpuinfo', 'utf8');
  const machine = {
    nproc: Number(execFileSync('nproc', { encoding: 'utf8' }).trim()),
    cpuModel: /^model name\s*:\s*(.*)$/m.exec(cpuinfo)?.[1] ?? os.cpus()[0]?.model ?? 'unknown',
    totalMemoryGiB: round(os.totalmem() / 1024 ** 3),
    platform: `${os.type()} ${os.release()} ${os.arch()}`,
    node: process.version,
    clockTicks: CLOCK_TICKS,
    loadAverage1mAtStart: round(os.loadavg()[0] ?? 0, 2),
  };
  say(`Machine: ${machine.cpuModel}, nproc ${machine.nproc}, ${machine.totalMemoryGiB} GiB, ${machine.platform}`);
  say(
    `Code: ${git.commit}${git.uncommittedFiles.length ? ` plus uncommitted ${git.uncommittedFiles.join(', ')}` : ''}`,
  );
  say(
    `Settings: workers ${WORKER_COUNTS.join('/')}, API processes ${API_PROCESSES}, ${CONCURRENCY} in flight, ` +
      `warm-up ${WARMUP_S} s, phases ${PHASE_S} s (baselines ${BASELINE_S} s), ${SUBSCRIPTIONS} subscriptions ` +
      `on a ${BILLING_DAY_S} s billing day`,
  );

  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.on(signal, () => {
      // SIGTERM to the cluster stops its children; killing it outright would orphan them.
      say(`\nGot ${signal}: stopping the cluster...`);
      void (currentCluster?.stop() ?? Promise.resolve()).finally(() => process.exit(130));
    });
  }

  const results: Array<{ workers: number; phases: PhaseResult[]; extra: Record<string, unknown> }> = [];
  for (const workers of WORKER_COUNTS) results.push({ workers, ...(await runCluster(workers)) });

  const table = markdown(results);
  const output = {
    date: startedAt.toISOString(),
    finishedAt: new Date().toISOString(),
    machine,
    git,
    settings: {
      workerCounts: WORKER_COUNTS,
      apiProcesses: API_PROCESSES,
      concurrency: CONCURRENCY,
      warmupS: WARMUP_S,
      phaseS: PHASE_S,
      baselineS: BASELINE_S,
      subscriptions: SUBSCRIPTIONS,
      billingDayS: BILLING_DAY_S,
    },
    results,
  };
  fs.mkdirSync(OUT_DIR, { recursive: true });
  fs.writeFileSync(path.join(OUT_DIR, 'capacity-latest.json'), `${JSON.stringify(output, null, 2)}\n`);
  const header =
    `# bench:capacity ${startedAt.toISOString()}\n\n` +
    `Machine: ${machine.cpuModel}, nproc ${machine.nproc}, ${machine.totalMemoryGiB} GiB RAM, ${machine.platform}, ` +
    `Node ${machine.node}. Code: ${git.commit.slice(0, 7)}. ${CONCURRENCY} in flight, ${WARMUP_S} s warm-up, ` +
    `${PHASE_S} s phases (baselines ${BASELINE_S} s), ${API_PROCESSES} API processes.\n\n`;
  fs.writeFileSync(path.join(OUT_DIR, 'capacity-latest.md'), `${header}${table}\n`);
  say(`\n${table}\n\nWrote ${path.relative(ROOT, path.join(OUT_DIR, 'capacity-latest.json'))} and capacity-latest.md.`);
  const failed = results.some((r) => r.phases.some((p) => p.phase.startsWith('renewal') && p.failed > 0));
  process.exit(failed ? 1 : 0);
}

main().catch((err: unknown) => {
  say(`bench:capacity failed: ${(err as Error).stack ?? String(err)}`);
  process.exit(1);
});
