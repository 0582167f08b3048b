import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { openOrm, type Orm } from '../src/db/orm';
import { Merchant } from '../src/db/entities';
import { createMerchant } from '../src/domain/merchants';
import { recordEvent } from '../src/domain/events';
import { sealSigningSecrets } from '../src/domain/signingSecrets';
import { ProviderSecrets } from '../src/providers/secrets';
import { DEFAULT_DELIVERY_CONCURRENCY_PER_MERCHANT } from '../src/rules/deliverySchedule';
import { startAnsweringEndpoint, startHangingEndpoint } from '../dev/chaos/endpoints';
import {
  OUT_DIR,
  abort,
  beginRun,
  buildForBench,
  children,
  cpuBetween,
  envInt,
  formatCpu,
  freePorts,
  getOk,
  onTeardown,
  pidCores,
  sampleCpu,
  say,
  sleep,
  spawnChild,
  startServices,
  tail,
  teardown,
  waitFor,
  workerEnv,
  workerNodeArgs,
} from './stack';

/**
 * `npm run bench:isolation`: issue 43's bench line. One merchant's hanging endpoint must not slow
 * another merchant's checkout: 200 deliveries to a hanging endpoint of merchant A leave merchant
 * B's token-payment p50 within 1.2x of the same run without them. And the delivery throughput of
 * one delivery worker process.
 *
 * A throw-away stack as the other benches start it (bench/stack.ts: embedded PostgreSQL, the
 * Temporal dev server, the migrations, the production build), then the sandbox, the API, one
 * worker of role `payments-subscriptions` and one of role `deliveries` (the production shape,
 * decision 0071), each a process of its own; the merchants' endpoints run in this process (the
 * chaos run's, dev/chaos/endpoints.ts):
 *   1. baseline: B has a webhook endpoint for payment.succeeded on a receiver that answers 200 at
 *      once; BENCH_ISOLATION_N (300) token POST /payments of B, one at a time (after
 *      BENCH_ISOLATION_WARMUP (30)): p50 and p95, and how soon each of B's events arrived.
 *   2. with A hanging: A gets an endpoint `*` on a server that accepts and never answers, and 200
 *      events recorded (as its records write them, with their delivery jobs); once A's first
 *      attempts hang, the same measurement of B. Ratio = p50 with / p50 without (<= 1.2x). A's
 *      connections open at once (at most EVENT_DELIVERY_CONCURRENCY_PER_MERCHANT, 4) and how its
 *      host ends paused are reported.
 *   3. baseline again: A's endpoint disabled (its pending deliveries cancelled), the same
 *      measurement of B. The two baselines bracket the arm with A (the shared machine drifts);
 *      the line's "without" is both pooled, each also printed on its own.
 *   4. throughput: BENCH_ISOLATION_MERCHANTS (50) merchants with an
 *      endpoint `*` on the fast receiver get BENCH_ISOLATION_EVENTS (40) events each, recorded in
 *      one transaction; deliveries/s of the one delivery worker, first to last received (the
 *      receiver's clock), and from the commit to the last.
 *
 * Exit code 1 if a check fails (a B payment not `succeeded`, an event not delivered or delivered
 * twice, A holding more than its concurrency), never for a MISSED line. Writes
 * bench/.out/isolation-latest.json. Knobs: BENCH_ISOLATION_N, BENCH_ISOLATION_WARMUP,
 * BENCH_ISOLATION_HANGING_EVENTS (200), BENCH_ISOLATION_MERCHANTS, BENCH_ISOLATION_EVENTS,
 * BENCH_SOURCES (bench/stack.ts).
 */

const N = envInt('BENCH_ISOLATION_N', 300);
const WARMUP = envInt('BENCH_ISOLATION_WARMUP', 30, 0);
const HANGING_EVENTS = envInt('BENCH_ISOLATION_HANGING_EVENTS', 200);
const MERCHANTS = envInt('BENCH_ISOLATION_MERCHANTS', 50);
const EVENTS_EACH = envInt('BENCH_ISOLATION_EVENTS', 40);
const TARGET_RATIO = 1.2;
const CONCURRENCY = DEFAULT_DELIVERY_CONCURRENCY_PER_MERCHANT;
const RUN_TIMEOUT_MS = 900_000;

/** Nearest-rank percentile of ascending values, to 0.1 ms. */
function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  const rank = Math.min(sorted.length, Math.max(1, Math.ceil((p / 100) * sorted.length)));
  return Number(sorted[rank - 1]!.toFixed(1));
}

