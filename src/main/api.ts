import cluster from 'node:cluster';
import { Client, Connection } from '@temporalio/client';
import { AggregatorRegistry } from 'prom-client';
import { loadConfigOrExit } from '../config';
import { createLogger } from '../logger';
import { openOrm } from '../db/orm';
import { errorText } from '../db/dbErrors';
import { createApp } from '../api/app';
import { temporalClientOptions } from '../temporal/connection';
import { requestIdClientOptions } from '../temporal/requestId';
import { payloadDataConverter } from '../temporal/payloadCodec';
import { codecEndpoint } from '../api/routes/codec';
import { providerRegistryFromConfig } from '../providers/registry';
import { OutcomeHintListener } from '../db/outcomeHints';
import { collectProcessMetrics, renderApiMetrics } from '../metrics/api';
import { registerBacklogGauges } from '../metrics/backlog';
import { registerStuckWorkflowGauge } from '../metrics/stuckWorkflows';
import { registerDeliveryGauges } from '../metrics/deliveries';
import { startMetricsServer, type MetricsServer } from '../metrics/server';
import { metricsUrl } from '../metrics/address';

/** The API process: stateless, run as many copies as needed behind a load balancer. */
async function main(): Promise<void> {
  const config = loadConfigOrExit();
  const logger = createLogger(config.LOG_LEVEL, 'api');
  const orm = await openOrm({ databaseUrl: config.databaseUrl, poolMax: config.DATABASE_POOL_MAX });
  // Lazy: the API starts (and /readyz reports) even while Temporal is still coming up.
  const temporal = Connection.lazy(temporalClientOptions(config));
  const payloads = payloadDataConverter(config.TEMPORAL_PAYLOAD_KEYS);
  const client = new Client({
    connection: temporal,
    namespace: config.TEMPORAL_NAMESPACE,
    ...requestIdClientOptions,
    ...payloads,
  });
  const outcomes = OutcomeHintListener.start(config.databaseUrl, logger);
  const app = createApp({
    outcomes,
    orm,
    client,
    temporal,
    providers: providerRegistryFromConfig(config, orm, { logger }),
    logger,
    ...codecEndpoint(config, payloads.dataConverter),
    settings: {
      authCacheTtlMs: config.AUTH_CACHE_TTL_MS,
      publicBaseUrl: config.PUBLIC_BASE_URL,
      taskQueue: config.TEMPORAL_TASK_QUEUE,
      paymentWaitMs: config.PAYMENT_WAIT_MS,
      paymentExpirySeconds: config.PAYMENT_EXPIRY_SECONDS,
      callbackRetryInitialSeconds: config.CALLBACK_RETRY_INITIAL_SECONDS,
      processingPollSeconds: config.PAYMENT_PROCESSING_POLL_SECONDS,
      refundWaitMs: config.REFUND_WAIT_MS,
      refundPollInitialSeconds: config.REFUND_POLL_INITIAL_SECONDS,
      stuckAfterSeconds: config.WORKFLOW_STUCK_AFTER_SECONDS,
      billingDaySeconds: config.BILLING_DAY_SECONDS,
      subscriptionAuthorizationExpirySeconds: config.SUBSCRIPTION_AUTHORIZATION_EXPIRY_SECONDS,
      cursorSecret: config.CURSOR_SECRET,
      secretsKey: config.PROVIDER_SECRETS_KEY,
      secretsPreviousKeys: config.PROVIDER_SECRETS_PREVIOUS_KEYS,
      trustProxyHops: config.TRUST_PROXY_HOPS,
      quotas: {
        openHostedPayments: config.QUOTA_OPEN_HOSTED_PAYMENTS,
        liveTestSubscriptions: config.QUOTA_LIVE_TEST_SUBSCRIPTIONS,
        refundsPerPayment: config.QUOTA_REFUNDS_PER_PAYMENT,
      },
      rateLimit: {
        perSecond: config.RATE_LIMIT_PER_SECOND,
        burst: config.RATE_LIMIT_BURST,
        authFailuresPerMinute: config.RATE_LIMIT_AUTH_FAILURES_PER_MINUTE,
        authFailuresBurst: config.RATE_LIMIT_AUTH_FAILURES_BURST,
        unauthenticatedPerSecond: config.RATE_LIMIT_UNAUTHENTICATED_PER_SECOND,
        unauthenticatedBurst: config.RATE_LIMIT_UNAUTHENTICATED_BURST,
      },
    },
  });
  // Metrics: this process's own endpoint, unless it is one of `npm run cluster`'s API processes
  // sharing PORT: there the cluster primary serves them all, aggregated (dev/stack/cluster.ts).
  registerBacklogGauges(orm, logger);
  registerStuckWorkflowGauge(client, logger);
  registerDeliveryGauges(orm, logger);
  collectProcessMetrics();
  let metrics: MetricsServer | null = null;
  if (cluster.isWorker) {
    new AggregatorRegistry(); // answers the primary's requests for this process's metrics
  } else if (config.METRICS_PORT > 0) {
    metrics = await startMetricsServer({
      host: config.metricsHost,
      port: config.METRICS_PORT,
      report: (message) => logger.error(message),
      render: renderApiMetrics,
    });
  }
  const server = app.listen(config.PORT, config.HOST, () => {
    logger.info(
      { port: config.PORT, metrics: metrics ? metricsUrl(config.metricsHost, config.METRICS_PORT) : undefined },
      'api listening',
    );
  });
  server.keepAliveTimeout = 65_000;

  let stopping = false;
  const shutdown = (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'api shutting down');
    server.close(() => {
      void Promise.allSettled([orm.close(), temporal.close(), outcomes.close(), metrics?.close()]).then(() =>
        process.exit(0),
      );
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
