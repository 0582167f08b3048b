import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { Client, Connection } from '@temporalio/client';
import { temporal as proto } from '@temporalio/proto';
import { startMailCatcher } from '../dev/mail/catcher';
import { loadConfig } from '../src/config';
import { workflowCacheSettings } from '../src/temporal/workflowCache';
import { subscriptionWorkflowId } from '../workflows/subscriptionApi';
import { startFloor, timerStorm, type TimerStormFloor } from './floor/scenarios';
import { evaluateTargets, formatTargets } from './targets';
import {
  BENCH_GROUP,
  OUT_DIR,
  ROOT,
  abort,
  children,
  cpuBetween,
  cpuSecondsByGroup,
  envInt,
  formatCpu,
  freePorts,
  getOk,
  beginRun,
  buildForBench,
  onTeardown,
  rssByGroup,
  sampleCpu,
  say,
  settledLedger,
  sleep,
  spawnChild,
  startServices,
  tail,
  TEMPORAL_KIND,
  teardown,
  waitFor,
  workerEnv,
  workerNodeArgs,
  type CpuSample,
} from './stack';

/**
 * `npm run bench:subscriptions`: N subscriptions on ONE worker process, created through the API,
 * then all renewing at once. A throw-away stack as `npm run bench` starts it (embedded PostgreSQL,
 * the in-memory Temporal dev server, the sandbox, the API and one worker as child processes), plus
 * an SMTP catcher in this process (every paid invoice sends a receipt email).
 *
 *   0. warm-up: W subscriptions (no renewal during the run) to measure the creation rate (after
 *      the first wave of C), then cancelled (DELETE ?notify=false): exactly N are alive afterwards
 *   1. creation: N token-flow POST /subscriptions, C in flight, each until it answers `active`
 *   2. alive: Temporal visibility count of running subscription workflows once all are created
 *   3. worker RSS: sampled every second from /proc for the whole run; idle = all N alive, waiting
 *      on their period timers (just before the storm); peak = the highest sample, and VmHWM
 *   4. renewal storm: every subscription's 2nd period falls due within one billing day of the
 *      same instant T; measured from the first due time to the last 2nd invoice paid (PostgreSQL),
 *      then the money check (sandbox ledger captures vs paid invoices)
 *      The checkout probe: one token POST /payments at a time, one a second, through the idle phase
 *      and again through the storm: a checkout's latency while renewals are due, beside idle
 *      (subscriptions run on their own task queue: src/temporal/taskQueues.ts). Each probe
 *      payment must answer `succeeded` and show one capture in the ledger. Beside it the create
 *      probe: one token POST /subscriptions at a time, one a second, each until `active` (its first
 *      charge queues behind the renewals: a 503 after the API's wait is counted as another answer);
 *      its first invoices are in the money check.
 *   5. history: historyLength of a sample of subscription workflows (max / mean), one history's
 *      events by type, and one subscription with a 1-billing-day interval renewing every
 *      BILLING_DAY_SECONDS until its workflow has continued as new a few times (runs < 1,000 events)
 *   6. the floor (bench/floor/), after the history sample and before the continue-as-new demo:
 *      BENCH_FLOOR_STORM_N minimal workflows on the same Temporal server, run by their own worker
 *      process (the product worker's NODE_OPTIONS), sleep until one instant, then each runs one
 *      no-op local activity; charges/s = N / (that instant to the last close). The summary ends
 *      with issue 12's `Targets` block for this bench (bench/targets.ts), each line met or MISSED.
 *
 * How everything falls due at once: BILLING_DAY_SECONDS is global (1 s by default here), so each
 * subscription gets a first phase of ONE period lasting k billing days, k chosen when it is sent
 * so that the period ends at T (k = ceil((T - now) / day)), then an evergreen phase of 3650 days
 * (so there is no third invoice during the run). T is set after the warm-up from its creation
 * rate: start of creation + N / rate x BENCH_SUBS_SAFETY_PCT % + BENCH_SUBS_IDLE_S.
 *
 * Prints a summary and writes bench/.out/subscriptions-latest.json. Nothing is cancelled at the
 * end: the whole stack is torn down (children, Temporal, PostgreSQL, the temp dir), even on error.
 * Exit code 1 if the money check fails, the storm does not complete, or the run breaks.
 *
 * Knobs (env): BENCH_SUBS_N (1000), BENCH_SUBS_CONCURRENCY (20), BENCH_SUBS_WARMUP (100),
 * BENCH_SUBS_BILLING_DAY_S (1), BENCH_SUBS_SAFETY_PCT (115), BENCH_SUBS_IDLE_S (30),
 * BENCH_SUBS_DUE_IN_S (0 = from the warm-up rate; else T = creation start + this),
 * BENCH_SUBS_CHECKOUT_PAUSE_MS (1000; 0 turns the checkout probe off), BENCH_SUBS_CREATE_PAUSE_MS (1000;
 * 0 turns the create probe off),
 * BENCH_SUBS_STORM_TIMEOUT_S (900), BENCH_SUBS_HISTORY_SAMPLE (20), BENCH_SUBS_CAN_RUNS (2: how
 * many continue-as-new the demo subscription must show; 0 skips it), BENCH_SUBS_CAN_TIMEOUT_S
 * (300), BENCH_SUBS_WORKER_NODE_OPTIONS ('': NODE_OPTIONS for the worker only, e.g.
 * --max-old-space-size=6144; the Temporal SDK sizes its default workflow cache from the heap
 * limit), BENCH_SUBS_CPU_PROF (0; 1 runs the worker with --cpu-prof into
 * bench/.out/profiles/subscriptions-worker), BENCH_SUBS_TIMEOUT_S (the watchdog; default from N),
 * BENCH_FLOOR (1; 0 skips the floor, and its target line is then MISSED), BENCH_FLOOR_STORM_N (N),
 * BENCH_FLOOR_STORM_DUE_IN_S (10 + N / 100: T = first start + this), BENCH_FLOOR_STORM_TIMEOUT_S (300),
 * BENCH_TEMPORAL (dev; server: the real Temporal server on PostgreSQL, see bench/stack.ts),
 * BENCH_TEMPORAL_METRICS_PORT (the dev server's /metrics port, bench/stack.ts),
 * BENCH_SOURCES (0; 1 runs the sources through tsx instead of the production build, bench/stack.ts).
 */

const N = envInt('BENCH_SUBS_N', 1000);
const CONCURRENCY = envInt('BENCH_SUBS_CONCURRENCY', 20);
const WARMUP = envInt('BENCH_SUBS_WARMUP', 100, 10);
const BILLING_DAY_S = envInt('BENCH_SUBS_BILLING_DAY_S', 1);
const SAFETY_PCT = envInt('BENCH_SUBS_SAFETY_PCT', 115, 100);
const IDLE_S = envInt('BENCH_SUBS_IDLE_S', 30);
const DUE_IN_S = envInt('BENCH_SUBS_DUE_IN_S', 0, 0);
const STORM_TIMEOUT_S = envInt('BENCH_SUBS_STORM_TIMEOUT_S', 900);
const HISTORY_SAMPLE = envInt('BENCH_SUBS_HISTORY_SAMPLE', 20);
const CAN_RUNS = envInt('BENCH_SUBS_CAN_RUNS', 2, 0);
const CAN_TIMEOUT_S = envInt('BENCH_SUBS_CAN_TIMEOUT_S', 300);
/** The checkout probe's pause between two token payments (0 turns the probe off). */
const CHECKOUT_PAUSE_MS = envInt('BENCH_SUBS_CHECKOUT_PAUSE_MS', 1000, 0);
/**
 * The create probe's pause between two token POST /subscriptions (0 turns it off). Its subscriptions
 * bill every EVERGREEN_DAYS, so none renews during the run.
 */