interface BenchMerchant {
  id: string;
  basic: string;
}

async function newMerchant(orm: Orm, name: string): Promise<BenchMerchant> {
  const created = await createMerchant(orm.em.fork(), { name, email: 'bench@example.com' });
  return {
    id: created.merchant.id,
    basic: `Basic ${Buffer.from(`${created.apiKey.publicKey}:${created.secretKey}`).toString('base64')}`,
  };
}

async function api(
  apiUrl: string,
  m: BenchMerchant,
  method: string,
  route: string,
  body?: unknown,
): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`${apiUrl}${route}`, {
    method,
    headers: { authorization: m.basic, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(30_000),
  });
  const text = await res.text();
  return { status: res.status, body: text ? (JSON.parse(text) as Record<string, unknown>) : {} };
}

/** `count` events of one merchant, as its records write them (each fans out to its delivery jobs). */
async function recordEvents(orm: Orm, merchantIds: string[], count: number, tag: string): Promise<void> {
  const em = orm.em.fork();
  for (const merchantId of merchantIds) {
    for (let i = 0; i < count; i++) {
      const id = `pay_${tag}_${merchantId.slice(-6)}_${i}`;
      recordEvent(em, {
        merchant: em.getReference(Merchant, merchantId),
        type: 'payment.succeeded',
        resourceId: id,
        dedupeKey: `bench:${tag}:${merchantId}:${i}`,
        callbackUrl: null,
        environment: 'test',
        data: { id },
      });
    }
  }
  await em.flush();
}

interface Phase {
  name: string;
  requests: number;
  p50Ms: number;
  p95Ms: number;
  meanMs: number;
  maxMs: number;
  notSucceeded: number;
  /** B's own events: from each answer to its delivery (receiver clock), p50 / max. */
  deliveryLagP50Ms: number;
  deliveryLagMaxMs: number;
  delivered: number;
  /** A's requests held open by the hanging server while B's were measured (min / max seen). */
  aOpenMin?: number;
  aOpenMax?: number;
  /** B's requests measured while at least one of A's was held open. */
  measuredWhileAHung?: number;
  cpuCores: Record<string, number>;
  loadAverage1mBefore: number;
}

