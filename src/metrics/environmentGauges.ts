import { Gauge } from 'prom-client';
import type { Logger } from '../logger';

/** One gauge's value in one key environment. */
export interface EnvironmentCount {
  environment: string;
  n: number | string;
}

/** Several scrapers (or a cluster's API processes) cost one set of queries per interval. */
const CACHE_MS = 15_000;
const ENVIRONMENTS = ['test', 'live'] as const;

/**
 * Gauges by key environment counted by the API at scrape time from one snapshot of PostgreSQL
 * (`read`), answered from a cache for CACHE_MS. Both environments always have a series (0 when
 * nothing is counted); a failed read leaves the gauges without series (the scrape still answers)
 * and the next scrape reads again. Every API process counts the same rows: a cluster shows one
 * count (`max`), not their sum.
 */
export function registerEnvironmentGauges<S>(opts: {
  /** For the warning when the read fails. */
  what: string;
  logger: Logger;
  read: () => Promise<S>;
  gauges: Array<{ name: string; help: string; pick: (s: S) => EnvironmentCount[] }>;
}): void {
  let cached: { at: number; snapshot: Promise<S | null> } | undefined;
  const snapshot = (): Promise<S | null> => {
    const now = Date.now();
    if (cached && now - cached.at < CACHE_MS) return cached.snapshot;
    const taken = opts.read().catch((err: unknown) => {
      opts.logger.warn({ err }, `${opts.what}: query failed`);
      cached = undefined;
      return null;
    });
    cached = { at: now, snapshot: taken };
    return taken;
  };
  for (const { name, help, pick } of opts.gauges) {
    new Gauge({
      name,
      help,
      labelNames: ['environment'],
      aggregator: 'max',
      async collect() {
        const s = await snapshot();
        this.reset();
        if (s === null) return;
        for (const environment of ENVIRONMENTS) this.set({ environment }, 0);
        for (const row of pick(s)) this.set({ environment: row.environment }, Number(row.n));
      },
    });
  }
}