const CREATE_PAUSE_MS = envInt('BENCH_SUBS_CREATE_PAUSE_MS', 1000, 0);
/**
 * The worker's Node flags as the product starts it (WORKER_NODE_ARGS, compiled with the build:
 * bench/stack.ts) unless the knob says otherwise. Known once the build is made.
 */
const workerNodeOptions = () => process.env.BENCH_SUBS_WORKER_NODE_OPTIONS ?? workerNodeArgs().join(' ');
/** BENCH_SUBS_CPU_PROF=1 runs the worker with --cpu-prof (into bench/.out/profiles/subscriptions-worker). */
const CPU_PROF = process.env.BENCH_SUBS_CPU_PROF === '1';
/** Stack ~60 s, warm-up, creation at >= 4/s, idle, the storm, the demo, checks and teardown. */
/** BENCH_FLOOR=0 skips the timer-storm floor. */
const FLOOR = process.env.BENCH_FLOOR !== '0';
/** The floor storm at the product storm's count by default: the storm lines compare both at 10,000. */
const FLOOR_STORM_N = envInt('BENCH_FLOOR_STORM_N', N);
/** Starts run at ~150/s here; 100/s leaves room, plus 10 s. */
const FLOOR_STORM_DUE_IN_S = envInt('BENCH_FLOOR_STORM_DUE_IN_S', 10 + Math.ceil(FLOOR_STORM_N / 100));
const FLOOR_STORM_TIMEOUT_S = envInt('BENCH_FLOOR_STORM_TIMEOUT_S', 300);
const RUN_TIMEOUT_S = envInt(
  'BENCH_SUBS_TIMEOUT_S',
  300 +
    Math.ceil((WARMUP + N) / 4) +
    IDLE_S +
    STORM_TIMEOUT_S +
    (CAN_RUNS > 0 ? CAN_TIMEOUT_S : 0) +
    (FLOOR ? 60 + FLOOR_STORM_DUE_IN_S + FLOOR_STORM_TIMEOUT_S : 0),
);

/** The storm (and create probe) subscriptions' evergreen interval: no third invoice while the run lasts. */
const EVERGREEN_DAYS = 3650;
const AMOUNT = 10;
const CLIENT_TIMEOUT_MS = 60_000;
const RSS_INTERVAL_MS = 1000;

// ---------------------------------------------------------------------------------------------
// Small helpers

/** Nearest-rank percentile of ascending values. */
function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return 0;
  const rank = Math.min(sorted.length, Math.max(1, Math.ceil((p / 100) * sorted.length)));
  return sorted[rank - 1]!;
}

const round = (n: number, digits = 1) => Number(n.toFixed(digits));
const mib = (kib: number) => round(kib / 1024, 0);

/** The V8 heap limit a node process gets with these NODE_OPTIONS, and the SDK's default cache size. */
function workerHeapAndDefaultCache(nodeOptions: string): { heapLimitMiB: number; defaultMaxCachedWorkflows: number } {
  const out = execFileSync(
    process.execPath,
    ['-e', 'process.stdout.write(String(require("v8").getHeapStatistics().heap_size_limit / 1048576))'],
    { encoding: 'utf8', env: { ...process.env, NODE_OPTIONS: nodeOptions } },
  );
  const heapLimitMiB = Number(out);
  // @temporalio/worker 1.24 worker-options.js, reuseV8Context (the default): 600 per GiB of heap above 200 MiB.
  return {
    heapLimitMiB: round(heapLimitMiB, 0),
    defaultMaxCachedWorkflows: Math.max(Math.floor((Math.max(heapLimitMiB - 200, 0) * 600) / 1024), 10),
  };
}

// ---------------------------------------------------------------------------------------------
// Resource sampling: one /proc scan a second (CPU ticks and RSS of every process of the stack).

interface RssPoint {
  t: number;
  phase: string;
  workerKiB: number;
  apiKiB: number;
  temporalKiB: number;
  postgresKiB: number;
}

function readStatusKiB(pid: number, field: 'VmRSS' | 'VmHWM'): number {
  try {
    const m = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) : 0;
  } catch {
    return 0;
  }
}

class Sampler {
  readonly points: RssPoint[] = [];
  phase = 'start-up';
  last: CpuSample = sampleCpu();
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly workerPid: number) {}

  start(): void {
    this.timer = setInterval(() => this.tick(), RSS_INTERVAL_MS);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
  }

  tick(): RssPoint {
    this.last = sampleCpu();
    const rss = rssByGroup(this.last);
    const point = {
      t: Date.now(),
      phase: this.phase,
      // The worker alone from /proc/<pid>/status (what the target is about).
      workerKiB: readStatusKiB(this.workerPid, 'VmRSS'),
      apiKiB: rss.api ?? 0,
      temporalKiB: rss.temporal ?? 0,
      postgresKiB: rss.postgres ?? 0,
    };
    this.points.push(point);
    return point;
  }

  peak(phase?: string): RssPoint | undefined {
    const points = phase ? this.points.filter((p) => p.phase === phase) : this.points;
    return points.reduce<RssPoint | undefined>((a, b) => (!a || b.workerKiB > a.workerKiB ? b : a), undefined);
  }

  workerHwmKiB(): number {
    return readStatusKiB(this.workerPid, 'VmHWM');
  }
}

/** CPU cores per group over a phase, and CPU ms per unit of work (stack = every process but the bench's). */
function phaseCpu(before: CpuSample, after: CpuSample, seconds: number, units: number) {
  const cores = cpuBetween(before, after, seconds);
  const perUnitMs: Record<string, number> = {};
  for (const [group, c] of Object.entries(cores)) {
    if (group === 'machine (all processes)' || group === 'outside this benchmark') continue;
    perUnitMs[group] = units > 0 ? round((c * seconds * 1000) / units, 1) : 0;
  }
  const stack = Object.entries(perUnitMs)
    .filter(([g]) => g !== BENCH_GROUP)
    .reduce((a, [, v]) => a + v, 0);
  return { seconds: round(seconds, 1), cores, cpuMsPerUnit: perUnitMs, stackCpuMsPerUnit: round(stack, 1) };
}

// ---------------------------------------------------------------------------------------------
// The API calls

interface Created {
  externalId: string;
  id: string;
  /** The first phase's length in billing days (storm subscriptions). */
  k: number;
  ms: number;
  /** performance.now() when it answered. */
  doneAt: number;
  tries: number;
}

interface CreateFailure {
  externalId: string;
  error: string;
  tries: number;
}

async function postJson(
  url: string,
  headers: Record<string, string>,
  body: unknown,
): Promise<{ status: number; json: Record<string, unknown> | null; text: string }> {
  const res = await fetch(url, {
    method: 'POST',
    headers,
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(CLIENT_TIMEOUT_MS),
  });
  const text = await res.text();
  let json: Record<string, unknown> | null = null;
  try {
    json = JSON.parse(text) as Record<string, unknown>;
  } catch {
    // kept as text
  }
  return { status: res.status, json, text };
}

/**
 * Creates `count` subscriptions, `concurrency` in flight; `bodyOf(i, now)` builds each body when
 * it is sent. A subscription counts once it answers 200 `active`; a 5xx, 409 or network error is
 * retried (same body, so the same externalId: the API returns the one it made) up to 4 tries.
 */
