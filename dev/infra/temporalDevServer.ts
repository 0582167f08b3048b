import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import { Connection } from '@temporalio/client';
import { customSearchAttributes } from '../../workflows/searchAttributes';
import { ownChild, stopProcess } from './processes';
import { OUR_TUNING } from './temporalServerConfig';

export interface DevServerOptions {
  cliPath: string;
  port: number;
  /** Omit for a headless server (tests). */
  uiPort?: number;
  /** The UI's remote codec (the API's /codec, decision 0078): it shows payloads decrypted. */
  uiCodecEndpoint?: string;
  /** SQLite file; omit for an in-memory server. */
  dbFile?: string;
  logFile?: string;
  namespace?: string;
  /** The server's Prometheus `/metrics` port; omitted, the CLI picks a free one itself. */
  metricsPort?: number;
  /** Dynamic config set over the product's tuning, for experiments (the bench's A/B runs). */
  dynamicConfigOverrides?: Readonly<Record<string, unknown>>;
  readyTimeoutMs?: number;
}

export interface DevServer {
  address: string;
  process: ChildProcess;
  stop(): Promise<void>;
}

const SEARCH_ATTRIBUTE_TYPES: Record<string, string> = {
  KEYWORD: 'Keyword',
  TEXT: 'Text',
  INT: 'Int',
  DOUBLE: 'Double',
  BOOL: 'Bool',
  DATETIME: 'Datetime',
  KEYWORD_LIST: 'KeywordList',
};

/**
 * The production cluster's own tuning (temporalServerConfig.ts, OUR_TUNING), so the dev server
 * behaves as production does where the product depends on it.
 */
const DEV_SERVER_DYNAMIC_CONFIG = OUR_TUNING;

export function devServerArgs(opts: DevServerOptions): string[] {
  const args = ['server', 'start-dev', '--ip', '127.0.0.1', '--port', String(opts.port), '--log-level', 'warn'];
  if (opts.uiPort) args.push('--ui-port', String(opts.uiPort));
  else args.push('--headless');
  if (opts.uiPort && opts.uiCodecEndpoint) args.push('--ui-codec-endpoint', opts.uiCodecEndpoint);
  if (opts.dbFile) args.push('--db-filename', opts.dbFile);
  if (opts.namespace && opts.namespace !== 'default') args.push('--namespace', opts.namespace);
  for (const key of customSearchAttributes) {
    args.push('--search-attribute', `${key.name}=${SEARCH_ATTRIBUTE_TYPES[key.type] ?? 'Keyword'}`);
  }
  args.push(...devServerTuningArgs(opts));
  return args;
}

/**
 * The flags of `temporal server start-dev` that the dev server @temporalio/testing downloads when no
 * CLI is found gets too (dev/infra/temporal.ts): the metrics port, our tuning and any overrides.
 */
export function devServerTuningArgs(opts: Pick<DevServerOptions, 'metricsPort' | 'dynamicConfigOverrides'>): string[] {
  const args = opts.metricsPort ? ['--metrics-port', String(opts.metricsPort)] : [];
  for (const [name, value] of Object.entries({ ...DEV_SERVER_DYNAMIC_CONFIG, ...opts.dynamicConfigOverrides })) {
    args.push('--dynamic-config-value', `${name}=${JSON.stringify(value)}`);
  }
  return args;
}

/** Starts `temporal server start-dev` and resolves once its frontend answers health checks. */
export async function startTemporalDevServer(opts: DevServerOptions): Promise<DevServer> {
  const address = `127.0.0.1:${opts.port}`;
  const out = opts.logFile ? fs.openSync(opts.logFile, 'a') : 'ignore';
  const child = spawn(opts.cliPath, devServerArgs(opts), { stdio: ['ignore', out, out] });
  const owned = ownChild(child);
  const stop = () => stopProcess(child, 10_000);

  const deadline = Date.now() + (opts.readyTimeoutMs ?? 60_000);
  for (;;) {
    const exited = owned.exited();
    if (exited) throw new Error(`Temporal dev server ${exited}${opts.logFile ? `; see ${opts.logFile}` : ''}`);
    try {
      const connection = await Connection.connect({ address, connectTimeout: 1000 });
      try {
        await connection.withDeadline(Date.now() + 2000, () =>
          connection.workflowService.describeNamespace({ namespace: opts.namespace ?? 'default' }),
        );
        return { address, process: child, stop };
      } finally {
        await connection.close();
      }
    } catch (err) {
      if (Date.now() > deadline) {
        await stop();
        throw new Error(`Temporal dev server not ready at ${address}: ${(err as Error).message}`);
      }
      await new Promise((r) => setTimeout(r, 250));
    }
  }
}
