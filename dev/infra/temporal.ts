import { TestWorkflowEnvironment, type DevServerConfig } from '@temporalio/testing';
import { locateTemporalCli } from './temporalCli';
import { devServerTuningArgs, startTemporalDevServer } from './temporalDevServer';
import { customSearchAttributes } from '../../workflows/searchAttributes';

export interface RunningTemporal {
  address: string;
  stop(): Promise<void>;
}

export interface StartTemporalOptions {
  port: number;
  uiPort?: number;
  /** See DevServerOptions.uiCodecEndpoint (the CLI's dev server only). */
  uiCodecEndpoint?: string;
  dbFile?: string;
  logFile?: string;
  namespace?: string;
  /** The dev server's Prometheus `/metrics` port (its history, matching and persistence metrics). */
  metricsPort?: number;
  /** Dynamic config set over the product's tuning. */
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

  opts.log?.('No Temporal CLI and no Go toolchain: letting @temporalio/testing download the dev server...');
  const env = await TestWorkflowEnvironment.createLocal({ server: downloadedDevServerOptions(opts) });
  return { address: `127.0.0.1:${opts.port}`, stop: () => env.teardown() };
}

/** The downloaded dev server's options: the same search attributes, metrics port and dynamic config as the CLI's. */
export function downloadedDevServerOptions(opts: StartTemporalOptions): Omit<DevServerConfig, 'type'> {
  return {
    ip: '127.0.0.1',
    port: opts.port,
    ...(opts.uiPort ? { ui: true, uiPort: opts.uiPort } : {}),
    ...(opts.dbFile ? { dbFilename: opts.dbFile } : {}),
    ...(opts.namespace ? { namespace: opts.namespace } : {}),
    searchAttributes: customSearchAttributes,
    extraArgs: devServerTuningArgs(opts),
  };
}
