import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { ownChild, stopProcess } from '../infra/processes';
import { freeLoopbackPort, freeLoopbackPortRange } from '../infra/ports';
import {
  allPorts,
  MAX_MEMBERSHIP_PORT,
  MEMBERSHIP_PORT_OFFSET,
  temporalServerPorts,
} from '../infra/temporalServerConfig';
import { clusterFilePath, type ClusterFile } from './clusterFile';
import { CLUSTER_SECRET_NAMES } from './clusterEnv';
import { ROOT } from './stackParts';

/**
 * `npm run cluster` as a child of a tool (`npm run chaos`, `npm run bench:capacity`): its own
 * data dir (a fresh temp dir unless given) and free ports, never the defaults, so it runs beside
 * a developer's cluster. `startClusterChild` resolves once the cluster printed "Ready in" and
 * published its cluster.json; `stop()` sends SIGTERM (the cluster stops its own children).
 */
export interface ClusterChild {
  dataDir: string;
  /** The environment the cluster was started with (ports, DATA_DIR): for CLI calls against it. */
  env: NodeJS.ProcessEnv;
  /** The cluster process (the node:cluster primary and supervisor). */
  pid: number;
  /** Addresses and pids as the cluster published them once ready (re-read it for restarted pids). */
  file: ClusterFile;
  /** Seconds from spawn to "Ready in". */
  startS: number;
  /** Supervisor restarts seen in the cluster's output, by process kind (`worker`, `api`, `temporal-history`...). */
  restarts: Record<string, number>;
  /** Everything the cluster printed, also appended to `<dataDir>/cluster-stdout.log`. */
  output(): string;
  readClusterFile(): ClusterFile;
  stop(): Promise<void>;
}

export interface ClusterChildOptions {
  dataDir?: string;
  /** Extra environment (API_PROCESSES, WORKER_PROCESSES, BILLING_DAY_SECONDS...), over the defaults below. */
  env?: NodeJS.ProcessEnv;
  /** Bound on the start-up; the first start may build the Temporal server with Go (default: none). */
  readyTimeoutMs?: number;
}

/** A frontend port whose derived service ports (dev/infra/temporalServerConfig.ts) are all free. */
export async function freeTemporalFrontendPort(): Promise<number> {
  for (let attempt = 0; attempt < 50; attempt++) {
    // Membership ports (P - 300 + 0..3) must stay at or below MAX_MEMBERSHIP_PORT.
    const base = 20_000 + Math.floor(Math.random() * (MAX_MEMBERSHIP_PORT - MEMBERSHIP_PORT_OFFSET - 3 - 20_000));
    const free = await Promise.all(allPorts(temporalServerPorts(base)).map(portIsFree));
    if (free.every(Boolean)) return base;
  }
  throw new Error('no free set of ports for the Temporal services');
}

function portIsFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

export async function startClusterChild(opts: ClusterChildOptions = {}): Promise<ClusterChild> {
  const started = Date.now();
  const dataDir = opts.dataDir ?? fs.mkdtempSync(path.join(os.tmpdir(), 'cluster-'));
  // As root, PostgreSQL runs as `postgres` and must reach its directory.
  fs.chmodSync(dataDir, 0o755);
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    NODE_ENV: 'development',
    DATA_DIR: dataDir,
    PORT: String(await freeLoopbackPort()),
    SANDBOX_PORT: String(await freeLoopbackPort()),
    PG_PORT: String(await freeLoopbackPort()),
    SMTP_PORT: String(await freeLoopbackPort()),
    TEMPORAL_UI_PORT: String(await freeLoopbackPort()),
    TEMPORAL_PORT: String(await freeTemporalFrontendPort()),
    METRICS_PORT: String(await freeLoopbackPort()),
    LOG_LEVEL: 'warn',
    ...opts.env,
  };
  // Worker #i's metrics on WORKER_METRICS_PORT + i - 1, then the delivery workers': a run of free
  // ports (the default counts are 2 and 1).
  const workerProcesses = Number(env.WORKER_PROCESSES || 2) + Number(env.DELIVERY_WORKER_PROCESSES || 1);
  env.WORKER_METRICS_PORT = opts.env?.WORKER_METRICS_PORT ?? String(await freeLoopbackPortRange(workerProcesses));
  // Bound to loopback: only this tool scrapes them.
  env.METRICS_HOST = opts.env?.METRICS_HOST ?? '127.0.0.1';
  // Its API and workers run the production profile: strong secrets, known here too (a tool that
  // calls the sandbox's API uses SANDBOX_API_KEY), unless the caller gave its own.
  for (const name of CLUSTER_SECRET_NAMES) env[name] = opts.env?.[name] ?? randomBytes(32).toString('base64url');
  // The cluster runs its own database, Temporal server, sandbox and mail catcher.
  for (const name of ['DATABASE_URL', 'TEMPORAL_ADDRESS', 'SANDBOX_URL', 'SMTP_URL', 'PUBLIC_BASE_URL'])
    delete env[name];

  const logFile = path.join(dataDir, 'cluster-stdout.log');
  const restarts: Record<string, number> = {};
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(ROOT, 'dev', 'stack', 'cluster.ts')], {
    cwd: ROOT,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  ownChild(child);
  let output = '';
  const ready = new Promise<void>((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      const text = chunk.toString('utf8');
      fs.appendFileSync(logFile, text);
      output += text;
      for (const m of text.matchAll(/The (\S+) process exited/g)) {
        const kind = m[1]!.replace(/#\d+$/, '');
        restarts[kind] = (restarts[kind] ?? 0) + 1;
      }
      if (/^Ready in /m.test(output)) resolve();
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.once('exit', (code) =>
      reject(new Error(`the cluster exited (${code}) before it was ready:\n${output.slice(-3000)}`)),
    );
  });
  const stop = () => stopProcess(child, 60_000);

  try {
    let timer: NodeJS.Timeout | undefined;
    await (opts.readyTimeoutMs === undefined
      ? ready
      : Promise.race([
          ready,
          new Promise<never>((_, reject) => {
            timer = setTimeout(
              () =>
                reject(
                  new Error(
                    `the cluster was not ready within ${opts.readyTimeoutMs! / 1000} s:\n${output.slice(-3000)}`,
                  ),
                ),
              opts.readyTimeoutMs,
            );
          }),
        ]).finally(() => clearTimeout(timer)));
  } catch (err) {
    await stop();
    throw err;
  }
  const readClusterFile = () => JSON.parse(fs.readFileSync(clusterFilePath(dataDir), 'utf8')) as ClusterFile;
  return {
    dataDir,
    env,
    pid: child.pid!,
    file: readClusterFile(),
    startS: (Date.now() - started) / 1000,
    restarts,
    output: () => output,
    readClusterFile,
    stop,
  };
}
