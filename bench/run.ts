import path from 'node:path';
import { printHistories, printRunResults, printTargets, writeResults, type RunRow, type VsFloor } from './report';
import { getGroup } from './run/get';
import { sampleHistories } from './run/history';
import {
  CPU_PROF,
  DURATION_S,
  FLOOR,
  GET_CONNECTIONS,
  POST_CONNECTIONS,
  PROCESSES,
  RATE_LIMIT,
  REFUNDS,
  REFUNDS_FIRST,
  REFUND_AMOUNT,
  REFUND_PARALLEL,
  REFUND_PAYMENT_AMOUNT,
  ROUNDS,
  RUN_TIMEOUT_MS,
  SERIAL_POST,
  SERIAL_REFUNDS,
  SETTLE_S,
  WARMUP_S,
  WORK_FLOOR,
} from './run/knobs';
import type { ScenarioResult } from './run/measure';
import { postGroup, type PostGroup } from './run/post';
import { refundGroup, type RefundGroup } from './run/refunds';
import { startRunStack } from './run/setup';
import { OUT_DIR, abort, beginRun, children, say, tail, teardown } from './stack';
import { evaluateTargets, type Figure } from './targets';

/**
 * `npm run bench`: a throw-away stack (embedded PostgreSQL, Temporal (the in-memory dev server, or
 * the real server with BENCH_TEMPORAL=server), the real sandbox, API and worker processes from the
 * production build), then each line of issue 41 measured beside what it is compared with, in one run:
 *   GET group       the baseline (bench/baseline.ts: bare Koa + one indexed SELECT), the product's
 *                   GET /payments/{id} with Basic auth, and the same GET on an API process without
 *                   rate limits (a diagnostic: the limiter's cost)
 *   token POST      at 10 connections, then at 1: the product's token-flow POST /payments
 *                   (cardToken tok_success, a fresh externalId each), the bare floor and the work floor
 *   refunds         at 10 loops, then at 1: the product's POST /payments/{id}/refund of 0.01 USD, each
 *                   loop on its own 1000 USD payment (one refund in flight per payment; not
 *                   autocannon: every answer must be terminal), the bare floor and the refund work floor
 * Every scenario is one function (bench/run/); the printing is in bench/report.ts; the lines and
 * their verdicts in bench/targets.ts. Everything is stopped at the end, even on error.
 *
 * The floors (bench/floor/), on the same Temporal server, run by their own worker process on their
 * own task queue, at the concurrency of the product scenario beside them:
 *   bare floor         Update-with-Start of a minimal workflow answering from one no-op local activity
 *   work floor         the bare floor plus a token payment's required work, written the cheapest way
 *                      (the row committed; the local activity marks it sent, asks the sandbox,
 *                      records the capture)
 *   refund work floor  the bare floor plus a refund's required work, written the cheapest way (the
 *                      refund reserved and its row inserted in one statement; the local activity
 *                      marks it sent, asks the sandbox to refund, records the settlement)
 * The token POST lines divide by the work floor, the refund lines by the refund work floor: a line
 * at 1.0x is perfect. Beside each, the `Targets` block prints what that work floor reads against
 * the bare floor of its group, the bound. The results table shows every row against its bare floor.
 *
 * Every ratio compares figures of the same moment: each group's arms are measured in BENCH_ROUNDS
 * mirrored rounds (floor, work floor, product, then product, work floor, floor, ...), each arm a
 * slice of BENCH_DURATION_S, and each arm's slices are combined. The machine's speed drifts by tens
 * of percent within minutes, and the dev server slows as finished runs pile up in its memory
 * (bench/RESULTS.md): in mirrored order a steady drift weighs on every arm alike.
 *
 * Checked: one succeeded capture per 2xx POST answer and no payment captured twice (the sandbox
 * ledger); one succeeded ledger entry per refund answered, no reference or refund id twice, each
 * payment's amountRefunded = its refunds. Prints a table, a payment's and a refund's workflow
 * history, and the `Targets` block (each line MET or MISSED); writes bench/.out/latest.json. Exit
 * code 1 only if a ledger or refund check fails or the run breaks, never for a MISSED line.
 *
 * Knobs (env; bench/run/knobs.ts): BENCH_DURATION_S (10: one slice), BENCH_WARMUP_S (3: before an
 * arm's first slice; 1 s before its others), BENCH_ROUNDS (2), BENCH_GET_CONNECTIONS (20),
 * BENCH_POST_CONNECTIONS (10; another value makes the throughput line MISSED), BENCH_SERIAL_POST (1; 0
 * skips the one-connection POST group), BENCH_CPU_PROF (0), BENCH_REFUNDS (1; 0 skips the refunds),
 * BENCH_REFUND_PARALLEL (10; another value makes the throughput line MISSED), BENCH_SERIAL_REFUNDS
 * (1; 0 skips the one-loop refunds), BENCH_REFUNDS_FIRST (0; 1 measures the refund groups before
 * the POST groups), BENCH_FLOOR (1; 0 skips every floor), BENCH_WORK_FLOOR (1; 0 skips the two work
 * floors), BENCH_RATE_LIMIT (10000: the API's RATE_LIMIT_PER_SECOND; 0 off), BENCH_GET_UNLIMITED (1;
 * 0 skips the GET without rate limits), BENCH_TEMPORAL (dev; server: the real Temporal server on
 * PostgreSQL, see bench/stack.ts), BENCH_TEMPORAL_METRICS_PORT (the dev server's /metrics port,
 * bench/stack.ts), BENCH_TEMPORAL_DYNAMIC_CONFIG (bench/stack.ts), BENCH_SOURCES (0; 1 runs the
 * sources through tsx, not the production build: bench/stack.ts). A line whose group was skipped
 * is MISSED ("no ... figure"). A short smoke run: BENCH_DURATION_S=3 BENCH_ROUNDS=1.
 */

