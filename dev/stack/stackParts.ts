import { randomBytes } from 'node:crypto';
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { ensureSchedules } from '../../src/temporal/schedules';
import { temporal } from '@temporalio/proto';
import { devPayloadKeysPath, devSecretsKeyPath, stackFilePath, type Config, type StackFile } from '../../src/config';
import { openOrm, migrate } from '../../src/db/orm';
import { grantApplicationRole, roleOfUrl } from '../../src/db/roles';
import { ensureDemoMerchant, type DemoCredentials } from '../../src/domain/demo';
import { sealSigningSecrets } from '../../src/domain/signingSecrets';
import { ProviderSecrets } from '../../src/providers/secrets';
import { startMailCatcher } from '../mail/catcher';
import { temporalClientOptions } from '../../src/temporal/connection';
import { newPayloadKeys, payloadDataConverter } from '../../src/temporal/payloadCodec';
import { workerTaskQueues, type WorkerRole } from '../../src/temporal/taskQueues';
import { ownChild } from '../infra/processes';
import { metricsUrl } from '../../src/metrics/address';
import { promoteBuild, VersionNotPolled } from '../../src/temporal/deploymentVersion';
import { loadWorkflowBundle } from '../../src/workflowBundle';

/** The parts `npm start` and `npm run cluster` share: child processes, readiness waits, the banner. */
export const ROOT = path.resolve(__dirname, '../..');

export type ProcessEntry = 'api' | 'worker' | 'sandbox';

/**
 * Node flags of every worker process run from the sources (here, `npm run worker`, the tests'
 * worker processes, the benches; docker-compose.yml has the same for the compiled ones; both
 * checked by test/unit/dockerCompose.test.ts):
 * - a V8 heap limit, so that garbage does not pile up towards the host's default limit (4 GiB on a
 *   24 GB machine) and the worker's memory follows its workflow cache (WORKER_MAX_CACHED_WORKFLOWS).
 *   10,000 live subscriptions with 1000 cached peaked at 864 MiB RSS through a renewal storm
 *   (bench/RESULTS.md);
 * - src/main/workflowThreads.ts preloaded into every thread, the SDK's workflow threads included
 *   (workflow stack traces off unless WORKFLOW_STACK_TRACES). A `--require` after tsx's CommonJS
 *   hook: in a worker thread on Node 20, tsx's ESM hook (`--import tsx`) is not yet in place
 *   when the preloads run.
 */
export const WORKER_NODE_ARGS = [
  '--max-old-space-size=768',
  '--require',
  'tsx/cjs',
  '--require',
  path.join(ROOT, 'src', 'main', 'workflowThreads.ts'),
];

/**
 * WORKER_NODE_ARGS for the compiled worker in `distDir` (tsc's output): the same heap limit, the
 * compiled preload, no tsx. docker-compose.yml writes the same for the image's dist/.
 */
export function compiledWorkerNodeArgs(distDir: string): string[] {
  const heapLimit = WORKER_NODE_ARGS.filter((arg) => arg.startsWith('--max-old-space-size='));
  return [...heapLimit, '--require', path.join(distDir, 'src', 'main', 'workflowThreads.js')];
}

/** Where each process's entry point is: the product's in src/main/, the sandbox's in dev/sandbox/. */
const ENTRY_FILES: Readonly<Record<ProcessEntry, string>> = {
  api: path.join(ROOT, 'src', 'main', 'api.ts'),
  worker: path.join(ROOT, 'src', 'main', 'worker.ts'),
  sandbox: path.join(ROOT, 'dev', 'sandbox', 'main.ts'),
};

/** A project process (ENTRY_FILES) with its output appended to `logFile`. */
export function startEntry(entry: ProcessEntry, env: NodeJS.ProcessEnv, logFile: string): ChildProcess {
  const out = fs.openSync(logFile, 'a');
  const nodeArgs = entry === 'worker' ? WORKER_NODE_ARGS : [];
  const child = spawn(process.execPath, [...nodeArgs, '--import', 'tsx', ENTRY_FILES[entry]], {
    cwd: ROOT,
    env,
    stdio: ['ignore', out, out],
  });
  fs.closeSync(out);
  ownChild(child);
  return child;
}

