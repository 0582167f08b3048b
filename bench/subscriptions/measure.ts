import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import { BENCH_GROUP, cpuBetween, rssByGroup, sampleCpu, type CpuSample } from '../stack';
import { RSS_INTERVAL_MS } from './knobs';

/** What the subscription bench measures with: percentiles, the worker's heap and RSS, CPU per phase. */

/** Nearest-rank percentile of ascending values. */
export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return 0;
  const rank = Math.min(sorted.length, Math.max(1, Math.ceil((p / 100) * sorted.length)));
  return sorted[rank - 1]!;
}

export const round = (n: number, digits = 1) => Number(n.toFixed(digits));
export const mib = (kib: number) => round(kib / 1024, 0);

/** The V8 heap limit a node process gets with these NODE_OPTIONS, and the SDK's default cache size. */
export function workerHeapAndDefaultCache(nodeOptions: string): {
  heapLimitMiB: number;
  defaultMaxCachedWorkflows: number;
} {
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

export interface RssPoint {
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

export class Sampler {
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
export function phaseCpu(before: CpuSample, after: CpuSample, seconds: number, units: number) {
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
