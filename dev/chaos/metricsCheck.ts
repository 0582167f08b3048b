import type { InvariantResult } from './invariants';

/**
 * Issue 13, item 4: the workers' metrics seen through a chaos run, held against the witnesses.
 * Pure functions over scrapes, unit-tested apart from the run (test/unit/chaosMetrics.test.ts).
 *
 * What can be asked of counters in processes that are SIGKILLed: a killed worker loses what it
 * counted since its last scrape, and its successor starts from 0. So the sum of increases
 * (a drop is a restart: the new value is all increase) can fall short of the database, never
 * exceed it: more would mean a money movement counted twice. And every worker kill must show in
 * the metrics: its endpoint stops answering, or its counters start again from 0.
 */

/** The counters checked, each the sum of its `outcome="succeeded"` series. */
export const CHECKED_COUNTERS = ['payments_total', 'refunds_total', 'subscription_charges_total'] as const;
export type CheckedCounter = (typeof CHECKED_COUNTERS)[number];

/** One scrape of one endpoint: the checked counters, or null when it did not answer. */
export interface Scrape {
  endpoint: string;
  at: number;
  values: Record<CheckedCounter, number> | null;
  /** The process's `process_start_time_seconds`: a new value is a restart. */
  startTime?: number;
}

/** The worker process's start time out of Prometheus text (undefined: not exported). */
export function parseStartTime(text: string): number | undefined {
  const m = /^process_start_time_seconds(?:\{[^}]*\})?\s+(\S+)/m.exec(text);
  return m ? Number(m[1]) : undefined;
}

/** The checked counters out of Prometheus text (succeeded outcomes only, all other labels summed). */
export function parseCounters(text: string): Record<CheckedCounter, number> {
  const values = Object.fromEntries(CHECKED_COUNTERS.map((n) => [n, 0])) as Record<CheckedCounter, number>;
  for (const line of text.split('\n')) {
    if (line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)/.exec(line);
    if (!m) continue;
    const name = m[1] as CheckedCounter;
    if (!CHECKED_COUNTERS.includes(name) || !/outcome="succeeded"/.test(m[2] ?? '')) continue;
    const value = Number(m[3]);
    if (Number.isFinite(value)) values[name] += value;
  }
  return values;
}

export interface MetricsSummary {
  /** Sum of increases per counter, over every endpoint, restarts included. */
  counted: Record<CheckedCounter, number>;
  /** Moments an endpoint did not answer, or answered with a counter below its last value. */
  outages: Array<{ endpoint: string; at: number; kind: 'unanswered' | 'restarted' }>;
  scrapes: number;
}

/** Scrapes in time order (any endpoints) to increases and outages. Fresh processes start at 0. */
export function summarize(scrapes: Scrape[]): MetricsSummary {
  const counted = Object.fromEntries(CHECKED_COUNTERS.map((n) => [n, 0])) as Record<CheckedCounter, number>;
  const last = new Map<string, { values: Record<CheckedCounter, number>; startTime?: number }>();
  const outages: MetricsSummary['outages'] = [];
  for (const s of [...scrapes].sort((a, b) => a.at - b.at)) {
    if (!s.values) {
      outages.push({ endpoint: s.endpoint, at: s.at, kind: 'unanswered' });
      continue;
    }
    const previous = last.get(s.endpoint);
    // A new process: another start time, or a counter below its last value.
    let restarted = previous !== undefined && s.startTime !== undefined && previous.startTime !== s.startTime;
    if (!restarted)
      for (const name of CHECKED_COUNTERS) if (s.values[name] < (previous?.values[name] ?? 0)) restarted = true;
    for (const name of CHECKED_COUNTERS) {
      const before = restarted ? 0 : (previous?.values[name] ?? 0);
      counted[name] += s.values[name] - before;
    }
    if (restarted) outages.push({ endpoint: s.endpoint, at: s.at, kind: 'restarted' });
    last.set(s.endpoint, { values: s.values, startTime: s.startTime });
  }
  return { counted, outages, scrapes: scrapes.length };
}

export interface MetricsCheckInput {
  scrapes: Scrape[];
  /** What the database recorded: payments that succeeded, refunds that succeeded, invoices charged. */
  recorded: Record<CheckedCounter, number>;
  /** When workers were SIGKILLed (epoch ms). */
  workerKills: number[];
  /** How soon after a kill its trace must show (the scrape interval plus the restart). */
  visibleWithinMs?: number;
}

export function checkMetrics(input: MetricsCheckInput): InvariantResult {
  const { counted, outages, scrapes } = summarize(input.scrapes);
  const violations: string[] = [];
  const notes: string[] = [];
  for (const name of CHECKED_COUNTERS) {
    const recorded = input.recorded[name];
    const got = counted[name];
    if (got > recorded) violations.push(`${name}: counted ${got}, recorded ${recorded} (counted twice)`);
    else if (got < recorded && input.workerKills.length === 0) {
      violations.push(`${name}: counted ${got}, recorded ${recorded}, with no worker killed`);
    } else notes.push(`${name}: counted ${got} of ${recorded} recorded (${recorded - got} lost with killed workers)`);
  }
  const within = input.visibleWithinMs ?? 30_000;
  for (const at of input.workerKills) {
    const seen = outages.some((o) => o.at >= at && o.at <= at + within);
    if (!seen) violations.push(`worker kill at ${new Date(at).toISOString()} not visible in the metrics`);
  }
  notes.push(`${scrapes} scrapes; ${outages.length} outage samples for ${input.workerKills.length} worker kills`);
  return {
    name: 'metrics agree with the ledger',
    checked: CHECKED_COUNTERS.length + input.workerKills.length,
    violations,
    notes,
  };
}

/** Scrapes every endpoint every `intervalMs` until stopped (one last round on stop). */
export function watchMetrics(endpoints: string[], intervalMs = 1000): { stop(): Promise<Scrape[]> } {
  const scrapes: Scrape[] = [];
  const round = async () => {
    await Promise.all(
      endpoints.map(async (endpoint) => {
        const at = Date.now();
        try {
          const res = await fetch(endpoint, { signal: AbortSignal.timeout(Math.max(500, intervalMs)) });
          const text = res.ok ? await res.text() : null;
          scrapes.push(
            text === null
              ? { endpoint, at, values: null }
              : { endpoint, at, values: parseCounters(text), startTime: parseStartTime(text) },
          );
        } catch {
          scrapes.push({ endpoint, at, values: null });
        }
      }),
    );
  };
  let stopped = false;
  const loop = (async () => {
    while (!stopped) {
      const next = Date.now() + intervalMs;
      await round();
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, next - Date.now())));
    }
  })();
  return {
    async stop() {
      stopped = true;
      await loop;
      await round();
      return scrapes;
    },
  };
}
