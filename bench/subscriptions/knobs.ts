import { envInt, workerNodeArgs } from '../stack';

/** `npm run bench:subscriptions`'s knobs, read once from the environment (the list: bench/subscriptions.ts's header). */

export const N = envInt('BENCH_SUBS_N', 1000);
export const CONCURRENCY = envInt('BENCH_SUBS_CONCURRENCY', 20);
export const WARMUP = envInt('BENCH_SUBS_WARMUP', 100, 10);
export const BILLING_DAY_S = envInt('BENCH_SUBS_BILLING_DAY_S', 1);
export const SAFETY_PCT = envInt('BENCH_SUBS_SAFETY_PCT', 115, 100);
export const IDLE_S = envInt('BENCH_SUBS_IDLE_S', 30);
export const DUE_IN_S = envInt('BENCH_SUBS_DUE_IN_S', 0, 0);
export const STORM_TIMEOUT_S = envInt('BENCH_SUBS_STORM_TIMEOUT_S', 900);
export const HISTORY_SAMPLE = envInt('BENCH_SUBS_HISTORY_SAMPLE', 20);
export const CAN_RUNS = envInt('BENCH_SUBS_CAN_RUNS', 2, 0);
export const CAN_TIMEOUT_S = envInt('BENCH_SUBS_CAN_TIMEOUT_S', 300);
/** The checkout probe's pause between two token payments (0 turns the probe off). */
export const CHECKOUT_PAUSE_MS = envInt('BENCH_SUBS_CHECKOUT_PAUSE_MS', 1000, 0);
/**
 * The create probe's pause between two token POST /subscriptions (0 turns it off). Its subscriptions
 * bill every EVERGREEN_DAYS, so none renews during the run.
 */
export const CREATE_PAUSE_MS = envInt('BENCH_SUBS_CREATE_PAUSE_MS', 1000, 0);
/**
 * The worker's Node flags as the product starts it (WORKER_NODE_ARGS, compiled with the build:
 * bench/stack.ts) unless the knob says otherwise. Known once the build is made.
 */
export const workerNodeOptions = () => process.env.BENCH_SUBS_WORKER_NODE_OPTIONS ?? workerNodeArgs().join(' ');
/** BENCH_SUBS_CPU_PROF=1 runs the worker with --cpu-prof (into bench/.out/profiles/subscriptions-worker). */
export const CPU_PROF = process.env.BENCH_SUBS_CPU_PROF === '1';
/** BENCH_FLOOR=0 skips the timer-storm floor (the storm lines are then MISSED). */
export const FLOOR = process.env.BENCH_FLOOR !== '0';
/** The floor storm at the product storm's count by default: the storm lines compare both at 10,000. */
export const FLOOR_STORM_N = envInt('BENCH_FLOOR_STORM_N', N);
/** Starts run at ~150/s here; 100/s leaves room, plus 10 s. */
export const FLOOR_STORM_DUE_IN_S = envInt('BENCH_FLOOR_STORM_DUE_IN_S', 10 + Math.ceil(FLOOR_STORM_N / 100));
export const FLOOR_STORM_TIMEOUT_S = envInt('BENCH_FLOOR_STORM_TIMEOUT_S', 300);
/** The watchdog: stack ~60 s, warm-up, creation at >= 4/s, idle, the storm, the floor, the demo, checks and teardown. */
export const RUN_TIMEOUT_S = envInt(
  'BENCH_SUBS_TIMEOUT_S',
  300 +
    Math.ceil((WARMUP + N) / 4) +
    IDLE_S +
    STORM_TIMEOUT_S +
    (CAN_RUNS > 0 ? CAN_TIMEOUT_S : 0) +
    (FLOOR ? 60 + FLOOR_STORM_DUE_IN_S + FLOOR_STORM_TIMEOUT_S : 0),
);

/** The storm (and create probe) subscriptions' evergreen interval: no third invoice while the run lasts. */
export const EVERGREEN_DAYS = 3650;
export const AMOUNT = 10;
export const CLIENT_TIMEOUT_MS = 60_000;
export const RSS_INTERVAL_MS = 1000;
