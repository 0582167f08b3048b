import { RUN_SOURCES, envInt } from '../stack';

/** `npm run bench`'s knobs, read once from the environment (the list and defaults: bench/run.ts's header). */

/** One slice's length, s. */
export const DURATION_S = envInt('BENCH_DURATION_S', 10);
/** The warm-up before an arm's first slice, s. */
export const WARMUP_S = envInt('BENCH_WARMUP_S', 3, 0);
/** Before an arm's later slices: the processes are warm; the other arm's last requests drain. */
export const SETTLE_S = Math.min(WARMUP_S, 1);
/** Mirrored rounds per group: 2 is one arm order and its mirror, each arm measured twice. */
export const ROUNDS = envInt('BENCH_ROUNDS', 2);
// 2 cores are shared by autocannon, the API (one event loop), PostgreSQL and, for POST, the worker,
// Temporal and the sandbox. 20 connections keep both pools of 10 busy with a request queued behind
// each, which saturates a single Node process; more would only add queueing latency, not throughput.
export const GET_CONNECTIONS = envInt('BENCH_GET_CONNECTIONS', 20);
export const POST_CONNECTIONS = envInt('BENCH_POST_CONNECTIONS', 10);
/** BENCH_SERIAL_POST=0 skips the one-connection POST group (its p50 line is then MISSED). */
export const SERIAL_POST = process.env.BENCH_SERIAL_POST !== '0';
/** BENCH_CPU_PROF=1 runs the API, worker, sandbox and floor worker with --cpu-prof (into bench/.out/profiles); numbers then suffer. */
export const CPU_PROF = process.env.BENCH_CPU_PROF === '1';
/** BENCH_REFUNDS=0 skips the refund groups. */
export const REFUNDS = process.env.BENCH_REFUNDS !== '0';
/** Concurrent refund loops, each on its own payment (one refund in flight per payment). */
export const REFUND_PARALLEL = envInt('BENCH_REFUND_PARALLEL', 10);
/** BENCH_SERIAL_REFUNDS=0 skips the one-loop refunds (their p50 line is then MISSED). */
export const SERIAL_REFUNDS = process.env.BENCH_SERIAL_REFUNDS !== '0';
/** BENCH_REFUNDS_FIRST=1 measures the refund groups before the POST groups. */
export const REFUNDS_FIRST = process.env.BENCH_REFUNDS_FIRST === '1';
export const REFUND_PAYMENT_AMOUNT = 1000;
export const REFUND_AMOUNT = 0.01;
/**
 * Rate limiting is ON in the API (PRODUCT.md, "Rate limits"), with a per-key limit above what the
 * GET scenario sends (2 cores give ~2-4k req/s), so every request goes through the limiter (its
 * leases included: about 20 per second at a key's full rate) and none is refused: the figure is
 * what the limiter costs. BENCH_RATE_LIMIT sets RATE_LIMIT_PER_SECOND (burst twice that); 0 turns
 * limiting off. BENCH_GET_UNLIMITED=0 skips the diagnostic GET on a second API process without
 * limits (the limiter's cost measured in the same run).
 */
export const RATE_LIMIT = envInt('BENCH_RATE_LIMIT', 10_000, 0);
export const GET_UNLIMITED = RATE_LIMIT > 0 && process.env.BENCH_GET_UNLIMITED !== '0';
/** How the API, worker, sandbox, baseline and floor worker run (bench/stack.ts, buildForBench). */
export const PROCESSES = RUN_SOURCES
  ? 'the sources through tsx (BENCH_SOURCES=1)'
  : 'the production build (tsc, bundle file)';
/** BENCH_FLOOR=0 skips every floor (the work-floor lines are then MISSED). */
export const FLOOR = process.env.BENCH_FLOOR !== '0';
/** BENCH_WORK_FLOOR=0 skips the two work floors (their lines are then MISSED), keeping the bare floor. */
export const WORK_FLOOR = FLOOR && process.env.BENCH_WORK_FLOOR !== '0';

/** Arms per group: the product's, the bare floor, the work floor. */
const ARMS = 1 + (FLOOR ? 1 : 0) + (WORK_FLOOR ? 1 : 0);
/** Slices the run measures: ROUNDS per arm of each group. */
export const SLICES =
  ROUNDS *
  (2 +
    (GET_UNLIMITED ? 1 : 0) +
    (1 + (SERIAL_POST ? 1 : 0)) * ARMS +
    (REFUNDS ? (1 + (SERIAL_REFUNDS ? 1 : 0)) * ARMS : 0));
/** The watchdog: start-up, checks and histories ~3 min, then every slice with its warm-up, twice over. */
export const RUN_TIMEOUT_MS = 180_000 + SLICES * 2 * (WARMUP_S + DURATION_S) * 1000;
