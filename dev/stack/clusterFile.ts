import path from 'node:path';

/** What a running `npm run cluster` publishes in its data dir: addresses and the current pids. */
export interface ClusterFile {
  startedAt: string;
  apiUrl: string;
  sandboxUrl: string;
  temporalAddress: string;
  temporalUiUrl: string | null;
  /** The owner's (the embedded PostgreSQL's superuser): for the machine's tools (chaos, benches). */
  databaseUrl: string;
  /** The application role's, as the API, workers and CLI connect (decision 0086, amended). */
  applicationDatabaseUrl?: string;
  mailDir: string | null;
  demoMerchant: { merchantId: string; publicKey: string; secretKey: string };
  /**
   * Prometheus endpoints: the API's (aggregated over its processes), worker #i's at index i - 1 of
   * `workers`, delivery worker #j's at index j - 1 of `deliveryWorkers`.
   */
  metrics: { api: string | null; workers: string[]; deliveryWorkers: string[] };
  /** Rewritten whenever a process (re)starts. */
  pids: {
    postgres?: number;
    sandbox?: number;
    api: Record<string, number | undefined>;
    worker: Record<string, number | undefined>;
    /** The event delivery workers (WORKER_ROLE `deliveries`; decision 0071), `delivery-worker#j`. */
    deliveryWorker: Record<string, number | undefined>;
    temporal: Record<string, number | undefined>;
  };
}

export function clusterFilePath(dataDir: string): string {
  return path.join(dataDir, 'cluster.json');
}
