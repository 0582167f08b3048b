import { Client, Connection } from '@temporalio/client';
import { loadConfigOrExit } from '../config';
import { createLogger } from '../logger';
import { openOrm } from '../db/orm';
import { errorText } from '../db/dbErrors';
import { createApp } from '../api/app';
import { temporalConnectionOptions } from '../temporal/connection';
import { requestIdClientOptions } from '../temporal/requestId';
import { providerRegistryFromConfig } from '../providers/registry';

/** The API process: stateless, run as many copies as needed behind a load balancer. */
async function main(): Promise<void> {
  const config = loadConfigOrExit();
  const logger = createLogger(config.LOG_LEVEL, 'api');
  const orm = await openOrm({ databaseUrl: config.databaseUrl, poolMax: config.DATABASE_POOL_MAX });
  // Lazy: the API starts (and /readyz reports) even while Temporal is still coming up.
  const temporal = Connection.lazy(temporalConnectionOptions(config));
  const client = new Client({ connection: temporal, namespace: config.TEMPORAL_NAMESPACE, ...requestIdClientOptions });
  const app = createApp({
    orm,
    client,
    temporal,
    providers: providerRegistryFromConfig(config, orm, { logger }),
    logger,
    settings: {
      authCacheTtlMs: config.AUTH_CACHE_TTL_MS,
      publicBaseUrl: config.PUBLIC_BASE_URL,
      taskQueue: config.TEMPORAL_TASK_QUEUE,
      paymentWaitMs: config.PAYMENT_WAIT_MS,
      paymentExpirySeconds: config.PAYMENT_EXPIRY_SECONDS,
      callbackRetryInitialSeconds: config.CALLBACK_RETRY_INITIAL_SECONDS,
      refundWaitMs: config.REFUND_WAIT_MS,
      refundPollInitialSeconds: config.REFUND_POLL_INITIAL_SECONDS,
      billingDaySeconds: config.BILLING_DAY_SECONDS,
      subscriptionAuthorizationExpirySeconds: config.SUBSCRIPTION_AUTHORIZATION_EXPIRY_SECONDS,
    },
  });
  const server = app.listen(config.PORT, config.HOST, () => {
    logger.info({ port: config.PORT }, 'api listening');
  });
  server.keepAliveTimeout = 65_000;

  let stopping = false;
  const shutdown = (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'api shutting down');
    server.close(() => {
      void Promise.allSettled([orm.close(), temporal.close()]).then(() => process.exit(0));
    });
    server.closeIdleConnections();
    setTimeout(() => process.exit(0), 10_000).unref();
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
}

main().catch((err: unknown) => {
  process.stderr.write(`api failed to start: ${errorText(err, (e) => e.stack ?? e.message)}\n`);
  process.exit(1);
});