/**
 * The migrations of a stack, as `db:migrate` runs them (decision 0086): as the schema's owner
 * (`migrationDatabaseUrl`, `npm run cluster`'s) when given, then DATABASE_URL's role granted rows
 * (src/db/roles.ts) when it is another role; else as `databaseUrl`'s role (`npm start`: one role).
 * Returns the migrations applied.
 */
export async function migrateStack(stack: Pick<StackFile, 'databaseUrl' | 'migrationDatabaseUrl'>): Promise<string[]> {
  const owner = stack.migrationDatabaseUrl ?? stack.databaseUrl;
  const orm = await openOrm({ databaseUrl: owner, poolMax: 2 });
  try {
    const applied = await migrate(orm);
    if (roleOfUrl(owner) !== roleOfUrl(stack.databaseUrl)) {
      await grantApplicationRole(orm.em.fork(), roleOfUrl(stack.databaseUrl));
    }
    return applied;
  } finally {
    await orm.close();
  }
}

/**
 * What both stacks do once PostgreSQL and Temporal are up: the SMTP catcher (unless SMTP_URL),
 * the migrations (migrateStack), the demo merchant on first start, and the stack file the CLI and
 * lone processes read. Everything after the migrations runs as `stack.databaseUrl`'s role.
 * Returns the demo credentials and what to close at shutdown.
 */
export async function prepareStack(
  config: Config,
  stack: StackFile,
  say: (line: string) => void,
): Promise<{ demo: DemoCredentials; cleanups: Array<() => Promise<void>> }> {
  const cleanups: Array<() => Promise<void>> = [];
  if (!config.SMTP_URL) {
    // Customer emails land as .eml files in $DATA_DIR/mail (production: SMTP_URL).
    const mail = await startMailCatcher({ port: config.SMTP_PORT, dir: path.join(config.dataDir, 'mail') });
    cleanups.push(mail.close);
  }
  const applied = await migrateStack(stack);
  if (applied.length) say(`Applied migrations: ${applied.join(', ')}`);
  const orm = await openOrm({ databaseUrl: stack.databaseUrl, poolMax: 2 });
  try {
    const demo = await ensureDemoMerchant(orm.em.fork(), config.dataDir);
    let secretsKey = config.PROVIDER_SECRETS_KEY;
    if (!secretsKey && config.NODE_ENV !== 'production') {
      // Read by the API, workers and CLI of this DATA_DIR (see devSecretsKeyPath).
      secretsKey = randomBytes(32).toString('base64');
      fs.writeFileSync(devSecretsKeyPath(config.dataDir), secretsKey, { mode: 0o600 });
    }
    if (!config.TEMPORAL_PAYLOAD_KEYS && config.NODE_ENV !== 'production') {
      // Temporal payloads are encrypted in development too (decision 0078); kept across restarts,
      // since histories encrypted under it outlive the processes.
      fs.writeFileSync(devPayloadKeysPath(config.dataDir), newPayloadKeys('dev'), { mode: 0o600 });
    }
    // Signing secrets a migration left in plain text are encrypted now (decision 0067).
    if (secretsKey) await sealSigningSecrets(orm.em.fork(), ProviderSecrets.fromBase64(secretsKey));
    fs.writeFileSync(stackFilePath(config.dataDir), JSON.stringify(stack, null, 2), { mode: 0o600 });
    return { demo, cleanups };
  } finally {
    await orm.close();
  }
}

