import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { Client, Connection } from '@temporalio/client';
import { DefaultLogger, NativeConnection, Runtime, type Worker } from '@temporalio/worker';
import type { MikroORM } from '@mikro-orm/postgresql';
import { openOrm } from '../../src/db/orm';
import { createApp, type AppDeps } from '../../src/api/app';
import { createLogger } from '../../src/logger';
import { createMerchant } from '../../src/domain/merchants';
import { createWorker } from '../../src/worker';
import { testStack } from '../setup/stackInfo';

export const testLogger = createLogger(process.env.TEST_LOG_LEVEL ?? 'silent', 'test');

// Keep the SDK's worker state chatter out of test output; warnings still show.
Runtime.install({ logger: new DefaultLogger('WARN') });

export async function openTestOrm(databaseUrl = testStack().databaseUrl): Promise<MikroORM> {
  return openOrm({ databaseUrl, poolMax: 5 });
}

export interface TestApi {
  baseUrl: string;
  orm: MikroORM;
  temporal: Connection;
  close(): Promise<void>;
}

/** The real Koa app on an ephemeral port, against the run's PostgreSQL and Temporal. */
export async function startTestApi(
  opts: { authCacheTtlMs?: number; databaseUrl?: string; orm?: MikroORM; extraRoutes?: AppDeps['extraRoutes'] } = {},
): Promise<TestApi> {
  const orm = opts.orm ?? (await openTestOrm(opts.databaseUrl));
  const temporal = await Connection.connect({ address: testStack().temporalAddress });
  const app = createApp({
    orm,
    temporal,
    logger: testLogger,
    authCacheTtlMs: opts.authCacheTtlMs ?? 5000,
    extraRoutes: opts.extraRoutes,
  });
  const server: Server = await new Promise((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s));
  });
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}`,
    orm,
    temporal,
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      await temporal.close();
      if (!opts.orm) await orm.close();
    },
  };
}

export interface TestMerchant {
  merchantId: string;
  apiKeyId: string;
  publicKey: string;
  secretKey: string;
  /** `Authorization` header value. */
  auth: string;
}

export function basicAuth(publicKey: string, secretKey: string): string {
  return `Basic ${Buffer.from(`${publicKey}:${secretKey}`).toString('base64')}`;
}

export async function createTestMerchant(orm: MikroORM, name = 'Test Merchant'): Promise<TestMerchant> {
  const { merchant, apiKey, secretKey } = await createMerchant(orm.em.fork(), { name, email: 'merchant@example.com' });
  return {
    merchantId: merchant.id,
    apiKeyId: apiKey.id,
    publicKey: apiKey.publicKey,
    secretKey,
    auth: basicAuth(apiKey.publicKey, secretKey),
  };
}

export interface TestWorker {
  worker: Worker;
  client: Client;
  taskQueue: string;
  stop(): Promise<void>;
}

let queueCounter = 0;

/** A real worker on its own task queue (one per test file), using the run's workflow bundle. */
export async function startTestWorker(orm: MikroORM, name: string): Promise<TestWorker> {
  const stack = testStack();
  const taskQueue = `test-${name}-${process.pid}-${++queueCounter}`;
  const connection = await NativeConnection.connect({ address: stack.temporalAddress });
  const worker = await createWorker({
    connection,
    namespace: 'default',
    taskQueue,
    orm,
    logger: testLogger,
    workflowBundle: { codePath: stack.workflowBundlePath },
  });
  const running = worker.run();
  const clientConnection = await Connection.connect({ address: stack.temporalAddress });
  const client = new Client({ connection: clientConnection, namespace: 'default' });
  return {
    worker,
    client,
    taskQueue,
    stop: async () => {
      worker.shutdown();
      await running;
      await clientConnection.close();
      await connection.close();
    },
  };
}
