import os from 'node:os';
import { DefaultLogger, NativeConnection, Runtime, type LogLevel } from '@temporalio/worker';
import { loadConfigOrExit } from '../config';
import { createLogger } from '../logger';
import { openOrm } from '../db/orm';
import { temporalConnectionOptions } from '../temporal/connection';
import { createWorker } from '../worker';
import { providerRegistryFromConfig } from '../providers/registry';
import { ensureSchedules } from '../temporal/schedules';
import { Client, Connection } from '@temporalio/client';

const PINO_LEVEL: Record<LogLevel, 'trace' | 'debug' | 'info' | 'warn' | 'error'> = {
  TRACE: 'trace',
  DEBUG: 'debug',
  INFO: 'info',
  WARN: 'warn',
  ERROR: 'error',
};

async function connectWithRetry(
  options: Parameters<typeof NativeConnection.connect>[0],
  log: (msg: string) => void,
): Promise<NativeConnection> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await NativeConnection.connect(options);
    } catch (err) {
      if (attempt >= 60) throw err;
      log(`Temporal not reachable yet (${(err as Error).message}); retrying`);
      await new Promise((r) => setTimeout(r, 1000));
    }
  }
}

/** The worker process: polls the task queue; scale by running more copies. */
async function main(): Promise<void> {
  const config = loadConfigOrExit();
  const logger = createLogger(config.LOG_LEVEL, 'worker');
  const sdkLogger = logger.child({ component: 'temporal-sdk' });
  Runtime.install({
    logger: new DefaultLogger('INFO', (entry) => sdkLogger[PINO_LEVEL[entry.level]](entry.meta ?? {}, entry.message)),
    // Graceful: on a signal the worker stops polling, lets running tasks finish, then run() resolves.
    shutdownSignals: ['SIGINT', 'SIGTERM'],
  });
  const orm = await openOrm({ databaseUrl: config.databaseUrl, poolMax: config.DATABASE_POOL_MAX });
  const connection = await connectWithRetry(temporalConnectionOptions(config), (msg) => logger.warn(msg));
  const clientConnection = await Connection.connect(temporalConnectionOptions(config));
  const client = new Client({ connection: clientConnection, namespace: config.TEMPORAL_NAMESPACE });
  await ensureSchedules(client, config.TEMPORAL_TASK_QUEUE);
  const worker = await createWorker({
    connection,
    namespace: config.TEMPORAL_NAMESPACE,
    taskQueue: config.TEMPORAL_TASK_QUEUE,
    orm,
    logger,
    providers: providerRegistryFromConfig(config),
    publicBaseUrl: config.publicBaseUrl,
    client,
    callbackRetryInitialSeconds: config.CALLBACK_RETRY_INITIAL_SECONDS,
    refundPollInitialSeconds: config.REFUND_POLL_INITIAL_SECONDS,
    smtpUrl: config.smtpUrl,
    identity: `worker-${process.pid}@${os.hostname()}`,
    ...(config.WORKER_MAX_CACHED_WORKFLOWS !== undefined
      ? { maxCachedWorkflows: config.WORKER_MAX_CACHED_WORKFLOWS }
      : {}),
  });
  logger.info({ taskQueue: config.TEMPORAL_TASK_QUEUE, namespace: config.TEMPORAL_NAMESPACE }, 'worker running');
  await worker.run();
  logger.info('worker stopped');
  await orm.close();
  await connection.close();
  await clientConnection.close();
}

main().catch((err: unknown) => {
  process.stderr.write(`worker failed: ${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
