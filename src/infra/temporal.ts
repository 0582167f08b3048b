import { TestWorkflowEnvironment } from '@temporalio/testing';
import { locateTemporalCli } from './temporalCli';
import { startTemporalDevServer } from './temporalDevServer';
import { customSearchAttributes } from '../../workflows/searchAttributes';

export interface RunningTemporal {
  address: string;
  stop(): Promise<void>;
}

export interface StartTemporalOptions {
  port: number;
  uiPort?: number;
  dbFile?: string;
  logFile?: string;
  namespace?: string;
  /** The dev server's Prometheus `/metrics` port (its history, matching and persistence metrics). */
  metricsPort?: number;
  /** Dynamic config set over the product's tuning (the dev server from the CLI only). */
  dynamicConfigOverrides?: Readonly<Record<string, unknown>>;
  log?: (msg: string) => void;
}

/**
 * The Temporal dev server from the located (or freshly built) CLI; as a last resort the
 * SDK downloads one, which needs internet access.
 */
export async function startTemporal(opts: StartTemporalOptions): Promise<RunningTemporal> {
  const cliPath = await locateTemporalCli(opts.log);
  if (cliPath) return startTemporalDevServer({ ...opts, cliPath });

  if (Object.keys(opts.dynamicConfigOverrides ?? {}).length > 0) {
    // The downloaded server gets none of our dynamic config: an experiment on it would measure nothing.
    throw new Error('Dynamic config overrides need the Temporal CLI dev server (no CLI found, no Go to build one)');
  }
  opts.log?.('No Temporal CLI and no Go toolchain: letting @temporalio/testing download the dev server...');
  const env = await TestWorkflowEnvironment.createLocal({
    server: {
      ip: '127.0.0.1',
      port: opts.port,
      ...(opts.uiPort ? { ui: true, uiPort: opts.uiPort } : {}),
      ...(opts.dbFile ? { dbFilename: opts.dbFile } : {}),
      ...(opts.namespace ? { namespace: opts.namespace } : {}),
      searchAttributes: customSearchAttributes,
    },
  });
  return { address: `127.0.0.1:${opts.port}`, stop: () => env.teardown() };
}
