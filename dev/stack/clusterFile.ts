import path from 'node:path';

/** What a running `npm run cluster` publishes in its data dir: addresses and the current pids. */
export interface ClusterFile {
  startedAt: string;
  apiUrl: string;
  sandboxUrl: string;
  temporalAddress: string;
  temporalUiUrl: string | null;
  databaseUrl: string;
  mailDir: string | null;
  demoMerchant: { merchantId: string; publicKey: string; secretKey: string };
  /** Prometheus endpoints: the API's (aggregated over its processes) and worker #i's at index i - 1. */
  metrics: { api: string | null; workers: string[] };
  /** Rewritten whenever a process (re)starts. */
  pids: {
    postgres?: number;
    sandbox?: number;
    api: Record<string, number | undefined>;
    worker: Record<string, number | undefined>;
    temporal: Record<string, number | undefined>;
  };
}

export function clusterFilePath(dataDir: string): string {
  return path.join(dataDir, 'cluster.json');
}