export async function waitUntilReady(url: string, timeoutMs = 120_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last = '';
  while (Date.now() < deadline) {
    try {
      const res = await fetch(url);
      if (res.ok) return;
      last = `${res.status} ${await res.text()}`;
    } catch (err) {
      last = (err as Error).message;
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`API not ready at ${url}: ${last}`);
}

/** A versioned worker gets tasks once its version is current (it promotes itself at start). */
async function hasCurrentVersion(connection: Connection, config: Config): Promise<boolean> {
  if (!config.WORKER_VERSIONING) return true;
  try {
    const { workerDeploymentInfo } = await connection.workflowService.describeWorkerDeployment({
      namespace: config.TEMPORAL_NAMESPACE,
      deploymentName: config.WORKER_DEPLOYMENT_NAME,
    });
    return Boolean(workerDeploymentInfo?.routingConfig?.currentDeploymentVersion?.buildId);
  } catch {
    return false; // not created until the worker's first poll
  }
}

/**
 * The kinds of worker process `npm run cluster` runs (decision 0071): WORKER_PROCESSES workers of
 * every queue but the delivery one, and DELIVERY_WORKER_PROCESSES delivery workers, so a merchant's
 * slow server holds a delivery worker's slots, never a payment's; without delivery workers (0),
 * the workers poll every queue.
 */
export interface ClusterWorkerKind {
  /** The supervisor's name of its processes (`worker#1`, `delivery-worker#1`) and its log file. */
  kind: 'worker' | 'delivery-worker';
  role: WorkerRole;
  count: number;
  /** Slot #i's metrics port is workerMetricsPort(config, firstSlot + i - 1). */
  firstSlot: number;
}

export function clusterWorkerKinds(
  config: Pick<Config, 'WORKER_PROCESSES' | 'DELIVERY_WORKER_PROCESSES'>,
): ClusterWorkerKind[] {
  if (config.DELIVERY_WORKER_PROCESSES === 0) {
    return [{ kind: 'worker', role: 'all', count: config.WORKER_PROCESSES, firstSlot: 1 }];
  }
  return [
    { kind: 'worker', role: 'payments-subscriptions', count: config.WORKER_PROCESSES, firstSlot: 1 },
    {
      kind: 'delivery-worker',
      role: 'deliveries',
      count: config.DELIVERY_WORKER_PROCESSES,
      firstSlot: config.WORKER_PROCESSES + 1,
    },
  ];
}

/**
 * Waits until `count` workers started after `since` poll each task queue of `role` (default: the
 * stack's WORKER_ROLE, which its workers share).
 */
export async function waitForWorkers(
  config: Config,
  opts: { since: number; count?: number; timeoutMs?: number; role?: WorkerRole },
): Promise<void> {
  const count = opts.count ?? 1;
  const timeoutMs = opts.timeoutMs ?? 180_000;
  const taskQueues = workerTaskQueues(opts.role ?? config.WORKER_ROLE, config.TEMPORAL_TASK_QUEUE);
  const connection = await Connection.connect(temporalClientOptions(config));
  /** Pollers of an earlier run linger in the list for minutes: only fresh ones count. */
  const freshPollers = async (taskQueue: string) => {
    const res = await connection.workflowService
      .describeTaskQueue({
        namespace: config.TEMPORAL_NAMESPACE,
        taskQueue: { name: taskQueue },
        taskQueueType: temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
      })
      .catch(() => ({ pollers: [] }));
    return new Set(
      (res.pollers ?? [])
        .filter((p) => Number(p.lastAccessTime?.seconds ?? 0) * 1000 >= opts.since - 1000)
        .map((p) => p.identity),
    ).size;
  };
  try {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      const polled = await Promise.all(taskQueues.map(freshPollers));
      // Without self-promotion the stack's own deploy step promotes once every kind polls (promoteStackBuild).
      const routed = !config.WORKER_SET_CURRENT_VERSION || (await hasCurrentVersion(connection, config));
      if (polled.every((n) => n >= count) && routed) return;
      await new Promise((r) => setTimeout(r, 250));
    }
    throw new Error(`Fewer than ${count} workers polled ${taskQueues.join(' and ')} within ${timeoutMs / 1000} s`);
  } finally {
    await connection.close();
  }
}

/**
 * The port of worker #`slot` (1-based) of a stack: WORKER_METRICS_PORT + slot - 1, so several
 * workers on one host each get their own; 0 (off) stays 0.
 */
export function workerMetricsPort(config: Pick<Config, 'WORKER_METRICS_PORT'>, slot: number): number {
  if (config.WORKER_METRICS_PORT === 0) return 0;
  const port = config.WORKER_METRICS_PORT + slot - 1;
  return port <= 65535 ? port : 0;
}

/** Where a stack's processes serve Prometheus metrics (null / absent: off). */
export function metricsEndpoints(
  config: Pick<Config, 'METRICS_PORT' | 'WORKER_METRICS_PORT' | 'metricsHost'>,
  workers: number,
): { api: string | null; workers: string[] } {
  const ports = Array.from({ length: workers }, (_, i) => workerMetricsPort(config, i + 1)).filter((p) => p > 0);
  return {
    api: config.METRICS_PORT > 0 ? metricsUrl(config.metricsHost, config.METRICS_PORT) : null,
    workers: ports.map((p) => metricsUrl(config.metricsHost, p)),
  };
}