async function main(): Promise<void> {
  const { startedAt, git, machine, watchdog } = beginRun(RUN_TIMEOUT_MS);
  const [pgPort, temporalPort, apiPort, sandboxPort] = (await freePorts(4)) as [number, number, number, number];
  const [services] = await Promise.all([startServices({ pgPort, temporalPort }), buildForBench()]);
  const { dir, logDir, pg, temporal, temporalServer, postgresVersion } = services;
  const b: BenchMerchant = { id: services.merchantId, basic: services.basic };

  // Endpoint signing secrets are stored only encrypted (decision 0067): a key of this run.
  const secretsKey = randomBytes(32).toString('base64');
  const apiUrl = `http://127.0.0.1:${apiPort}`;
  const sandboxUrl = `http://127.0.0.1:${sandboxPort}`;
  const childEnv: NodeJS.ProcessEnv = {
    ...process.env,
    DATABASE_URL: pg.databaseUrl,
    DATABASE_POOL_MAX: '10',
    TEMPORAL_ADDRESS: temporal.address,
    PORT: String(apiPort),
    SANDBOX_PORT: String(sandboxPort),
    SANDBOX_URL: sandboxUrl,
    TEMPORAL_TASK_QUEUE: `bench-${process.pid}`,
    LOG_LEVEL: 'warn',
    DATA_DIR: dir,
    RATE_LIMIT_PER_SECOND: '10000',
    RATE_LIMIT_BURST: '20000',
    // Load, not quotas, is measured: the per-merchant quotas and the sandbox's ledger bound are off (decision 0079).
    QUOTA_OPEN_HOSTED_PAYMENTS: '0',
    QUOTA_LIVE_TEST_SUBSCRIPTIONS: '0',
    QUOTA_REFUNDS_PER_PAYMENT: '0',
    SANDBOX_MAX_LEDGER_ENTRIES: '0',
    // No metrics endpoints: two workers on one host, and nothing scrapes them.
    METRICS_PORT: '0',
    WORKER_METRICS_PORT: '0',
    PROVIDER_SECRETS_KEY: secretsKey,
  };
  spawnChild('sandbox', 'dev/sandbox/main.ts', childEnv, logDir);
  spawnChild('api', 'src/main/api.ts', childEnv, logDir);
  const workerArgs = workerNodeArgs();
  spawnChild(
    'worker',
    'src/main/worker.ts',
    { ...childEnv, ...workerEnv(), WORKER_ROLE: 'payments-subscriptions' },
    logDir,
    workerArgs,
  );
  const deliveryWorker = spawnChild(
    'delivery-worker',
    'src/main/worker.ts',
    { ...childEnv, ...workerEnv(), WORKER_ROLE: 'deliveries' },
    logDir,
    workerArgs,
  );
  // The merchants' endpoints, in this process (dev/chaos/endpoints.ts, as the chaos run's).
  const fast = await startAnsweringEndpoint();
  onTeardown('closing the answering endpoint', fast.close);
  const hanging = await startHangingEndpoint();
  onTeardown('closing the hanging endpoint', hanging.close);

  const orm = await openOrm({ databaseUrl: pg.databaseUrl, poolMax: 4 });
  onTeardown('closing the bench ORM', () => orm.close());
  const a = await newMerchant(orm, 'Merchant A (hanging endpoint)');
  const others: BenchMerchant[] = [];
  for (let i = 0; i < MERCHANTS; i++) others.push(await newMerchant(orm, `Throughput merchant ${i}`));
  await sealSigningSecrets(orm.em.fork(), ProviderSecrets.fromBase64(secretsKey));

  await waitFor('the API (/readyz)', 60_000, () => getOk(`${apiUrl}/readyz`));
  await waitFor('the sandbox', 30_000, () => getOk(`${sandboxUrl}/_admin/faults`));
  await fetch(`${sandboxUrl}/_admin/faults`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: '{}',
  });

  let seq = 0;
  const runTag = `${Date.now().toString(36)}-${process.pid}`;
  const pay = (m: BenchMerchant) =>
    api(apiUrl, m, 'POST', '/payments', {
      amount: 12.34,
      currency: 'USD',
      externalId: `bench-${runTag}-${++seq}`,
      customer: { email: 'bench@example.com' },
      cardToken: 'tok_success',
    });
  await waitFor('a first token-flow POST /payments', 90_000, async () => {
    const res = await pay(b);
    return res.status === 200 && res.body.status === 'succeeded' ? true : `${res.status} ${JSON.stringify(res.body)}`;
  });
  const bEndpoint = await api(apiUrl, b, 'POST', '/webhook-endpoints', {
    url: `${fast.base}/b`,
    enabledEvents: ['payment.succeeded'],
  });
  if (bEndpoint.status !== 200) throw new Error(`B's endpoint: ${bEndpoint.status} ${JSON.stringify(bEndpoint.body)}`);
  const bReceived = () => fast.received.filter((r) => r.path === '/b');
  // The delivery worker delivers: one payment of B arrives at its endpoint.
  {
    const before = bReceived().length;
    await pay(b);
    await waitFor("B's first delivery", 60_000, async () => (bReceived().length > before ? true : 'not yet'));
  }
  say(
    `\nStack ready: PostgreSQL ${postgresVersion}, Temporal ${temporalServer}; workers: 1 payments-subscriptions, ` +
      `1 deliveries (pid ${deliveryWorker.process.pid}); EVENT_DELIVERY_CONCURRENCY_PER_MERCHANT=${CONCURRENCY}.`,
  );

  /** B's token payments, one at a time: latency of each, and when its event arrived at B's endpoint. */
  const samples = new Map<string, number[]>();
  const measureB = async (name: string, watchA: boolean): Promise<Phase> => {
    for (let i = 0; i < WARMUP; i++) await pay(b);
    const loadAverage1mBefore = Number(os.loadavg()[0]?.toFixed(2));
    const answeredAt = new Map<string, number>();
    const ms: number[] = [];
    let notSucceeded = 0;
    let aOpenMin = Infinity;
    let aOpenMax = 0;
    let whileHung = 0;
    const cpuBefore = sampleCpu();
    const t0 = performance.now();
    for (let i = 0; i < N; i++) {
      if (watchA) {
        aOpenMin = Math.min(aOpenMin, hanging.state.open);
        aOpenMax = Math.max(aOpenMax, hanging.state.open);
        if (hanging.state.open > 0) whileHung++;
      }
      const started = performance.now();
      const res = await pay(b);
      const done = performance.now();
      ms.push(done - started);
      if (res.status !== 200 || res.body.status !== 'succeeded') notSucceeded++;
      else answeredAt.set(String(res.body.id), done);
    }
    const seconds = (performance.now() - t0) / 1000;
    const cpuCores = cpuBetween(cpuBefore, sampleCpu(), seconds);
    // B's events of these payments, at its endpoint (give the last ones a few seconds).
    const lags = () =>
      bReceived()
        .filter((r) => answeredAt.has(r.objectId))
        .map((r) => r.atMonotonic - answeredAt.get(r.objectId)!);
    let lag = lags();
    for (let i = 0; i < 20 && lag.length < answeredAt.size; i++) {
      await sleep(500);
      lag = lags();
    }
    samples.set(name, ms);
    const sorted = [...ms].sort((x, y) => x - y);
    const lagSorted = [...lag].sort((x, y) => x - y);
    const phase: Phase = {
      name,
      requests: N,
      p50Ms: percentile(sorted, 50),
      p95Ms: percentile(sorted, 95),
      meanMs: Number((ms.reduce((s, x) => s + x, 0) / ms.length).toFixed(2)),
      maxMs: percentile(sorted, 100),
      notSucceeded,
      deliveryLagP50Ms: percentile(lagSorted, 50),
      deliveryLagMaxMs: percentile(lagSorted, 100),
      delivered: lag.length,
      ...(watchA ? { aOpenMin, aOpenMax, measuredWhileAHung: whileHung } : {}),
      cpuCores,
      loadAverage1mBefore,
    };
    say(
      `  ${name}: ${N} token POSTs of B at 1 connection: p50 ${phase.p50Ms} ms, p95 ${phase.p95Ms} ms, mean ` +
        `${phase.meanMs} ms, max ${phase.maxMs} ms; not succeeded ${notSucceeded}; B's events delivered ` +
        `${phase.delivered}/${answeredAt.size}, lag p50 ${phase.deliveryLagP50Ms} ms, max ${phase.deliveryLagMaxMs} ms` +
        (watchA ? `; A open during it: ${aOpenMin}-${aOpenMax}, ${whileHung}/${N} measured while A hung` : '') +
        `\n    CPU ${formatCpu(cpuCores)}`,
    );
    return phase;
  };

  // 1. Baseline.
  say(`\n1. Baseline (B alone; ${WARMUP} warm-up requests first):`);
  const without = await measureB('without A', false);

  // 2. A's 200 deliveries hang.
  say(`\n2. A's endpoint hangs: ${HANGING_EVENTS} events recorded for A, then the same measurement of B:`);
  const aEndpoint = await api(apiUrl, a, 'POST', '/webhook-endpoints', { url: hanging.url, enabledEvents: ['*'] });
  if (aEndpoint.status !== 200) throw new Error(`A's endpoint: ${aEndpoint.status} ${JSON.stringify(aEndpoint.body)}`);
  const aRecordedAt = performance.now();
  await recordEvents(orm, [a.id], HANGING_EVENTS, `hang${runTag}`);
  await waitFor("A's first hanging attempts", 30_000, async () =>
    hanging.state.open >= Math.min(CONCURRENCY, HANGING_EVENTS) ? true : `${hanging.state.open} open`,
  );
  say(
    `  A holds ${hanging.state.open} open ${((performance.now() - aRecordedAt) / 1000).toFixed(1)} s after its events`,
  );
  const withA = await measureB('with A hanging', true);

  // A's host ends paused: wait for it (HOST_PAUSE_AFTER_FAILURES timeouts of 10 s each, 4 at a time).
  const aState = async () => {
    const [row] = await orm.em.getConnection().execute<
      Array<{
        attempted: number;
        attempts: number;
        waiting: number;
        timeouts: number;
        failures: number | null;
        paused_for_s: number | null;
      }>
    >(
      `select (select count(*)::int from delivery_jobs where merchant_id = ? and attempts > 0) as attempted,
              (select coalesce(sum(attempts), 0)::int from delivery_jobs where merchant_id = ?) as attempts,
              (select count(*)::int from delivery_jobs where merchant_id = ? and status = 'pending'
                  and attempts = 0 and next_attempt_at > now()) as waiting,
              (select count(*)::int from event_deliveries d join merchant_events e on e.id = d.event_id
                where e.merchant_id = ? and d.error = 'timeout') as timeouts,
              (select max(failures) from delivery_host_pauses where merchant_id = ?) as failures,
              (select extract(epoch from max(paused_until) - now())::int from delivery_host_pauses
                where merchant_id = ? and paused_until > now()) as paused_for_s`,
      [a.id, a.id, a.id, a.id, a.id, a.id],
    );
    return row!;
  };
  let paused = await aState();
  const pauseDeadline = Date.now() + 60_000;
  while (paused.paused_for_s === null && Date.now() < pauseDeadline) {
    await sleep(1000);
    paused = await aState();
  }
  const aPause = {
    secondsAfterEvents: Number(((performance.now() - aRecordedAt) / 1000).toFixed(1)),
    maxOpen: hanging.state.maxOpen,
    requestsReceived: hanging.state.total,
    jobsAttempted: paused.attempted,
    attempts: paused.attempts,
    timeouts: paused.timeouts,
    hostFailures: paused.failures,
    pausedForS: paused.paused_for_s,
    jobsWaitingWithoutAnAttempt: paused.waiting,
  };
  say(
    `  A: at most ${aPause.maxOpen} open at once (limit ${CONCURRENCY}), ${aPause.requestsReceived} requests in all; ` +
      `${aPause.secondsAfterEvents} s after its events: ${aPause.attempts} attempts on ${aPause.jobsAttempted} jobs, ` +
      `${aPause.timeouts} timeouts, host failures ${aPause.hostFailures}, ` +
      (aPause.pausedForS === null ? 'host NOT paused' : `host paused for ${aPause.pausedForS} s more`) +
      `, ${aPause.jobsWaitingWithoutAnAttempt} never-attempted jobs deferred past the pause`,
  );

  // 3. The baseline again, A's endpoint disabled (its pending deliveries cancelled): the two
  // baselines bracket the arm with A, so a drift of the shared machine weighs on both sides.
  const disabled = await api(apiUrl, a, 'PATCH', `/webhook-endpoints/${String(aEndpoint.body.id)}`, {
    status: 'disabled',
  });
  if (disabled.status !== 200) throw new Error(`disabling A's endpoint: ${disabled.status}`);
  say(`\n3. Baseline again, A's endpoint disabled:`);
  const after = await measureB('without A, after', false);
  const pooled = [...samples.get('without A')!, ...samples.get('without A, after')!].sort((x, y) => x - y);
  const withoutP50 = percentile(pooled, 50);
  const withoutP95 = percentile(pooled, 95);
  const ratio = Number((withA.p50Ms / withoutP50).toFixed(3));
  const ratioBefore = Number((withA.p50Ms / without.p50Ms).toFixed(3));
  const ratioAfter = Number((withA.p50Ms / after.p50Ms).toFixed(3));
  say(
    `  ratio p50 with / without (both baselines, ${pooled.length} requests): ${ratio}x (${withA.p50Ms} / ` +
      `${withoutP50} ms), target <= ${TARGET_RATIO}x: ${ratio <= TARGET_RATIO ? 'MET' : 'MISSED'}; against the ` +
      `first baseline alone ${ratioBefore}x, the second ${ratioAfter}x`,
  );

  // 4. Throughput of the one delivery worker.
  for (const [i, m] of others.entries()) {
    const res = await api(apiUrl, m, 'POST', '/webhook-endpoints', {
      url: `${fast.base}/m/${i}`,
      enabledEvents: ['*'],
    });
    if (res.status !== 200) throw new Error(`merchant ${i}'s endpoint: ${res.status} ${JSON.stringify(res.body)}`);
  }
  const total = MERCHANTS * EVENTS_EACH;
  say(
    `\n4. Throughput: ${MERCHANTS} merchants x ${EVENTS_EACH} events (${total} deliveries) recorded at once, ` +
      `to an endpoint that answers 200 at once; 1 delivery worker process:`,
  );
  const isThroughput = (r: { path: string }) => r.path.startsWith('/m/');
  const cpuBefore = sampleCpu();
  const committedAt = performance.now();
  await recordEvents(
    orm,
    others.map((m) => m.id),
    EVENTS_EACH,
    `tp${runTag}`,
  );
  const recordedAt = performance.now();
  const deadline = Date.now() + 240_000;
  while (fast.received.filter(isThroughput).length < total && Date.now() < deadline) await sleep(200);
  const got = fast.received.filter(isThroughput);
  const lastAt = Math.max(...got.map((r) => r.atMonotonic));
  const firstAt = Math.min(...got.map((r) => r.atMonotonic));
  const cpuAfter = sampleCpu();
  const spanS = (performance.now() - committedAt) / 1000;
  const distinct = new Set(got.map((r) => r.eventId)).size;
  const deliveryWorkerCores = pidCores(cpuBefore, cpuAfter, deliveryWorker.process.pid, spanS);
  const throughput = {
    merchants: MERCHANTS,
    eventsEach: EVENTS_EACH,
    deliveries: total,
    received: got.length,
    distinctEvents: distinct,
    recordS: Number(((recordedAt - committedAt) / 1000).toFixed(2)),
    firstToLastS: Number(((lastAt - firstAt) / 1000).toFixed(2)),
    recordedToFirstS: Number(((firstAt - recordedAt) / 1000).toFixed(2)),
    recordedToLastS: Number(((lastAt - recordedAt) / 1000).toFixed(2)),
    perSecondFirstToLast: Number((got.length / ((lastAt - firstAt) / 1000)).toFixed(1)),
    perSecondRecordedToLast: Number((got.length / ((lastAt - recordedAt) / 1000)).toFixed(1)),
    deliveryWorkerCores,
    cpuCores: cpuBetween(cpuBefore, cpuAfter, spanS),
    workers: '1 process of WORKER_ROLE=deliveries (beside 1 of payments-subscriptions)',
  };
  say(
    `  ${got.length}/${total} delivered (${distinct} distinct events); first to last ${throughput.firstToLastS} s: ` +
      `${throughput.perSecondFirstToLast} deliveries/s; from the commit (${throughput.recordS} s to write) to the last ` +
      `${throughput.recordedToLastS} s: ${throughput.perSecondRecordedToLast}/s; the delivery worker at ` +
      `${deliveryWorkerCores} cores\n    CPU ${formatCpu(throughput.cpuCores)}`,
  );

  const checks = {
    bPaymentsSucceeded: without.notSucceeded === 0 && withA.notSucceeded === 0 && after.notSucceeded === 0,
    aWithinConcurrency: hanging.state.maxOpen <= CONCURRENCY,
    aHungDuringMeasurement: (withA.measuredWhileAHung ?? 0) > 0,
    allDeliveredOnce: got.length === total && distinct === total,
  };
  const ok = Object.values(checks).every(Boolean);

  say(`\nResults (${startedAt.toISOString()}, commit ${git.commit.slice(0, 7)}):`);
  say(
    `  B token POST p50 at 1 connection: ${withoutP50} ms without (${without.p50Ms} before, ${after.p50Ms} after), ` +
      `${withA.p50Ms} ms with A's ${HANGING_EVENTS} hanging deliveries: ${ratio}x (target <= ${TARGET_RATIO}x) ` +
      `${ratio <= TARGET_RATIO ? 'MET' : 'MISSED'}; p95 ${withoutP95} / ${withA.p95Ms} ms`,
  );
  say(`  A at most ${hanging.state.maxOpen} open at once (limit ${CONCURRENCY})`);
  say(`  delivery throughput, 1 delivery worker: ${throughput.perSecondFirstToLast} deliveries/s (first to last)`);
  say(`  checks: ${JSON.stringify(checks)}`);

  fs.mkdirSync(OUT_DIR, { recursive: true });
  const file = path.join(OUT_DIR, 'isolation-latest.json');
  fs.writeFileSync(
    file,
    JSON.stringify(
      {
        date: startedAt.toISOString(),
        machine,
        git,
        stack: {
          postgres: `${postgresVersion} (embedded, ephemeral)`,
          temporal: temporalServer,
          workers: { 'payments-subscriptions': 1, deliveries: 1 },
          concurrencyPerMerchant: CONCURRENCY,
        },
        settings: {
          n: N,
          warmup: WARMUP,
          hangingEvents: HANGING_EVENTS,
          merchants: MERCHANTS,
          eventsEach: EVENTS_EACH,
        },
        without,
        withA,
        after,
        withoutPooled: { requests: pooled.length, p50Ms: withoutP50, p95Ms: withoutP95 },
        ratio,
        ratioBefore,
        ratioAfter,
        target: TARGET_RATIO,
        verdict: ratio <= TARGET_RATIO ? 'MET' : 'MISSED',
        aPause,
        throughput,
        checks,
      },
      null,
      2,
    ),
  );
  say(`Wrote ${path.relative(process.cwd(), file)}. ${ok ? 'OK' : 'FAILED'}`);
  await teardown();
  clearTimeout(watchdog);
  process.exit(ok ? 0 : 1);
}

main().catch(async (err: unknown) => {
  const logs = children.map((c) => `--- ${c.name} log (tail) ---\n${tail(c.logFile)}`).join('\n');
  await abort(`Benchmark failed: ${(err as Error).stack ?? String(err)}${logs ? `\n${logs}` : ''}`);
});