async function createMany(
  apiUrl: string,
  headers: Record<string, string>,
  count: number,
  concurrency: number,
  bodyOf: (i: number, now: number) => { externalId: string; k: number; body: Record<string, unknown> },
  progress?: (done: number) => void,
): Promise<{ created: Created[]; failed: CreateFailure[]; seconds: number; otherAnswers: Record<string, number> }> {
  const created: Created[] = [];
  const failed: CreateFailure[] = [];
  const otherAnswers: Record<string, number> = {};
  let next = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: Math.min(concurrency, count) }, async () => {
      for (;;) {
        const i = next++;
        if (i >= count) return;
        const { externalId, k, body } = bodyOf(i, Date.now());
        let lastError = '';
        let done = false;
        for (let tries = 1; tries <= 4 && !done; tries++) {
          const started = performance.now();
          try {
            const res = await postJson(`${apiUrl}/subscriptions`, headers, body);
            const ms = performance.now() - started;
            if (res.status === 200 && res.json?.status === 'active' && typeof res.json.id === 'string') {
              created.push({ externalId, id: res.json.id, k, ms, doneAt: performance.now(), tries });
              done = true;
              break;
            }
            const code = (res.json?.code as string | undefined) ?? String(res.json?.status ?? res.text.slice(0, 80));
            lastError = `${res.status} ${code}`;
            otherAnswers[lastError] = (otherAnswers[lastError] ?? 0) + 1;
            if (res.status < 500 && res.status !== 409 && res.status !== 200) break; // not worth a retry
          } catch (err) {
            lastError = (err as Error).message;
            otherAnswers[lastError] = (otherAnswers[lastError] ?? 0) + 1;
          }
          await sleep(1000);
        }
        if (!done) failed.push({ externalId, error: lastError, tries: 4 });
        progress?.(created.length + failed.length);
      }
    }),
  );
  return { created, failed, seconds: (performance.now() - t0) / 1000, otherAnswers };
}

interface ProbeResult {
  /** Latency of each request that answered 200 with the awaited status, ascending, ms. */
  ms: number[];
  ids: string[];
  /** Anything else, by status and code. */
  otherAnswers: Record<string, number>;
}

/** What a probe sends: a token payment (checkout) or a token subscription (a create). */
type ProbeKind = 'payment' | 'subscription';

const PROBES: Record<
  ProbeKind,
  { path: string; pauseMs: number; awaited: string; body: (externalId: string) => Record<string, unknown> }
> = {
  payment: {
    path: '/payments',
    pauseMs: CHECKOUT_PAUSE_MS,
    awaited: 'succeeded',
    body: (externalId) => ({
      amount: AMOUNT,
      currency: 'USD',
      externalId,
      customer: { email: 'checkout@example.com', name: 'Checkout Probe' },
      cardToken: 'tok_success',
    }),
  },
  subscription: {
    path: '/subscriptions',
    pauseMs: CREATE_PAUSE_MS,
    awaited: 'active',
    body: (externalId) => ({
      amount: AMOUNT,
      currency: 'USD',
      billingIntervalDays: EVERGREEN_DAYS,
      externalId,
      customer: { email: 'create@example.com', name: 'Create Probe' },
      cardToken: 'tok_success',
    }),
  },
};

/**
 * One request at a time, the kind's pause apart, until `stop()` says so: what a merchant's
 * checkout (or a new subscription's create) sees while the worker is idle or renewing. The
 * externalIds (`bchk-`, `bprobe-`) stay apart from the storm's (`bsub-`).
 */
async function requestProbe(
  kind: ProbeKind,
  apiUrl: string,
  headers: Record<string, string>,
  tag: string,
  stop: () => boolean,
): Promise<ProbeResult> {
  const { path, pauseMs, awaited, body } = PROBES[kind];
  const probe: ProbeResult = { ms: [], ids: [], otherAnswers: {} };
  for (let i = 1; pauseMs > 0 && !stop(); i++) {
    const started = performance.now();
    try {
      const res = await postJson(
        `${apiUrl}${path}`,
        headers,
        body(`${kind === 'payment' ? 'bchk' : 'bprobe'}-${tag}-${i}`),
      );
      if (res.status === 200 && res.json?.status === awaited && typeof res.json.id === 'string') {
        probe.ms.push(performance.now() - started);
        probe.ids.push(res.json.id);
      } else {
        const answer = `${res.status} ${(res.json?.code as string | undefined) ?? String(res.json?.status)}`;
        probe.otherAnswers[answer] = (probe.otherAnswers[answer] ?? 0) + 1;
      }
    } catch (err) {
      const answer = (err as Error).message;
      probe.otherAnswers[answer] = (probe.otherAnswers[answer] ?? 0) + 1;
    }
    await sleep(pauseMs);
  }
  probe.ms.sort((a, b) => a - b);
  return probe;
}

function probeSummary(probe: ProbeResult) {
  return {
    n: probe.ms.length,
    p50Ms: round(percentile(probe.ms, 50), 1),
    p90Ms: round(percentile(probe.ms, 90), 1),
    maxMs: round(percentile(probe.ms, 100), 1),
    otherAnswers: probe.otherAnswers,
  };
}

// ---------------------------------------------------------------------------------------------

