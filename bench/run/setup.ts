import path from 'node:path';
import { envSchema } from '../../src/config';
import { startFloor, type Floor } from '../floor/scenarios';
import {
  OUT_DIR,
  buildForBench,
  freePorts,
  getOk,
  spawnChild,
  startServices,
  waitFor,
  workerEnv,
  workerNodeArgs,
} from '../stack';
import { CPU_PROF, FLOOR, GET_UNLIMITED, RATE_LIMIT, WORK_FLOOR } from './knobs';

/** What every scenario of `npm run bench` needs of the stack it runs on. */
export interface RunStack {
  apiUrl: string;
  /** The second API process, without rate limits (when BENCH_GET_UNLIMITED). */
  unlimitedUrl: string;
  sandboxUrl: string;
  baselineUrl: string;
  temporalAddress: string;
  temporalServer: string;
  postgresVersion: string;
  /** `Basic ...` of the merchant's test key; `postHeaders` adds the JSON content type. */
  basic: string;
  postHeaders: Record<string, string>;
  /** A token payment's body, a fresh externalId each. */
  paymentBody: (amount?: number) => string;
  /** Names this run's records apart from any other's. */
  runTag: string;
  /** The floor worker and its client (unless BENCH_FLOOR=0), with the work floors' pool (unless BENCH_WORK_FLOOR=0). */
  floor?: Floor;
  /** A first payment, captured: what the GETs read. */
  paymentId: string;
  /** The sandbox's fault settings (none: it answers at once). */
  faults: unknown;
  readyS: number;
}

/**
 * The API, worker, sandbox and floor worker, with --cpu-prof when BENCH_CPU_PROF=1 (never the
 * baseline); the worker with the product's Node flags (WORKER_NODE_ARGS, compiled with the build)
 * and bundle.
 */
function spawnProcess(name: string, script: string, env: NodeJS.ProcessEnv, logDir: string) {
  const profile =
    CPU_PROF && name !== 'baseline' ? ['--cpu-prof', '--cpu-prof-dir', path.join(OUT_DIR, 'profiles', name)] : [];
  if (name !== 'worker') return spawnChild(name, script, env, logDir, profile);
  return spawnChild(name, script, { ...env, ...workerEnv() }, logDir, [...workerNodeArgs(), ...profile]);
}

/**
 * The throw-away stack of `npm run bench`: embedded PostgreSQL, Temporal (BENCH_TEMPORAL), the
 * production build, then the sandbox, the API (and one without rate limits), the worker, the
 * baseline and the floor worker; ready once a first token payment is captured and both GETs read it.
 */
