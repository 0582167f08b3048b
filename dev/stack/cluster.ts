import cluster from 'node:cluster';
import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { CODEC_PATH } from '../../src/api/routes/codec';
import { loadConfig, loadConfigOrExit, stackFilePath } from '../../src/config';
import { prepareRestartablePostgres } from '../infra/embeddedPostgres';
import { prepareTemporalServer, registerNamespace } from '../infra/temporalServer';
import { supervise, type Supervised } from '../infra/supervisor';
import { clusterFilePath, type ClusterFile } from './clusterFile';
import { clusterDatabase, clusterProductionEnv, clusterSandboxEnv } from './clusterEnv';
import { buildWorkflowBundle } from '../../src/workflowBundle';
import { AggregatorRegistry } from 'prom-client';
import { startMetricsServer } from '../../src/metrics/server';
import {
  clusterWorkerKinds,
  metricsEndpoints,
  prepareStack,
  ROOT,
  readyBanner,
  startEntry,
  promoteStackBuild,
  waitForWorkers,
  waitUntilReady,
  workerMetricsPort,
} from './stackParts';

/**
 * `npm run cluster`: the production shape on one machine. PostgreSQL, the real Temporal server
 * on it with frontend, history, matching and worker services as separate processes (plus its
 * UI), the provider sandbox, API_PROCESSES API processes sharing one port through Node's
 * cluster module, WORKER_PROCESSES workers and DELIVERY_WORKER_PROCESSES event delivery workers
 * (clusterWorkerKinds: each kind polls its own task queues). Every one of them is supervised: a
 * process that dies is restarted with backoff and a loud line. The pids are published in
 * $DATA_DIR/cluster.json (for `npm run chaos` and for operators).
 *
 * The API and worker processes run the production profile (NODE_ENV=production, decision 0081)
 * as the application database role, which cannot alter the schema; migrations run at start as
 * the database's owner (decision 0086, amended). The cluster hands them what production
 * requires (dev/stack/clusterEnv.ts) and the workflow bundle it builds once at start. It, PostgreSQL, Temporal and the sandbox (an outside
 * provider's stand-in) are the machine's infrastructure, not production processes.
 */
const startedAt = Date.now();
const say = (msg: string) => process.stdout.write(`${msg}\n`);

// The cluster keeps its own state apart from `npm start` (another Temporal server, other data).
process.env.DATA_DIR ??= path.join(ROOT, '.data', 'cluster');