async function main(): Promise<void> {
  const { startedAt, git, machine, watchdog } = beginRun(RUN_TIMEOUT_S * 1000);
  // The production build (unless BENCH_SOURCES=1): the worker's flags name its compiled preload.
  await buildForBench();
  const WORKER_NODE_OPTIONS = workerNodeOptions();
  const cache = workerHeapAndDefaultCache(WORKER_NODE_OPTIONS);
  // The worker reads the same environment (childEnv below spreads process.env).
  const workerCache = workflowCacheSettings(loadConfig(process.env));
  say(
    `N = ${N}, concurrency ${CONCURRENCY}, warm-up ${WARMUP}, billing day ${BILLING_DAY_S} s; worker NODE_OPTIONS ` +
      `"${WORKER_NODE_OPTIONS}": V8 heap limit ${cache.heapLimitMiB} MiB; maxCachedWorkflows ` +
      `${workerCache.maxCachedWorkflows}, on the subscription queue ${workerCache.subscriptionMaxCachedWorkflows} ` +
      `with a ${workerCache.subscriptionStickyTimeoutSeconds} s sticky timeout (the SDK's cache for this heap ` +
      `would be ${cache.defaultMaxCachedWorkflows})`,
  );

  const [pgPort, temporalPort, apiPort, sandboxPort, smtpPort] = (await freePorts(5)) as [
    number,
    number,
    number,
    number,
    number,
  ];
  const t0 = Date.now();
  const {
    dir,
    logDir,
    pg: pgServer,
    temporal,
    temporalServer,
    merchantId,
    basic,
    postgresVersion,
  } = await startServices({
    pgPort,
    temporalPort,
  });
  // The customer emails (activation, one receipt per paid invoice) go to a catcher in this process.
  const mail = await startMailCatcher({ port: smtpPort, dir: path.join(dir, 'mail') });
  onTeardown('stopping the SMTP catcher', mail.close);

  const apiUrl = `http://127.0.0.1:${apiPort}`;
  const sandboxUrl = `http://127.0.0.1:${sandboxPort}`;
  const childEnv: NodeJS.ProcessEnv = {
    ...process.env,
    DATABASE_URL: pgServer.databaseUrl,
    DATABASE_POOL_MAX: '10',
    TEMPORAL_ADDRESS: temporal.address,
    PORT: String(apiPort),
    SANDBOX_PORT: String(sandboxPort),
    SANDBOX_URL: sandboxUrl,
    SMTP_URL: `smtp://127.0.0.1:${smtpPort}`,
    TEMPORAL_TASK_QUEUE: `bench-subs-${process.pid}`,
    BILLING_DAY_SECONDS: String(BILLING_DAY_S),
    LOG_LEVEL: 'warn',
    DATA_DIR: dir,
  };
  spawnChild('sandbox', 'dev/sandbox/main.ts', childEnv, logDir);
  spawnChild('api', 'src/main/api.ts', childEnv, logDir);
  const worker = spawnChild(
    'worker',
    'src/main/worker.ts',
    { ...childEnv, ...workerEnv(), NODE_OPTIONS: WORKER_NODE_OPTIONS },
    logDir,
    CPU_PROF ? ['--cpu-prof', '--cpu-prof-dir', path.join(OUT_DIR, 'profiles', 'subscriptions-worker')] : [],
  );
  const sampler = new Sampler(worker.process.pid!);
  sampler.start();
  // The floor's bundle is built here, once, while the product processes start.
  const floor = FLOOR
    ? await startFloor({ temporalAddress: temporal.address, dir, logDir, nodeOptions: WORKER_NODE_OPTIONS })
    : undefined;

  const db = new pg.Pool({ connectionString: pgServer.databaseUrl, max: 2 });
  db.on('error', () => undefined); // an idle connection PostgreSQL closes at teardown
  onTeardown('closing the bench pool', () => db.end());
  const connection = await Connection.connect({ address: temporal.address });
  onTeardown('closing the Temporal client', () => connection.close());
  const client = new Client({ connection });

  await waitFor('the API (/readyz)', 60_000, () => getOk(`${apiUrl}/readyz`));
  await waitFor('the sandbox', 30_000, () => getOk(`${sandboxUrl}/_admin/faults`));
  await fetch(`${sandboxUrl}/_admin/faults`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: '{}',
  });
  const headers = { authorization: basic, 'content-type': 'application/json' };
  const runTag = `${Date.now().toString(36)}-${process.pid}`;
  const readyS = (Date.now() - t0) / 1000;
  const atReady = sampler.tick();
  say(
    `Stack ready in ${readyS.toFixed(1)} s (PostgreSQL ${postgresVersion}, Temporal ${temporalServer} at ${temporal.address}); ` +
      `worker RSS ${mib(atReady.workerKiB)} MiB with no workflow`,
  );

  // ---- 0. warm-up: the creation rate, and a first proof that subscriptions charge ----
  sampler.phase = 'warm-up';
  say(`\nWarm-up: ${WARMUP} subscriptions (${CONCURRENCY} in flight)...`);
  const warm = await createMany(apiUrl, headers, WARMUP, CONCURRENCY, (i) => {
    const externalId = `bwarm-${runTag}-${i}`;
    return {
      externalId,
      k: EVERGREEN_DAYS,
      body: {
        amount: AMOUNT,
        currency: 'USD',
        billingIntervalDays: EVERGREEN_DAYS,
        externalId,
        customer: { email: 'customer@example.com' },
        cardToken: 'tok_success',
      },
    };
  });
  if (warm.created.length < CONCURRENCY + 2) {
    throw new Error(`too few warm-up subscriptions answered active: ${JSON.stringify(warm.otherAnswers)}`);
  }
  // The steady rate: after the first wave (cold JIT and pools) has answered.
  const doneAts = warm.created.map((c) => c.doneAt).sort((a, b) => a - b);
  const warmRate = (doneAts.length - CONCURRENCY) / ((doneAts.at(-1)! - doneAts[CONCURRENCY - 1]!) / 1000);
  say(
    `  ${warm.created.length} active in ${warm.seconds.toFixed(1)} s (${(warm.created.length / warm.seconds).toFixed(1)}/s; ` +
      `${warmRate.toFixed(1)}/s after the first ${CONCURRENCY}); cancelling them`,
  );
  await Promise.all(
    warm.created.map(async (c) => {
      for (;;) {
        const res = await fetch(`${apiUrl}/subscriptions/${c.id}?notify=false`, {
          method: 'DELETE',
          headers: { authorization: basic },
          signal: AbortSignal.timeout(CLIENT_TIMEOUT_MS),
        });
        const body = (await res.json()) as { status?: string };
        // 100 at once can meet the key's rate limit: sent again when it says, as a client would.
        if (res.status === 429) {
          await sleep(1000 * Number(res.headers.get('retry-after') ?? 1));
          continue;
        }
        if (res.status !== 200 || body.status !== 'cancelled') throw new Error(`DELETE ${c.id}: ${res.status}`);
        return;
      }
    }),
  );

  // ---- 1. creation: every first period ends at T ----
  const creationStart = Date.now();
  const plannedCreationS = N / warmRate;
  const dueAt =
    creationStart + 1000 * (DUE_IN_S > 0 ? DUE_IN_S : Math.ceil((plannedCreationS * SAFETY_PCT) / 100) + IDLE_S);
  const maxK = Math.ceil((dueAt - creationStart) / 1000 / BILLING_DAY_S);
  if (maxK > 3650) {
    throw new Error(`T is ${maxK} billing days away (max 3650): raise BENCH_SUBS_BILLING_DAY_S`);
  }
  say(
    `\nCreation: ${N} subscriptions, ${CONCURRENCY} in flight; at the warm-up rate that takes ~${plannedCreationS.toFixed(0)} s. ` +
      `Every first period ends at T = creation start + ${((dueAt - creationStart) / 1000).toFixed(0)} s ` +
      `(${new Date(dueAt).toISOString()}).`,
  );
  sampler.phase = 'creation';
  const cpuCreation0 = sampleCpu();
  let lastPrint = Date.now();
  const creation = await createMany(
    apiUrl,
    headers,
    N,
    CONCURRENCY,
    (i, now) => {
      const externalId = `bsub-${runTag}-${i}`;
      const k = Math.max(1, Math.ceil((dueAt - now) / 1000 / BILLING_DAY_S));
      return {
        externalId,
        k,
        body: {
          amount: AMOUNT,
          currency: 'USD',
          billingIntervalDays: EVERGREEN_DAYS,
          externalId,
          customer: { email: 'customer@example.com' },
          cardToken: 'tok_success',
          phases: [{ name: 'first', iterations: 1, amount: AMOUNT, billingIntervalDays: k }],
        },
      };
    },
    (done) => {
      if (Date.now() - lastPrint < 10_000) return;
      lastPrint = Date.now();
      const s = (Date.now() - creationStart) / 1000;
      say(
        `  ${done}/${N} after ${s.toFixed(0)} s (${(done / s).toFixed(1)}/s); worker RSS ` +
          `${mib(sampler.points.at(-1)?.workerKiB ?? 0)} MiB`,
      );
    },
  );
  const cpuCreation1 = sampleCpu();
  const creationEnd = Date.now();
  const createdOk = creation.created.length;
  const latencies = creation.created.map((c) => c.ms).sort((a, b) => a - b);
  const creationResult = {
    requested: N,
    active: createdOk,
    failed: creation.failed.length,
    failures: creation.failed.slice(0, 10),
    retried: creation.created.filter((c) => c.tries > 1).length,
    otherAnswers: creation.otherAnswers,
    seconds: round(creation.seconds, 1),
    perSecond: round(createdOk / creation.seconds, 1),
    latencyMs: {
      p50: round(percentile(latencies, 50)),
      p90: round(percentile(latencies, 90)),
      p99: round(percentile(latencies, 99)),
      max: round(percentile(latencies, 100)),
    },
    secondsLeftBeforeT: round((dueAt - creationEnd) / 1000, 1),
    cpu: phaseCpu(cpuCreation0, cpuCreation1, (creationEnd - creationStart) / 1000, createdOk),
  };
  say(
    `  ${createdOk} active, ${creation.failed.length} failed, in ${creationResult.seconds} s: ${creationResult.perSecond}/s; ` +
      `latency p50 ${creationResult.latencyMs.p50} ms, p99 ${creationResult.latencyMs.p99} ms; ` +
      `${creationResult.secondsLeftBeforeT} s left before T`,
  );
  for (const [answer, n] of Object.entries(creation.otherAnswers)) say(`    other answer x${n}: ${answer}`);
  say(
    `  CPU (cores): ${formatCpu(creationResult.cpu.cores)}; stack CPU per subscription ${creationResult.cpu.stackCpuMsPerUnit} ms`,
  );
  if (creationResult.secondsLeftBeforeT < 0) {
    say('  (creation overran T: the first renewals fell due while subscriptions were still being created)');
  }

  // ---- 2. alive: running subscription workflows (visibility is eventually consistent) ----
  sampler.phase = 'after creation';
  const aliveQuery = 'WorkflowType="subscriptionWorkflow" AND ExecutionStatus="Running"';
  let alive = 0;
  const aliveDeadline = Date.now() + 60_000;
  while (Date.now() < aliveDeadline) {
    alive = (await client.workflow.count(aliveQuery)).count;
    if (alive >= createdOk) break;
    await sleep(1000);
  }
  const aliveAfterS = round((Date.now() - creationEnd) / 1000, 1);
  say(`\nAlive: ${alive} running subscription workflows (${aliveQuery}), ${aliveAfterS} s after creation ended`);

  // A sample of histories before the storm (creation + first charge, waiting on the period timer).
  const storm = creation.created;
  const sampleIds = Array.from(
    { length: Math.min(HISTORY_SAMPLE, storm.length) },
    (_, i) => storm[Math.floor((i * storm.length) / Math.min(HISTORY_SAMPLE, storm.length))]!.id,
  );
  const describeSample = async () =>
    Promise.all(
      sampleIds.map(async (id) => {
        const d = await client.workflow.getHandle(subscriptionWorkflowId(id)).describe();
        return { id, historyLength: d.historyLength, runId: d.runId, status: d.status.name };
      }),
    );
  const historyIdle = await describeSample();

  // ---- 3. idle RSS: all N alive, waiting on their timers ----
  sampler.phase = 'idle';
  const idleOver = () => Date.now() >= dueAt - 3000;
  const idleProbe = requestProbe('payment', apiUrl, headers, `${runTag}-idle`, idleOver);
  const idleCreateProbe = requestProbe('subscription', apiUrl, headers, `${runTag}-idle`, idleOver);
  const idleSamples: RssPoint[] = [];
  while (Date.now() < dueAt - 2000) {
    await sleep(Math.min(1000, Math.max(0, dueAt - 2000 - Date.now())));
    idleSamples.push(sampler.tick());
  }
  const idleCheckout = await idleProbe;
  const idleCreates = await idleCreateProbe;
  const idleLast = idleSamples.at(-1) ?? sampler.tick();
  const idleWindow = idleSamples.filter((p) => p.t >= dueAt - 12_000);
  const idleMedianKiB = [...idleWindow.map((p) => p.workerKiB)].sort((a, b) => a - b)[
    Math.floor(idleWindow.length / 2)
  ];
  say(
    `Idle (all alive, waiting on their timers): worker RSS ${mib(idleLast.workerKiB)} MiB just before T ` +
      `(median of the last ${idleWindow.length} s: ${mib(idleMedianKiB ?? idleLast.workerKiB)} MiB); ` +
      `Temporal ${mib(idleLast.temporalKiB)} MiB, API ${mib(idleLast.apiKiB)} MiB`,
  );

  // ---- 4. the renewal storm ----
  sampler.phase = 'storm';
  const prefix = `bsub-${runTag}-%`;
  const countPaid = async (): Promise<number> => {
    const { rows } = await db.query<{ n: string }>(
      `select count(*)::text as n from invoices i join subscriptions s on s.id = i.subscription_id
        where s.external_id like $1 and i.period_index = 1 and i.status = 'paid'`,
      [prefix],
    );
    return Number(rows[0]?.n ?? 0);
  };
  // Due: every storm subscription whose first period was paid, including any whose creation
  // answered late (a 503 under load, then active): the API's answers alone would undercount.
  const { rows: dueRows } = await db.query<{ n: string }>(
    `select count(*)::text as n from invoices i join subscriptions s on s.id = i.subscription_id
      where s.external_id like $1 and i.period_index = 0 and i.status = 'paid'`,
    [prefix],
  );
  const stormDue = Number(dueRows[0]?.n ?? createdOk);
  while (Date.now() < dueAt - 500) await sleep(100);
  const cpuStorm0 = sampleCpu();
  const stormT0 = Date.now();
  say(`\nStorm: ${stormDue} renewals fall due from ${new Date(dueAt).toISOString()}...`);
  let paid = 0;
  let stormOver = false;
  const stormProbe = requestProbe('payment', apiUrl, headers, `${runTag}-storm`, () => stormOver);
  const stormCreateProbe = requestProbe('subscription', apiUrl, headers, `${runTag}-storm`, () => stormOver);
  let lastStormPrint = Date.now();
  const stormTimeline: Array<{ s: number; paid: number }> = [];
  while (Date.now() - stormT0 < STORM_TIMEOUT_S * 1000) {
    paid = await countPaid();
    stormTimeline.push({ s: round((Date.now() - dueAt) / 1000, 1), paid });
    if (paid >= stormDue) break;
    if (Date.now() - lastStormPrint >= 10_000) {
      lastStormPrint = Date.now();
      say(
        `  ${paid}/${stormDue} paid at T+${((Date.now() - dueAt) / 1000).toFixed(0)} s; worker RSS ` +
          `${mib(sampler.points.at(-1)?.workerKiB ?? 0)} MiB`,
      );
    }
    await sleep(500);
  }
  const cpuStorm1 = sampleCpu();
  stormOver = true;
  const stormCheckout = await stormProbe;
  const stormCreates = await stormCreateProbe;
  const stormSeenS = (Date.now() - dueAt) / 1000;
  const { rows: stormRows } = await db.query<{
    first_due: Date;
    last_due: Date;
    last_paid: Date | null;
    paid: string;
    lag_ms: number[] | null;
  }>(
    `select min(i0.period_end) as first_due, max(i0.period_end) as last_due, max(i1.paid_at) as last_paid,
            count(i1.paid_at)::text as paid,
            array_agg(extract(epoch from (i1.paid_at - i0.period_end)) * 1000 order by i1.paid_at - i0.period_end)
              filter (where i1.paid_at is not null) as lag_ms
       from subscriptions s
       join invoices i0 on i0.subscription_id = s.id and i0.period_index = 0
       left join invoices i1 on i1.subscription_id = s.id and i1.period_index = 1 and i1.status = 'paid'
      where s.external_id like $1`,
    [prefix],
  );
  const sr = stormRows[0]!;
  const lags = (sr.lag_ms ?? []).map(Number);
  const stormSeconds = sr.last_paid ? (sr.last_paid.getTime() - sr.first_due.getTime()) / 1000 : null;
  const stormComplete = Number(sr.paid) >= stormDue;
  const stormResult = {
    due: stormDue,
    paid: Number(sr.paid),
    complete: stormComplete,
    firstDue: sr.first_due.toISOString(),
    lastDue: sr.last_due.toISOString(),
    dueSpreadS: round((sr.last_due.getTime() - sr.first_due.getTime()) / 1000, 2),
    lastPaid: sr.last_paid?.toISOString() ?? null,
    /** First due time to the last 2nd invoice paid, from PostgreSQL. */
    seconds: stormSeconds === null ? null : round(stormSeconds, 1),
    chargesPerSecond: stormSeconds ? round(Number(sr.paid) / stormSeconds, 1) : null,
    /** Seen by the bench's polling (T to the poll that counted all of them). */
    seenAfterS: round(stormSeenS, 1),
    lagMs: {
      p50: round(percentile(lags, 50), 0),
      p90: round(percentile(lags, 90), 0),
      p99: round(percentile(lags, 99), 0),
      max: round(percentile(lags, 100), 0),
    },
    cpu: phaseCpu(cpuStorm0, cpuStorm1, (Date.now() - stormT0) / 1000, Math.max(1, Number(sr.paid))),
    timeline: stormTimeline.filter((_, i) => i % 4 === 0 || i === stormTimeline.length - 1),
  };
  say(
    `  ${stormResult.paid}/${stormDue} due charges settled in ${stormResult.seconds} s ` +
      `(${stormResult.chargesPerSecond} charges/s; due spread ${stormResult.dueSpreadS} s; ` +
      `due-to-paid p50 ${(stormResult.lagMs.p50 / 1000).toFixed(1)} s, p99 ${(stormResult.lagMs.p99 / 1000).toFixed(1)} s, ` +
      `max ${(stormResult.lagMs.max / 1000).toFixed(1)} s)${stormComplete ? '' : ' -- INCOMPLETE'}`,
  );
  say(
    `  CPU (cores): ${formatCpu(stormResult.cpu.cores)}; stack CPU per renewal ${stormResult.cpu.stackCpuMsPerUnit} ms`,
  );
  const checkout = { idle: probeSummary(idleCheckout), storm: probeSummary(stormCheckout) };
  const creates = { idle: probeSummary(idleCreates), storm: probeSummary(stormCreates) };
  const probeLine = (p: ReturnType<typeof probeSummary>, what: string) =>
    `p50 ${p.p50Ms} ms, p90 ${p.p90Ms} ms, max ${p.maxMs} ms (${p.n} ${what}` +
    `${Object.keys(p.otherAnswers).length ? `; other answers ${JSON.stringify(p.otherAnswers)}` : ''})`;
  if (CHECKOUT_PAUSE_MS > 0) {
    say(`  Checkout, one token POST at a time: idle ${probeLine(checkout.idle, 'payments')}`);
    say(`                                      during the storm ${probeLine(checkout.storm, 'payments')}`);
  }
  if (CREATE_PAUSE_MS > 0) {
    say(`  Subscription creates, one at a time: idle ${probeLine(creates.idle, 'active')}`);
    say(`                                       during the storm ${probeLine(creates.storm, 'active')}`);
  }
  sampler.phase = 'after';

  // ---- money: sandbox ledger captures vs paid invoices (every subscription of the run) ----
  await sleep(2000); // receipts and any charge still in flight
  const entries = await settledLedger(sandboxUrl, 30_000);
  const { rows: paidRows } = await db.query<{ id: string; subscription_id: string }>(
    `select i.id, i.subscription_id from invoices i where i.merchant_id = $1 and i.status = 'paid'`,
    [merchantId],
  );
  const { rows: perSub } = await db.query<{ bad: string; subs: string }>(
    `select count(*) filter (where paid <> 2)::text as bad, count(*)::text as subs from (
       select s.id, count(i.id) filter (where i.status = 'paid') as paid from subscriptions s
         left join invoices i on i.subscription_id = s.id where s.external_id like $1 group by s.id) x`,
    [prefix],
  );
  const captures = entries.filter((e) => e.type === 'capture' && e.metadata?.subscriptionId);
  // The checkout probe's payments: each captured exactly once.
  const probeIds = new Set([...idleCheckout.ids, ...stormCheckout.ids]);
  const probeCaptures = new Map<string, number>();
  for (const e of entries) {
    const id = e.metadata?.paymentId;
    if (e.type === 'capture' && e.status === 'succeeded' && id && probeIds.has(id)) {
      probeCaptures.set(id, (probeCaptures.get(id) ?? 0) + 1);
    }
  }
  const probePaymentsNotCapturedOnce = [...probeIds].filter((id) => probeCaptures.get(id) !== 1).length;
  const succeeded = captures.filter((e) => e.status === 'succeeded');
  const perInvoice = new Map<string, number>();
  for (const c of succeeded) {
    const inv = c.metadata?.invoiceId ?? '(none)';
    perInvoice.set(inv, (perInvoice.get(inv) ?? 0) + 1);
  }
  const paidIds = new Set(paidRows.map((r) => r.id));
  const duplicates = [...perInvoice.values()].filter((n) => n > 1).length;
  const capturedNotPaid = [...perInvoice.keys()].filter((id) => !paidIds.has(id)).length;
  const paidNotCaptured = [...paidIds].filter((id) => !perInvoice.has(id)).length;
  const moneyCheck = {
    succeededCaptures: succeeded.length,
    otherCaptures: captures.length - succeeded.length,
    paidInvoices: paidRows.length,
    invoicesCapturedTwice: duplicates,
    capturesWithoutPaidInvoice: capturedNotPaid,
    paidInvoicesWithoutCapture: paidNotCaptured,
    stormSubscriptionsWithoutExactlyTwoPaid: Number(perSub[0]?.bad ?? -1),
    stormSubscriptions: Number(perSub[0]?.subs ?? 0),
    checkoutPayments: probeIds.size,
    checkoutPaymentsNotCapturedOnce: probePaymentsNotCapturedOnce,
    ok:
      succeeded.length === paidRows.length &&
      duplicates === 0 &&
      capturedNotPaid === 0 &&
      paidNotCaptured === 0 &&
      probePaymentsNotCapturedOnce === 0 &&
      Number(perSub[0]?.bad ?? -1) === 0,
  };
  say(
    `\nMoney check: ${succeeded.length} succeeded captures, ${paidRows.length} paid invoices; ` +
      `${duplicates} invoices captured twice, ${capturedNotPaid} captures without a paid invoice, ` +
      `${paidNotCaptured} paid invoices without a capture; ${moneyCheck.stormSubscriptionsWithoutExactlyTwoPaid} of ` +
      `${moneyCheck.stormSubscriptions} storm subscriptions without exactly 2 paid invoices; ` +
      `${probePaymentsNotCapturedOnce} of ${probeIds.size} checkout payments not captured exactly once. ${moneyCheck.ok ? 'OK' : 'FAILED'}`,
  );

  // ---- 5. history: events per run ----
  const historyAfter = await describeSample();
  const lengths = historyAfter.map((h) => h.historyLength);
  const historyResult = {
    sample: historyAfter.length,
    beforeStorm: {
      max: Math.max(...historyIdle.map((h) => h.historyLength)),
      mean: round(historyIdle.reduce((a, h) => a + h.historyLength, 0) / Math.max(1, historyIdle.length)),
    },
    afterStorm: {
      max: Math.max(...lengths),
      mean: round(lengths.reduce((a, b) => a + b, 0) / Math.max(1, lengths.length)),
    },
    runsChanged: historyAfter.filter((h, i) => h.runId !== historyIdle[i]?.runId).length,
    eventTypes: {} as Record<string, number>,
    sampleWorkflowId: sampleIds[0] ? subscriptionWorkflowId(sampleIds[0]) : null,
  };
  if (sampleIds[0]) {
    const history = await client.workflow.getHandle(subscriptionWorkflowId(sampleIds[0])).fetchHistory();
    for (const e of history.events ?? []) {
      const name = (proto.api.enums.v1.EventType[e.eventType ?? 0] ?? String(e.eventType)).replace(/^EVENT_TYPE_/, '');
      historyResult.eventTypes[name] = (historyResult.eventTypes[name] ?? 0) + 1;
    }
  }
  say(
    `\nHistory (${historyResult.sample} storm workflows): before the storm max ${historyResult.beforeStorm.max} / mean ` +
      `${historyResult.beforeStorm.mean} events; after its renewal max ${historyResult.afterStorm.max} / mean ` +
      `${historyResult.afterStorm.mean} events per run (${historyResult.runsChanged} continued as new)`,
  );
  say(`  ${historyResult.sampleWorkflowId}: ${JSON.stringify(historyResult.eventTypes)}`);
  const renewalTask = await renewalTaskTimings(client, sampleIds);
  say(
    `  the renewal's workflow task (${renewalTask.sampled} sampled), ms p50 / max: timer fired to task ` +
      `started ${renewalTask.waitP50} / ${renewalTask.waitMax} (queued), started to completed ` +
      `${renewalTask.runP50} / ${renewalTask.runMax} (the worker, its local activities included); ` +
      `${renewalTask.timedOut} of its tasks timed out unstarted`,
  );

  // ---- 6. the floor: the same storm in Temporal alone (before the demo, which keeps renewing) ----
  let floorStorm: TimerStormFloor | undefined;
  if (floor) {
    sampler.phase = 'floor storm';
    floorStorm = await timerStorm(floor, {
      n: FLOOR_STORM_N,
      dueInS: FLOOR_STORM_DUE_IN_S,
      concurrency: CONCURRENCY,
      timeoutS: FLOOR_STORM_TIMEOUT_S,
    });
    say(
      `  CPU (cores): ${formatCpu(floorStorm.cpu.cores)}; stack CPU per floor charge ${floorStorm.cpu.stackCpuMsPerUnit} ms`,
    );
    sampler.phase = 'after';
  }

  // ---- 5b. continue-as-new: one subscription renewing every billing day ----
  let canResult:
    | {
        workflowId: string;
        seconds: number;
        runs: Array<{ runId: string; status: string; historyLength: number; start: string }>;
        continuedAsNew: number;
        maxEventsPerRun: number;
        paidInvoices: number;
        invoicesCapturedTwice: number;
        ok: boolean;
      }
    | undefined;
  if (CAN_RUNS > 0) {
    sampler.phase = 'continue-as-new demo';
    const externalId = `bcan-${runTag}`;
    const res = await postJson(`${apiUrl}/subscriptions`, headers, {
      amount: AMOUNT,
      currency: 'USD',
      billingIntervalDays: 1,
      externalId,
      customer: { email: 'customer@example.com' },
      cardToken: 'tok_success',
    });
    const id = res.json?.id;
    if (res.status !== 200 || typeof id !== 'string')
      throw new Error(`continue-as-new demo: ${res.status} ${res.text}`);
    const workflowId = subscriptionWorkflowId(id);
    say(
      `\nContinue-as-new: ${workflowId} renews every ${BILLING_DAY_S} s; waiting for ${CAN_RUNS} continue-as-new ` +
        `(at most ${CAN_TIMEOUT_S} s)...`,
    );
    const canT0 = Date.now();
    const listRuns = async () => {
      const runs: Array<{ runId: string; status: string; historyLength: number; start: string }> = [];
      for await (const wf of client.workflow.list({ query: `WorkflowId="${workflowId}"` })) {
        runs.push({
          runId: wf.runId,
          status: wf.status.name,
          historyLength: wf.historyLength,
          start: wf.startTime.toISOString(),
        });
      }
      return runs.sort((a, b) => a.start.localeCompare(b.start));
    };
    let runs = await listRuns();
    while (Date.now() - canT0 < CAN_TIMEOUT_S * 1000) {
      if (runs.filter((r) => r.status === 'CONTINUED_AS_NEW').length >= CAN_RUNS) break;
      await sleep(2000);
      runs = await listRuns();
    }
    // Closed runs' lengths are final; the running one's is read live.
    const current = await client.workflow.getHandle(workflowId).describe();
    for (const r of runs) if (r.runId === current.runId) r.historyLength = current.historyLength;
    const { rows: canInvoices } = await db.query<{ paid: string }>(
      `select count(*) filter (where i.status = 'paid')::text as paid
         from invoices i join subscriptions s on s.id = i.subscription_id where s.external_id = $1`,
      [externalId],
    );
    const canCaptures = (await settledLedger(sandboxUrl, 3000)).filter(
      (e) => e.type === 'capture' && e.status === 'succeeded' && e.metadata?.subscriptionId === id,
    );
    const canPerInvoice = new Map<string, number>();
    for (const c of canCaptures) {
      const inv = c.metadata?.invoiceId ?? '(none)';
      canPerInvoice.set(inv, (canPerInvoice.get(inv) ?? 0) + 1);
    }
    const continued = runs.filter((r) => r.status === 'CONTINUED_AS_NEW');
    canResult = {
      workflowId,
      seconds: round((Date.now() - canT0) / 1000, 1),
      runs,
      continuedAsNew: continued.length,
      maxEventsPerRun: Math.max(...runs.map((r) => r.historyLength)),
      paidInvoices: Number(canInvoices[0]?.paid ?? 0),
      invoicesCapturedTwice: [...canPerInvoice.values()].filter((n) => n > 1).length,
      ok:
        continued.length >= CAN_RUNS &&
        runs.every((r) => r.historyLength < 1000) &&
        [...canPerInvoice.values()].every((n) => n === 1),
    };
    say(
      `  ${runs.length} runs (${continued.length} continued as new) in ${canResult.seconds} s, ` +
        `${canResult.paidInvoices} invoices paid; events per run: ${runs.map((r) => r.historyLength).join(', ')}; ` +
        `${canResult.invoicesCapturedTwice} invoices captured twice. ${canResult.ok ? 'OK' : 'FAILED'}`,
    );
  }

  // ---- summary ----
  sampler.stop();
  const last = sampler.tick();
  const peak = sampler.peak()!;
  const stormPeak = sampler.peak('storm');
  const hwm = sampler.workerHwmKiB();
  const totalCpu = cpuSecondsByGroup(sampler.last);
  const rss = {
    workerAtReadyMiB: mib(atReady.workerKiB),
    workerIdleMiB: mib(idleLast.workerKiB),
    workerIdleMedianMiB: mib(idleMedianKiB ?? idleLast.workerKiB),
    workerPeakMiB: mib(peak.workerKiB),
    workerPeakPhase: peak.phase,
    workerStormPeakMiB: stormPeak ? mib(stormPeak.workerKiB) : null,
    workerVmHwmMiB: mib(hwm),
    workerEndMiB: mib(last.workerKiB),
    temporalIdleMiB: mib(idleLast.temporalKiB),
    apiIdleMiB: mib(idleLast.apiKiB),
    perPhasePeakMiB: Object.fromEntries(
      [...new Set(sampler.points.map((p) => p.phase))].map((ph) => [ph, mib(sampler.peak(ph)!.workerKiB)]),
    ),
  };
  // Targets (issue 41): an incomplete storm, or one below 10,000, does not count.
  const incomplete = (paid: number, due: number) => `incomplete: ${paid} of ${due}`;
  const stormVsFloor =
    stormResult.chargesPerSecond && floorStorm?.chargesPerSecond
      ? round(stormResult.chargesPerSecond / floorStorm.chargesPerSecond, 3)
      : null;
  const targets = evaluateTargets(
    {
      temporal: TEMPORAL_KIND,
      ...(stormResult.chargesPerSecond !== null
        ? {
            stormChargesPerSecond: {
              value: stormResult.chargesPerSecond,
              ...(stormComplete ? {} : { flaw: incomplete(stormResult.paid, stormDue) }),
            },
          }
        : {}),
      stormN: stormDue,
      ...(floorStorm?.chargesPerSecond
        ? {
            floorStormChargesPerSecond: {
              value: floorStorm.chargesPerSecond,
              ...(floorStorm.complete ? {} : { flaw: incomplete(floorStorm.completed, floorStorm.n) }),
            },
          }
        : {}),
      ...(floorStorm ? { floorStormN: floorStorm.n } : {}),
      liveN: alive,
      // The highest of the per-second samples and the kernel's high-water mark.
      workerPeakRssMiB: { value: Math.max(rss.workerPeakMiB, rss.workerVmHwmMiB) },
    },
    'subscriptions',
  );
  say(`\nSummary (${startedAt.toISOString()}, commit ${git.commit.slice(0, 7)}, ${machine.cpuCount} CPUs):`);
  say(`  N                     ${createdOk} active of ${N} (${creation.failed.length} failed)`);
  say(`  creation              ${creationResult.seconds} s, ${creationResult.perSecond}/s (${CONCURRENCY} in flight)`);
  say(`  alive                 ${alive}`);
  say(
    `  worker cache          ${workerCache.subscriptionMaxCachedWorkflows} subscription runs, ` +
      `${workerCache.subscriptionStickyTimeoutSeconds} s sticky timeout (${workerCache.maxCachedWorkflows} on the main queue)`,
  );
  say(
    `  worker RSS            idle ${rss.workerIdleMiB} MiB, peak ${rss.workerPeakMiB} MiB (${rss.workerPeakPhase}), VmHWM ${rss.workerVmHwmMiB} MiB`,
  );
  say(
    `  renewal storm         ${stormResult.paid} due charges settled in ${stormResult.seconds} s, ${stormResult.chargesPerSecond} charges/s`,
  );
  say(
    `  events per run        max ${historyResult.afterStorm.max}, mean ${historyResult.afterStorm.mean} (sample of ${historyResult.sample})` +
      (canResult
        ? `; renewing every billing day: max ${canResult.maxEventsPerRun} over ${canResult.runs.length} runs ` +
          `(${canResult.paidInvoices} periods)`
        : ''),
  );
  if (floorStorm) {
    say(
      `  floor: timer storm    ${floorStorm.completed} of ${floorStorm.n} completed in ${floorStorm.seconds} s from T, ` +
        `${floorStorm.chargesPerSecond} charges/s; renewal storm / floor ${stormVsFloor ?? '-'}x`,
    );
  }
  say(`  money check           ${moneyCheck.ok ? 'OK' : 'FAILED'}`);
  say(
    `  CPU seconds (whole run, per process group): ${formatCpu(Object.fromEntries(Object.entries(totalCpu).map(([g, s]) => [g, round(s, 0)])))}`,
  );
  say('');
  for (const line of formatTargets(targets)) say(line);

  const output = {
    date: startedAt.toISOString(),
    machine,
    git,
    stack: {
      postgres: `${postgresVersion} (embedded, ephemeral)`,
      temporal: temporalServer,
      logLevel: 'warn',
      poolMax: 10,
      readyS: round(readyS, 1),
    },
    settings: {
      n: N,
      floorStorm: FLOOR ? { n: FLOOR_STORM_N, dueInS: FLOOR_STORM_DUE_IN_S, timeoutS: FLOOR_STORM_TIMEOUT_S } : false,
      concurrency: CONCURRENCY,
      warmup: WARMUP,
      billingDaySeconds: BILLING_DAY_S,
      safetyPct: SAFETY_PCT,
      idleS: IDLE_S,
      dueInS: round((dueAt - creationStart) / 1000, 0),
      workerNodeOptions: WORKER_NODE_OPTIONS,
      workerHeapLimitMiB: cache.heapLimitMiB,
      sdkDefaultMaxCachedWorkflows: cache.defaultMaxCachedWorkflows,
      workerCache,
    },
    warmup: {
      created: warm.created.length,
      seconds: round(warm.seconds, 1),
      perSecond: round(warm.created.length / warm.seconds, 1),
      steadyPerSecond: round(warmRate, 1),
    },
    creation: creationResult,
    alive: { count: alive, query: aliveQuery, afterS: aliveAfterS },
    rss,
    storm: stormResult,
    checkout: CHECKOUT_PAUSE_MS > 0 ? { pauseMs: CHECKOUT_PAUSE_MS, ...checkout } : false,
    creates: CREATE_PAUSE_MS > 0 ? { pauseMs: CREATE_PAUSE_MS, ...creates } : false,
    moneyCheck,
    history: { ...historyResult, renewalTask, idle: historyIdle, after: historyAfter },
    continueAsNew: canResult,
    cpuSecondsTotal: totalCpu,
    ...(floorStorm ? { floorStorm, stormVsFloor } : {}),
    targets,
    rssTimeline: sampler.points
      .filter((_, i) => i % 5 === 0)
      .map((p) => ({
        s: round((p.t - creationStart) / 1000, 0),
        phase: p.phase,
        workerMiB: mib(p.workerKiB),
        temporalMiB: mib(p.temporalKiB),
      })),
  };
  fs.mkdirSync(OUT_DIR, { recursive: true });
  const outFile = path.join(OUT_DIR, 'subscriptions-latest.json');
  fs.writeFileSync(outFile, `${JSON.stringify(output, null, 2)}\n`);
  say(`\nWrote ${path.relative(ROOT, outFile)}.`);

  say('Stopping the stack...');
  await teardown();
  clearTimeout(watchdog);
  say('Stopped.');
  process.exit(moneyCheck.ok && stormComplete && (canResult?.ok ?? true) ? 0 : 1);
}