export async function startRunStack(): Promise<RunStack> {
  const [pgPort, temporalPort, apiPort, sandboxPort, baselinePort, unlimitedPort] = (await freePorts(6)) as [
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  const t0 = Date.now();
  // The production build (unless BENCH_SOURCES=1) is made while the services start.
  const [{ dir, logDir, pg, temporal, temporalServer, merchantId, basic, postgresVersion }] = await Promise.all([
    startServices({ pgPort, temporalPort }),
    buildForBench(),
  ]);

  const apiUrl = `http://127.0.0.1:${apiPort}`;
  const sandboxUrl = `http://127.0.0.1:${sandboxPort}`;
  const baselineUrl = `http://127.0.0.1:${baselinePort}`;
  const unlimitedUrl = `http://127.0.0.1:${unlimitedPort}`;
  const childEnv: NodeJS.ProcessEnv = {
    ...process.env,
    DATABASE_URL: pg.databaseUrl,
    DATABASE_POOL_MAX: '10', // the same pool size as the baseline's
    TEMPORAL_ADDRESS: temporal.address,
    PORT: String(apiPort),
    SANDBOX_PORT: String(sandboxPort),
    SANDBOX_URL: sandboxUrl,
    TEMPORAL_TASK_QUEUE: `bench-${process.pid}`,
    // Per-request info logs would be part of what is measured; warn keeps errors visible.
    LOG_LEVEL: 'warn',
    DATA_DIR: dir,
    RATE_LIMIT_PER_SECOND: String(RATE_LIMIT),
    RATE_LIMIT_BURST: String(RATE_LIMIT * 2),
    // Load, not quotas, is measured: the per-merchant quotas and the sandbox's ledger bound are off (decision 0079).
    QUOTA_OPEN_HOSTED_PAYMENTS: '0',
    QUOTA_LIVE_TEST_SUBSCRIPTIONS: '0',
    QUOTA_REFUNDS_PER_PAYMENT: '0',
    SANDBOX_MAX_LEDGER_ENTRIES: '0',
  };
  spawnProcess('sandbox', 'dev/sandbox/main.ts', childEnv, logDir);
  spawnProcess('api', 'src/main/api.ts', childEnv, logDir);
  spawnProcess('worker', 'src/main/worker.ts', childEnv, logDir);
  if (GET_UNLIMITED) {
    spawnProcess(
      'api-unlimited',
      'src/main/api.ts',
      { ...childEnv, PORT: String(unlimitedPort), RATE_LIMIT_PER_SECOND: '0', RATE_LIMIT_BURST: '0' },
      logDir,
    );
  }
  spawnProcess(
    'baseline',
    'bench/baseline.ts',
    { ...process.env, DATABASE_URL: pg.databaseUrl, PORT: String(baselinePort), BENCH_MERCHANT_ID: merchantId },
    logDir,
  );

  // The floor's bundle is built here, once, while the product processes start.
  const floor = FLOOR
    ? await startFloor({
        temporalAddress: temporal.address,
        dir,
        logDir,
        // The product worker's Node flags, and its profile with theirs.
        nodeArgs: [
          ...workerNodeArgs(),
          ...(CPU_PROF ? ['--cpu-prof', '--cpu-prof-dir', path.join(OUT_DIR, 'profiles', 'floor-worker')] : []),
        ],
        ...(WORK_FLOOR
          ? {
              work: {
                databaseUrl: pg.databaseUrl,
                sandboxUrl,
                sandboxApiKey: envSchema.shape.SANDBOX_API_KEY.parse(process.env.SANDBOX_API_KEY),
              },
            }
          : {}),
      })
    : undefined;

  await waitFor('the API (/readyz)', 60_000, () => getOk(`${apiUrl}/readyz`));
  if (GET_UNLIMITED) await waitFor('the API without limits', 60_000, () => getOk(`${unlimitedUrl}/readyz`));
  await waitFor('the sandbox', 30_000, () => getOk(`${sandboxUrl}/_admin/faults`));
  await waitFor('the baseline', 30_000, () => getOk(`${baselineUrl}/healthz`));
  // The sandbox answers instantly: no faults, no latency.
  const faults: unknown = await fetch(`${sandboxUrl}/_admin/faults`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: '{}',
  }).then((r) => r.json());

  const runTag = `${Date.now().toString(36)}-${process.pid}`;
  let seq = 0;
  const paymentBody = (amount = 12.34) =>
    JSON.stringify({
      amount,
      currency: 'USD',
      externalId: `bench-${runTag}-${++seq}`,
      customer: { email: 'bench@example.com' },
      cardToken: 'tok_success',
    });
  const postHeaders = { authorization: basic, 'content-type': 'application/json' };

  // A first token-flow payment proves the worker polls and the sandbox captures; GET reads it.
  let paymentId = '';
  await waitFor('a first token-flow POST /payments', 90_000, async () => {
    const res = await fetch(`${apiUrl}/payments`, {
      method: 'POST',
      headers: postHeaders,
      body: paymentBody(),
      signal: AbortSignal.timeout(10_000),
    });
    const body = (await res.json()) as { id?: string; status?: string };
    if (res.ok && body.status === 'succeeded' && body.id) {
      paymentId = body.id;
      return true;
    }
    return `${res.status} ${JSON.stringify(body).slice(0, 300)}`;
  });
  await waitFor('product GET', 10_000, () => getOk(`${apiUrl}/payments/${paymentId}`, { authorization: basic }));
  await waitFor('baseline GET', 10_000, () => getOk(`${baselineUrl}/payments/${paymentId}`));
  return {
    apiUrl,
    unlimitedUrl,
    sandboxUrl,
    baselineUrl,
    temporalAddress: temporal.address,
    temporalServer,
    postgresVersion,
    basic,
    postHeaders,
    paymentBody,
    runTag,
    ...(floor ? { floor } : {}),
    paymentId,
    faults,
    readyS: (Date.now() - t0) / 1000,
  };
}