/** A row's figure for a line; errors, or another concurrency than the line's, make it not count. */
function figure(
  r: ScenarioResult | undefined,
  pick: (r: ScenarioResult) => number,
  connections: number,
): Figure | undefined {
  if (!r) return undefined;
  const bad = r.errors + r.non2xx;
  const flaws = [
    bad > 0 ? `${bad} errors or non-2xx answers` : '',
    r.connections !== connections ? `${r.connections} connections, not ${connections}` : '',
  ].filter(Boolean);
  return { value: pick(r), ...(flaws.length ? { flaw: flaws.join(', ') } : {}) };
}
const rps = (r: ScenarioResult) => r.requestsPerSec;
const p50 = (r: ScenarioResult) => r.latencyMs.p50;

const over = (a: number, b: number | undefined) => (b && b > 0 ? Number((a / b).toFixed(3)) : null);

/** A row against its floor (row / floor; for latencies, above 1 is slower). */
function versus(row: ScenarioResult, floor: ScenarioResult | undefined): VsFloor | undefined {
  if (!floor) return undefined;
  return {
    floor: floor.name,
    requestsPerSec: over(row.requestsPerSec, floor.requestsPerSec),
    p50: over(row.latencyMs.p50, floor.latencyMs.p50),
    p90: over(row.latencyMs.p90, floor.latencyMs.p90),
    p99: over(row.latencyMs.p99, floor.latencyMs.p99),
  };
}

/**
 * Every row of the run in group order, each against the floor it is printed beside: the GETs
 * against the baseline, each group's work floor and product against its bare floor.
 */
function rowsOf(
  get: Awaited<ReturnType<typeof getGroup>>,
  groups: Array<PostGroup | RefundGroup | undefined>,
): RunRow[] {
  const rows: RunRow[] = [
    { row: get.baseline },
    { row: get.productGet, vsFloor: versus(get.productGet, get.baseline), get: true },
  ];
  if (get.productGetUnlimited) {
    rows.push({ row: get.productGetUnlimited, vsFloor: versus(get.productGetUnlimited, get.baseline), get: true });
  }
  for (const g of groups) {
    if (!g) continue;
    if (g.floor) rows.push({ row: g.floor });
    if (g.work) rows.push({ row: g.work, vsFloor: versus(g.work, g.floor) });
    rows.push({ row: g.result, vsFloor: versus(g.result, g.floor) });
  }
  return rows;
}

