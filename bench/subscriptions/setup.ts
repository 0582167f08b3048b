import path from 'node:path';
import pg from 'pg';
import { Client, Connection } from '@temporalio/client';
import { startMailCatcher } from '../../dev/mail/catcher';
import { loadConfig } from '../../src/config';
import { workflowCacheSettings } from '../../src/temporal/workflowCache';
import { startFloor, type Floor } from '../floor/scenarios';
import {
  OUT_DIR,
  buildForBench,
  freePorts,
  getOk,
  onTeardown,
  spawnChild,
  startServices,
  waitFor,
  workerEnv,
} from '../stack';
import { BILLING_DAY_S, CPU_PROF, FLOOR, workerNodeOptions } from './knobs';
import { Sampler, workerHeapAndDefaultCache, type RssPoint } from './measure';

/** What every phase of the subscription bench needs of the stack it runs on. */
export interface SubsStack {
  apiUrl: string;
  sandboxUrl: string;
  /** Basic auth and JSON content type; `basic` alone for a DELETE. */
  headers: Record<string, string>;
  basic: string;
  merchantId: string;
  /** Names this run's records apart (the externalIds' prefixes). */
  runTag: string;
  /** The bench's own pool on the product's database (its checks), and a Temporal client. */
  db: pg.Pool;
  client: Client;
  /** Samples the worker's RSS (and every process's CPU) once a second; its `phase` names the moment. */
  sampler: Sampler;
  /** The floor worker and its client (unless BENCH_FLOOR=0). */
  floor?: Floor;
  temporalAddress: string;
  temporalServer: string;
  postgresVersion: string;
  /** The worker's NODE_OPTIONS, its V8 heap limit and the SDK's default cache for it, and the cache it runs with. */
  workerNodeOptions: string;
  heap: ReturnType<typeof workerHeapAndDefaultCache>;
  workerCache: ReturnType<typeof workflowCacheSettings>;
  readyS: number;
  atReady: RssPoint;
}

/**
 * The throw-away stack of the subscription bench: the production build, embedded PostgreSQL,
 * Temporal (BENCH_TEMPORAL), an SMTP catcher in this process (every paid invoice sends a receipt),
 * the sandbox, the API, ONE worker (sampled from the start) and the floor worker.
 */
export async function startSubsStack(
  onBuilt: (s: Pick<SubsStack, 'workerNodeOptions' | 'heap' | 'workerCache'>) => void,
) {
  // The production build (unless BENCH_SOURCES=1): the worker's flags name its compiled preload.
  await buildForBench();
  const nodeOptions = workerNodeOptions();
  const heap = workerHeapAndDefaultCache(nodeOptions);
  // The worker reads the same environment (childEnv below spreads process.env).
  const workerCache = workflowCacheSettings(loadConfig(process.env));
  onBuilt({ workerNodeOptions: nodeOptions, heap, workerCache });

  const [pgPort, temporalPort, apiPort, sandboxPort, smtpPort] = (await freePorts(5)) as [
    number,
    number,
    number,
    number,
    number,
  ];
  const t0 = Date.now();
  const {
    dir,
    logDir,
    pg: pgServer,
    temporal,
    temporalServer,
    merchantId,
    basic,
    postgresVersion,
  } = await startServices({ pgPort, temporalPort });
  // The customer emails (activation, one receipt per paid invoice) go to a catcher in this process.
  const mail = await startMailCatcher({ port: smtpPort, dir: path.join(dir, 'mail') });
  onTeardown('stopping the SMTP catcher', mail.close);

  const apiUrl = `http://127.0.0.1:${apiPort}`;
  const sandboxUrl = `http://127.0.0.1:${sandboxPort}`;
  const childEnv: NodeJS.ProcessEnv = {
    ...process.env,
    DATABASE_URL: pgServer.databaseUrl,
    DATABASE_POOL_MAX: '10',
    TEMPORAL_ADDRESS: temporal.address,
    PORT: String(apiPort),
    SANDBOX_PORT: String(sandboxPort),
    SANDBOX_URL: sandboxUrl,
    SMTP_URL: `smtp://127.0.0.1:${smtpPort}`,
    TEMPORAL_TASK_QUEUE: `bench-subs-${process.pid}`,
    BILLING_DAY_SECONDS: String(BILLING_DAY_S),
    LOG_LEVEL: 'warn',
    DATA_DIR: dir,
  };
  spawnChild('sandbox', 'dev/sandbox/main.ts', childEnv, logDir);
  spawnChild('api', 'src/main/api.ts', childEnv, logDir);
  const worker = spawnChild(
    'worker',
    'src/main/worker.ts',
    { ...childEnv, ...workerEnv(), NODE_OPTIONS: nodeOptions },
    logDir,
    CPU_PROF ? ['--cpu-prof', '--cpu-prof-dir', path.join(OUT_DIR, 'profiles', 'subscriptions-worker')] : [],
  );
  const sampler = new Sampler(worker.process.pid!);
  sampler.start();
  // The floor's bundle is built here, once, while the product processes start.
  const floor = FLOOR ? await startFloor({ temporalAddress: temporal.address, dir, logDir, nodeOptions }) : undefined;

  const db = new pg.Pool({ connectionString: pgServer.databaseUrl, max: 2 });
  db.on('error', () => undefined); // an idle connection PostgreSQL closes at teardown
  onTeardown('closing the bench pool', () => db.end());
  const connection = await Connection.connect({ address: temporal.address });
  onTeardown('closing the Temporal client', () => connection.close());
  const client = new Client({ connection });

  await waitFor('the API (/readyz)', 60_000, () => getOk(`${apiUrl}/readyz`));
  await waitFor('the sandbox', 30_000, () => getOk(`${sandboxUrl}/_admin/faults`));
  await fetch(`${sandboxUrl}/_admin/faults`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: '{}',
  });
  const stack: SubsStack = {
    apiUrl,
    sandboxUrl,
    headers: { authorization: basic, 'content-type': 'application/json' },
    basic,
    merchantId,
    runTag: `${Date.now().toString(36)}-${process.pid}`,
    db,
    client,
    sampler,
    ...(floor ? { floor } : {}),
    temporalAddress: temporal.address,
    temporalServer,
    postgresVersion,
    workerNodeOptions: nodeOptions,
    heap,
    workerCache,
    readyS: (Date.now() - t0) / 1000,
    atReady: sampler.tick(),
  };
  return stack;
}