async function main(): Promise<void> {
  const config = loadConfigOrExit();
  if (config.externalDatabase || config.externalTemporal) {
    say('npm run cluster runs its own PostgreSQL and Temporal server: unset DATABASE_URL and TEMPORAL_ADDRESS.');
    process.exit(78);
  }
  const logsDir = path.join(config.dataDir, 'logs');
  fs.mkdirSync(logsDir, { recursive: true });
  const logTo = (name: string) => path.join(logsDir, `${name}.log`);
  const appendLog = (name: string) => (chunk: string) => fs.appendFileSync(logTo(name), chunk);

  const supervised: Supervised[] = [];
  const cleanups: Array<() => Promise<void>> = [];
  const pids: ClusterFile['pids'] = { api: {}, worker: {}, deliveryWorker: {}, temporal: {} };
  const workerKinds = clusterWorkerKinds(config);
  const workerProcesses = workerKinds.reduce((n, k) => n + k.count, 0);
  const deliveryWorkers = config.DELIVERY_WORKER_PROCESSES;
  let stopping = false;
  let published: Omit<ClusterFile, 'pids'> | undefined;
  const publish = () => {
    if (!published) return;
    const file: ClusterFile = { ...published, pids };
    fs.writeFileSync(clusterFilePath(config.dataDir), JSON.stringify(file, null, 2), { mode: 0o600 });
  };

  const shutdown = async (code: number) => {
    if (stopping) return;
    stopping = true;
    say('\nStopping...');
    // Clients first (API, workers, sandbox), then Temporal, then the database they all use.
    const order = (s: Supervised) => (s.name === 'postgres' ? 2 : s.name.startsWith('temporal-') ? 1 : 0);
    for (const tier of [0, 1, 2]) await Promise.all(supervised.filter((s) => order(s) === tier).map((s) => s.stop()));
    for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
    fs.rmSync(stackFilePath(config.dataDir), { force: true });
    fs.rmSync(clusterFilePath(config.dataDir), { force: true });
    say('Stopped.');
    process.exit(code);
  };
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => void shutdown(0));

  const keep = (name: string, start: () => ChildProcess, onStart: (child: ChildProcess) => void) => {
    const s = supervise({
      name,
      start,
      onStart: (child) => {
        onStart(child);
        publish();
      },
      log: (line) => say(`${line} See ${logTo(name.replace(/#.*/, ''))}.`),
      giveUp: (reason) => {
        if (stopping) return;
        say(reason);
        void shutdown(1);
      },
    });
    supervised.push(s);
    return s;
  };

  try {
    say(`Starting PostgreSQL on 127.0.0.1:${config.PG_PORT} (data in ${path.join(config.dataDir, 'postgres')})...`);
    const pg = await prepareRestartablePostgres({ dir: path.join(config.dataDir, 'postgres'), port: config.PG_PORT });
    keep(
      'postgres',
      () => pg.start(appendLog('postgres')),
      (child) => (pids.postgres = child.pid),
    );
    await pg.waitUntilReady();
    await pg.ensureDatabase('payments');
    // Two roles (decision 0086, amended): the superuser that owns the database migrates; the API,
    // workers, sweeper and CLI connect as an application role that reads and writes rows only.
    const database = clusterDatabase(pg.databaseUrl('payments'), config.dataDir);
    await pg.ensureLoginRole(database.appRole, database.appPassword);
    const { databaseUrl, migrationDatabaseUrl } = database;

    say(`Preparing the Temporal server on PostgreSQL (schemas; the first start builds it with Go)...`);
    const temporalServer = await prepareTemporalServer({
      dir: path.join(config.dataDir, 'temporal'),
      logsDir,
      postgres: { host: pg.host, port: pg.port, user: pg.user, password: pg.password },
      frontendPort: config.TEMPORAL_PORT,
      uiPort: config.TEMPORAL_UI_PORT,
      uiCodecEndpoint: `http://localhost:${config.PORT}${CODEC_PATH}`,
      log: say,
    });
    for (const service of temporalServer.services) {
      keep(
        `temporal-${service.name}`,
        () => service.start(),
        (child) => (pids.temporal[service.name] = child.pid),
      );
    }
    const temporalAddress = temporalServer.address;
    await registerNamespace({ address: temporalAddress, namespace: config.TEMPORAL_NAMESPACE, log: say });

    const prepared = await prepareStack(config, { databaseUrl, temporalAddress, migrationDatabaseUrl }, say);
    cleanups.push(...prepared.cleanups);
    const demo = prepared.demo;
    published = {
      startedAt: new Date(startedAt).toISOString(),
      apiUrl: `http://127.0.0.1:${config.PORT}`,
      sandboxUrl: config.sandboxUrl,
      temporalAddress,
      temporalUiUrl: temporalServer.uiUrl ?? null,
      // The machine's tools (chaos's witnesses, the capacity bench, which also reads Temporal's
      // databases) connect as the owner; the product's processes never do (decision 0086).
      databaseUrl: migrationDatabaseUrl,
      applicationDatabaseUrl: databaseUrl,
      mailDir: config.SMTP_URL ? null : path.join(config.dataDir, 'mail'),
      demoMerchant: demo,
      metrics: (() => {
        // Worker #i's endpoint, then delivery worker #j's (slot WORKER_PROCESSES + j).
        const { api, workers } = metricsEndpoints(config, workerProcesses);
        return {
          api,
          workers: workers.slice(0, config.WORKER_PROCESSES),
          deliveryWorkers: workers.slice(config.WORKER_PROCESSES),
        };
      })(),
    };
    publish();

    // Production workers run a built bundle: built once here for all of them.
    let workflowBundlePath = process.env.WORKFLOW_BUNDLE_PATH;
    if (!workflowBundlePath) {
      say('Bundling the workflows...');
      workflowBundlePath = (
        await buildWorkflowBundle({
          outPath: path.join(config.dataDir, 'workflow-bundle.js'),
          buildId: config.WORKER_BUILD_ID,
          onError: say,
        })
      ).codePath;
    }
    const childEnv = clusterProductionEnv(config, { databaseUrl, temporalAddress, workflowBundlePath });
    if (!config.SANDBOX_URL) {
      const sandboxEnv = clusterSandboxEnv(childEnv);
      keep(
        'sandbox',
        () => startEntry('sandbox', sandboxEnv, logTo('sandbox')),
        (child) => (pids.sandbox = child.pid),
      );
    }

    // The API processes share PORT: the cluster primary (this process) accepts connections and
    // hands them round-robin to the API processes alive at that moment.
    const apiLog = fs.openSync(logTo('api'), 'a');
    cleanups.push(async () => fs.closeSync(apiLog));
    cluster.setupPrimary({
      exec: path.join(ROOT, 'src', 'main', 'api.ts'),
      execArgv: ['--import', 'tsx'],
      stdio: ['ignore', apiLog, apiLog, 'ipc'],
    });
    for (let i = 1; i <= config.API_PROCESSES; i++) {
      const slot = `api#${i}`;
      keep(
        slot,
        () => cluster.fork(childEnv).process,
        (child) => (pids.api[slot] = child.pid),
      );
    }
    // The API processes' metrics, aggregated here (prom-client's AggregatorRegistry asks each
    // over the cluster's IPC at every scrape): one endpoint for the API port, as one scrape target.
    if (config.METRICS_PORT > 0) {
      const aggregator = new AggregatorRegistry();
      const metrics = await startMetricsServer({
        host: config.metricsHost,
        port: config.METRICS_PORT,
        report: say,
        render: async () => ({ contentType: aggregator.contentType, body: await aggregator.clusterMetrics() }),
      });
      if (metrics) cleanups.push(metrics.close);
    }
    for (const { kind, role, count, firstSlot } of workerKinds) {
      for (let i = 1; i <= count; i++) {
        const slot = `${kind}#${i}`;
        // Each worker its own metrics port (WORKER_METRICS_PORT + its slot - 1), kept across its restarts.
        const workerEnv = {
          ...childEnv,
          WORKER_ROLE: role,
          WORKER_METRICS_PORT: String(workerMetricsPort(config, firstSlot + i - 1)),
        };
        const kindPids = kind === 'worker' ? pids.worker : pids.deliveryWorker;
        keep(
          slot,
          () => startEntry('worker', workerEnv, logTo(kind)),
          (child) => (kindPids[slot] = child.pid),
        );
      }
    }

    await waitUntilReady(`http://127.0.0.1:${config.PORT}/readyz`);
    // Every kind's queues polled by all of its processes: the delivery queue by the delivery workers.
    // As the workers see it (production: they leave promotion to this deploy step, decision 0083).
    const workerConfig = { ...loadConfig(childEnv), temporalAddress };
    await Promise.all(
      workerKinds.map(({ role, count }) => waitForWorkers(workerConfig, { since: startedAt, count, role })),
    );
    await promoteStackBuild(workerConfig);

    say(
      readyBanner({
        startedAt,
        config,
        demo,
        temporalUi: temporalServer.uiUrl ?? '(not available: the UI server could not be built; see the log above)',
        logsDir,
        workers: workerProcesses,
        extraLines: [
          `Processes    PostgreSQL, Temporal ${temporalServer.services.map((s) => s.name).join('/')}, ` +
            `API x${config.API_PROCESSES}, worker x${config.WORKER_PROCESSES}` +
            (deliveryWorkers > 0 ? `, delivery worker x${deliveryWorkers}` : '') +
            `, sandbox (pids: ${clusterFilePath(config.dataDir)})`,
          `Workers      ${workerKinds.map((k) => `${k.kind} x${k.count}: WORKER_ROLE=${k.role}`).join('; ')}`,
        ],
      }),
    );
  } catch (err) {
    say(`Cluster start failed: ${(err as Error).message}`);
    await shutdown(1);
  }
}

void main();