async function main(): Promise<void> {
  const { startedAt, git, machine, watchdog } = beginRun(RUN_TIMEOUT_MS);
  if (machine.loadAverage1mAtStart > machine.cpuCount / 2) {
    say('  (the machine is busy with other work: numbers will be lower; see "outside this benchmark" below)');
  }
  const stack = await startRunStack();
  say(
    `Stack ready in ${stack.readyS.toFixed(1)} s (PostgreSQL ${stack.postgresVersion}, Temporal ${stack.temporalServer} ` +
      `at ${stack.temporalAddress}; processes: ${PROCESSES}).`,
  );
  say(`Sandbox faults: ${JSON.stringify(stack.faults)}`);

  const get = await getGroup(stack);
  const postGroups = async () => ({
    post: await postGroup(stack, 'product POST /payments (token flow)', POST_CONNECTIONS),
    // One request at a time: the path's own latency without queueing behind other requests.
    serial: SERIAL_POST ? await postGroup(stack, 'product POST /payments, 1 connection', 1) : undefined,
  });
  const refundGroups = async () => ({
    refunds: REFUNDS ? await refundGroup(stack, 'refund POST /payments/{id}/refund', REFUND_PARALLEL) : undefined,
    refundsSerial:
      REFUNDS && SERIAL_REFUNDS
        ? await refundGroup(stack, 'refund POST /payments/{id}/refund, 1 connection', 1)
        : undefined,
  });
  // Payments, then refunds; BENCH_REFUNDS_FIRST=1 swaps them (the dev server's cost per call grows
  // over a run, so whichever runs last pays more: bench/RESULTS.md, "Twenty-first", item 8).
  const [{ post, serial }, { refunds, refundsSerial }] = REFUNDS_FIRST
    ? await refundGroups().then(async (r) => [await postGroups(), r] as const)
    : await postGroups().then(async (p) => [p, await refundGroups()] as const);

  const ledgerCheck: Record<string, unknown> = {
    [post.result.name]: post.checks,
    ...(serial ? { [serial.result.name]: serial.checks } : {}),
  };
  for (const r of [refunds, refundsSerial]) if (r) ledgerCheck[r.result.name] = r.check;
  const ledgerOk =
    post.checks.every((c) => c.ok) &&
    (serial?.checks.every((c) => c.ok) ?? true) &&
    (refunds?.check.ok ?? true) &&
    (refundsSerial?.check.ok ?? true);

  const histories = await sampleHistories(
    stack.temporalAddress,
    serial?.answered ?? post.answered,
    (refundsSerial ?? refunds)?.attempts ?? [],
    stack.paymentId,
  );
  printHistories(histories);

  const rows = rowsOf(get, [post, serial, refunds, refundsSerial]);
  printRunResults({
    startedAt,
    rows,
    get,
    rateLimit: RATE_LIMIT,
    timing: { rounds: ROUNDS, durationS: DURATION_S, warmupS: WARMUP_S, settleS: SETTLE_S },
  });

  const targets = evaluateTargets(
    {
      node: process.version,
      baselineGet: figure(get.baseline, rps, GET_CONNECTIONS),
      productGet: figure(get.productGet, rps, GET_CONNECTIONS),
      postP50At1: figure(serial?.result, p50, 1),
      postRpsAt10: figure(post.result, rps, 10),
      workP50At1: figure(serial?.work, p50, 1),
      workRpsAt10: figure(post.work, rps, 10),
      floorP50At1: figure(serial?.floor, p50, 1),
      floorRpsAt10: figure(post.floor, rps, 10),
      refundP50At1: figure(refundsSerial?.result, p50, 1),
      refundRpsAt10: figure(refunds?.result, rps, 10),
      refundWorkP50At1: figure(refundsSerial?.work, p50, 1),
      refundWorkRpsAt10: figure(refunds?.work, rps, 10),
      refundFloorP50At1: figure(refundsSerial?.floor, p50, 1),
      refundFloorRpsAt10: figure(refunds?.floor, rps, 10),
    },
    'run',
  );
  printTargets(targets);

  writeResults(path.join(OUT_DIR, 'latest.json'), {
    date: startedAt.toISOString(),
    machine,
    git,
    stack: {
      postgres: `${stack.postgresVersion} (embedded, ephemeral: fsync/synchronous_commit/full_page_writes off)`,
      temporal: stack.temporalServer,
      processes: PROCESSES,
      logLevel: 'warn',
      poolMax: 10,
      readyS: Number(stack.readyS.toFixed(1)),
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
      floor: FLOOR
        ? { callers: [POST_CONNECTIONS, 1], workFloors: WORK_FLOOR, warmupS: WARMUP_S, durationS: DURATION_S }
        : false,
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
      baseline: get.baseline,
      productGet: get.productGet,
      ...(get.productGetUnlimited ? { productGetUnlimited: get.productGetUnlimited } : {}),
      productPost: post.result,
      ...(serial ? { productPostSerial: serial.result } : {}),
      ...(refunds ? { refunds: refunds.result } : {}),
      ...(refundsSerial ? { refundsSerial: refundsSerial.result } : {}),
    },
    floors: {
      ...(post.floor ? { updateWithStart: post.floor } : {}),
      ...(serial?.floor ? { updateWithStartSerial: serial.floor } : {}),
      ...(post.work ? { workFloor: post.work } : {}),
      ...(serial?.work ? { workFloorSerial: serial.work } : {}),
      ...(refunds?.floor ? { updateWithStartBesideRefunds: refunds.floor } : {}),
      ...(refundsSerial?.floor ? { updateWithStartSerialBesideRefunds: refundsSerial.floor } : {}),
      ...(refunds?.work ? { refundWorkFloor: refunds.work } : {}),
      ...(refundsSerial?.work ? { refundWorkFloorSerial: refundsSerial.work } : {}),
    },
    /** Each row against the bare floor of its group (product / floor; for latencies, above 1 is slower). */
    vsFloor: Object.fromEntries(rows.flatMap((r) => (r.vsFloor ? [[r.row.name, r.vsFloor]] : []))),
    getThroughputRatio: Number((get.productGet.requestsPerSec / get.baseline.requestsPerSec).toFixed(3)),
    ...(get.productGetUnlimited
      ? {
          getRateLimitingCost: Number(
            (get.productGet.requestsPerSec / get.productGetUnlimited.requestsPerSec).toFixed(3),
          ),
        }
      : {}),
    getCpuPerRequestRatio: Number((get.baseline.stackCpuMsPerRequest / get.productGet.stackCpuMsPerRequest).toFixed(3)),
    targets,
    ledgerCheck,
    paymentWorkflowHistory: histories.payment,
    ...(histories.refund ? { refundWorkflowHistory: histories.refund } : {}),
    sandboxFaults: stack.faults,
  });

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