main().catch(async (err: unknown) => {
  const logs = children.map((c) => `--- ${c.name} log (tail) ---\n${tail(c.logFile)}`).join('\n');
  await abort(`Benchmark failed: ${(err as Error).stack ?? String(err)}${logs ? `\n${logs}` : ''}`);
});

/**
 * Where a renewal's time goes, from the sampled histories: from its period's timer firing to the
 * workflow task that handles it starting on the worker (the server's dispatch plus the worker's
 * backlog), then from that task's start to its completion (the worker's work on it).
 */
async function renewalTaskTimings(client: Client, ids: string[]) {
  const E = proto.api.enums.v1.EventType;
  const ms = (e: proto.api.history.v1.IHistoryEvent | undefined) =>
    e?.eventTime ? Number(e.eventTime.seconds ?? 0) * 1000 + Math.floor((e.eventTime.nanos ?? 0) / 1e6) : NaN;
  const waits: number[] = [];
  const runs: number[] = [];
  let timedOut = 0;
  for (const id of ids) {
    const events = (await client.workflow.getHandle(subscriptionWorkflowId(id)).fetchHistory()).events ?? [];
    const fired = events.findLastIndex((e) => e.eventType === E.EVENT_TYPE_TIMER_FIRED);
    if (fired < 0) continue;
    const after = events.slice(fired);
    timedOut += after.filter((e) => e.eventType === E.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT).length;
    const started = after.find((e) => e.eventType === E.EVENT_TYPE_WORKFLOW_TASK_STARTED);
    const completed = after.find((e) => e.eventType === E.EVENT_TYPE_WORKFLOW_TASK_COMPLETED);
    if (!started || !completed) continue;
    waits.push(ms(started) - ms(events[fired]));
    runs.push(ms(completed) - ms(started));
  }
  waits.sort((a, b) => a - b);
  runs.sort((a, b) => a - b);
  return {
    sampled: waits.length,
    waitP50: percentile(waits, 50),
    waitMax: percentile(waits, 100),
    runP50: percentile(runs, 50),
    runMax: percentile(runs, 100),
    /** Workflow tasks of the renewal that timed out before a worker took them (left on a sticky queue). */
    timedOut,
  };
}