export interface BannerFacts {
  startedAt: number;
  config: Config;
  demo: DemoCredentials;
  temporalUi: string;
  logsDir: string;
  /** Worker processes (for their metrics ports); default 1. */
  workers?: number;
  extraLines?: string[];
}

export function readyBanner(facts: BannerFacts): string {
  const { config, demo } = facts;
  const base = `http://localhost:${config.PORT}`;
  const basic = Buffer.from(`${demo.publicKey}:${demo.secretKey}`).toString('base64');
  const metrics = metricsEndpoints(config, facts.workers ?? 1);
  const mail = config.SMTP_URL
    ? config.SMTP_URL
    : `smtp://127.0.0.1:${config.SMTP_PORT} -> ${path.join(config.dataDir, 'mail')}/*.eml`;
  return `
Ready in ${((Date.now() - facts.startedAt) / 1000).toFixed(1)} s.

  API          ${base}
  Docs         ${base}/docs   (OpenAPI: ${base}/openapi.json)
  Sandbox      ${config.sandboxUrl}   (provider test surface: /_admin/ledger, /_admin/faults)
  Temporal UI  ${facts.temporalUi}
  Metrics      API ${metrics.api ?? 'off (METRICS_PORT=0)'}; worker ${metrics.workers.join(', ') || 'off (WORKER_METRICS_PORT=0)'}
  Logs         ${facts.logsDir}
  Mail         ${mail}
${(facts.extraLines ?? []).map((l) => `  ${l}\n`).join('')}
  Demo merchant ${demo.merchantId} (test key; kept in ${path.join(config.dataDir, 'demo-merchant.json')})
    public key  ${demo.publicKey}
    secret key  ${demo.secretKey}

  Try it:
    curl -s -H 'Authorization: Basic ${basic}' ${base}/merchant/api-keys
    curl -s -H 'Authorization: Basic ${basic}' -H 'content-type: application/json' ${base}/subscriptions \\
      -d '{"amount":9.99,"currency":"USD","billingIntervalDays":1,"externalId":"demo-'$RANDOM'","cardToken":"tok_success","customer":{"email":"you@example.com"}}'
    (a billing day is ${config.BILLING_DAY_SECONDS} s: BILLING_DAY_SECONDS=60 renews every minute)

  Operator CLI: npm run cli -- help
Press Ctrl-C to stop.`;
}

/**
 * The deploy step of a stack whose workers do not promote themselves (WORKER_SET_CURRENT_VERSION
 * off, as in production; decision 0083): once every kind polls, the build its workers run becomes
 * current and the schedules are applied, as `workers:promote` does.
 */
export async function promoteStackBuild(config: Config): Promise<void> {
  if (!config.WORKER_VERSIONING || config.WORKER_SET_CURRENT_VERSION) return;
  const bundlePath = config.WORKFLOW_BUNDLE_PATH ?? path.join(config.dataDir, 'workflow-bundle.js');
  const buildId = config.WORKER_BUILD_ID ?? loadWorkflowBundle(bundlePath).manifest.buildId;
  const connection = await Connection.connect(temporalClientOptions(config));
  try {
    // The server lists a version's queues a moment after its workers' first polls.
    const deadline = Date.now() + 60_000;
    for (;;) {
      try {
        await promoteBuild({
          connection,
          namespace: config.TEMPORAL_NAMESPACE,
          deploymentName: config.WORKER_DEPLOYMENT_NAME,
          buildId,
          taskQueues: workerTaskQueues('all', config.TEMPORAL_TASK_QUEUE),
          identity: 'npm-run-cluster',
        });
        break;
      } catch (err) {
        if (!(err instanceof VersionNotPolled) || Date.now() > deadline) throw err;
        await new Promise((r) => setTimeout(r, 500));
      }
    }
    await ensureSchedules(
      new Client({
        connection,
        namespace: config.TEMPORAL_NAMESPACE,
        ...payloadDataConverter(config.TEMPORAL_PAYLOAD_KEYS),
      }),
      config.TEMPORAL_TASK_QUEUE,
    );
  } finally {
    await connection.close();
  }
}
