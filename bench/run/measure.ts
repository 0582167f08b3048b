import os from 'node:os';
import autocannon from 'autocannon';
import { cpuBetween, sampleCpu, stackCores, type CpuSample } from '../stack';
import { DURATION_S, ROUNDS, SETTLE_S, WARMUP_S } from './knobs';
import { announce, printSlice } from '../report';

export { percentile } from '../floor/scenarios';

/** One row of `npm run bench`: a scenario's slice, or an arm's slices combined. */
export interface ScenarioResult {
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
  /** CPU time the stack (every process but the load generator) spent per answered request. */
  stackCpuMsPerRequest: number;
  loadAverage1mBefore: number;
  /** A combined row's slices (`combine`), in the order they were measured. */
  slices?: Array<{ requestsPerSec: number; p50: number; durationS: number }>;
}

/** An arm of a group: measures one slice after `warmupS` of warm-up. */
export type Arm<T> = (warmupS: number) => Promise<T>;

/** CPU between two samples: cores per group, and the stack's CPU ms per unit of work. */
export function cpuPer(before: CpuSample, after: CpuSample, seconds: number, units: number) {
  const cpuCores = cpuBetween(before, after, seconds);
  return {
    cpuCores,
    stackCpuMsPerRequest: units > 0 ? Number(((stackCores(cpuCores) * seconds * 1000) / units).toFixed(2)) : 0,
  };
}

export const loadAverage1m = () => Number(os.loadavg()[0]?.toFixed(2));

function cannon(opts: autocannon.Options): Promise<autocannon.Result> {
  return new Promise((resolve, reject) => {
    autocannon(opts, (err, result) => (err ? reject(err) : resolve(result)));
  });
}

/** One autocannon slice: `warmupS` thrown away, `beforeMeasure`, then DURATION_S measured. */
export async function measure(
  name: string,
  opts: autocannon.Options & { url: string },
  hooks: { beforeMeasure?: () => void | Promise<void> } = {},
  warmupS = WARMUP_S,
): Promise<ScenarioResult> {
  announce(`${name}: ${opts.connections} connections, ${warmupS} s warm-up + ${DURATION_S} s...`);
  if (warmupS > 0) await cannon({ ...opts, duration: warmupS });
  await hooks.beforeMeasure?.();
  const loadAverage1mBefore = loadAverage1m();
  const before = sampleCpu();
  const t0 = process.hrtime.bigint();
  const r = await cannon({ ...opts, duration: DURATION_S });
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
  const after = sampleCpu();
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
    ...cpuPer(before, after, seconds, r.requests.total),
    loadAverage1mBefore,
  };
  printSlice(result);
  return result;
}

/**
 * Measures each arm ROUNDS times, in mirrored rounds (arms in order, then reversed, ...), so that a
 * drift of the machine or of Temporal's state during the group weighs on every arm alike. An arm
 * gets the full warm-up before its first slice and SETTLE_S before the others. Answers each arm's
 * slices, in the arms' order.
 */
export async function mirrored<T>(arms: Array<Arm<T>>): Promise<T[][]> {
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
export function combine<T extends ScenarioResult>(slices: T[]): T {
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
