import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { NativeConnection, type Worker } from '@temporalio/worker';
import { loadConfigOrExit, type Config } from '../config';
import { createLogger } from '../logger';
import { openOrm } from '../db/orm';
import { errorText } from '../db/dbErrors';
import { temporalClientOptions, temporalConnectionOptions } from '../temporal/connection';
import { installWorkerRuntime } from '../metrics/workerRuntime';
import { requestIdClientOptions } from '../temporal/requestId';
import { payloadDataConverter } from '../temporal/payloadCodec';
import { createWorkers } from '../worker';
import { providerRegistryFromConfig } from '../providers/registry';
import { OutcomeHintListener } from '../db/outcomeHints';
import { ensureSchedules } from '../temporal/schedules';
import { deliveryTaskQueue, workerTaskQueues } from '../temporal/taskQueues';
import { activitiesInFlight, isForcedShutdown } from '../temporal/workerShutdown';
import { startDeliveryKicker } from '../temporal/deliveryKicker';
import { createDeadlineResolver } from '../net/deadlineResolver';
import { workflowCacheSettings } from '../temporal/workflowCache';
import { compiledSlots } from '../temporal/activitySlots';
import { providerCallLimiter, providerCallLimitsFromConfig } from '../temporal/providerCallLimits';
import { promoteWorkerVersion } from '../temporal/deploymentVersion';
import {
  buildWorkflowBundle,
  DEFAULT_WORKFLOW_BUNDLE_PATH,
  loadWorkflowBundle,
  WorkflowBundleError,
  type BuiltWorkflowBundle,
} from '../workflowBundle';
import { Client, Connection } from '@temporalio/client';

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

/**
 * Production runs the bundle `npm run build` made (the one the replay test vouches for);
 * development bundles the sources at start, so edited workflows never run from a stale
 * bundle. WORKFLOW_BUNDLE_PATH picks a built bundle in either.
 */
async function workflowBundle(config: Config, log: (msg: string) => void): Promise<BuiltWorkflowBundle> {
  if (config.WORKFLOW_BUNDLE_PATH || config.NODE_ENV === 'production') {
    return loadWorkflowBundle(config.WORKFLOW_BUNDLE_PATH ?? DEFAULT_WORKFLOW_BUNDLE_PATH);
  }
  const outPath = path.join(config.dataDir, 'workflow-bundle.js');
  log(`bundling workflows into ${outPath}`);
  return buildWorkflowBundle({ outPath, buildId: config.WORKER_BUILD_ID, onError: log });
}

/**
 * Liveness for a container healthcheck without a port: the file's mtime is renewed every 10 s
 * while every one of the process's workers runs. A stopped, failed or stuck one (a blocked event
 * loop) lets it age.
 */
function touchWhileRunning(file: string, workers: Worker[]): NodeJS.Timeout {
  const touch = () => {
    if (workers.some((worker) => worker.getState() !== 'RUNNING')) return;
    const now = new Date();
    fs.promises.utimes(file, now, now).catch(() => fs.promises.writeFile(file, '').catch(() => undefined));
  };
  touch();
  return setInterval(touch, 10_000).unref();
}

/** Whether the process started with src/main/workflowThreads preloaded (it marks the global scope). */
function workflowThreadsPreloaded(): boolean {
  return (globalThis as Record<symbol, unknown>)[Symbol.for('payment-platform.workflowThreadsPreload')] === true;
}

/** The worker process: polls its role's task queues; scale by running more copies. */
async function main(): Promise<void> {
  const config = loadConfigOrExit();
  const logger = createLogger(config.LOG_LEVEL, 'worker');
  // The SDK's logger and signals, and the metrics endpoint (the SDK's metrics and ours).
  const metricsUrl = installWorkerRuntime({ logger, host: config.metricsHost, port: config.WORKER_METRICS_PORT });
  // First: a missing production bundle stops the worker before it connects anywhere.
  const bundle = await workflowBundle(config, (msg) => logger.info(msg));
  const buildId = config.WORKER_BUILD_ID ?? bundle.manifest.buildId;
  const orm = await openOrm({ databaseUrl: config.databaseUrl, poolMax: config.DATABASE_POOL_MAX });
  const connection = await connectWithRetry(temporalConnectionOptions(config), (msg) => logger.warn(msg));
  const clientConnection = await Connection.connect(temporalClientOptions(config));
  // Every payload this process writes is encrypted, its own starts (the sweeper) included (decision 0078).
  const payloads = payloadDataConverter(config.TEMPORAL_PAYLOAD_KEYS);
  const client = new Client({
    connection: clientConnection,
    namespace: config.TEMPORAL_NAMESPACE,
    ...requestIdClientOptions,
    ...payloads,
  });
  // The deploy step owns the schedules (workers:promote); a self-promoting worker applies them itself.
  if (config.WORKER_SET_CURRENT_VERSION || !config.WORKER_VERSIONING) {
    await ensureSchedules(client, config.TEMPORAL_TASK_QUEUE);
  }
  const identity = `worker-${process.pid}@${os.hostname()}`;
  // One SDK worker per task queue of its role (WORKER_ROLE), sharing the activities.
  const taskQueues = workerTaskQueues(config.WORKER_ROLE, config.TEMPORAL_TASK_QUEUE);
  const workflowCache = workflowCacheSettings(config);
  // Each provider call admitted for its merchant first (decision 0085).
  const providerCallLimits = providerCallLimitsFromConfig(config);
  const providers = providerRegistryFromConfig(config, orm, {
    logger,
    callLimiter: providerCallLimiter(providerCallLimits),
  });
  // providers:set / providers:remove reach this worker's registry at once too (decision 0081).
  const providerChanges = OutcomeHintListener.startProviderChanges(config.databaseUrl, logger, {
    changed: (merchantId, environment) => providers.forget(merchantId, environment),
    resync: () => providers.forgetAll(),
  });
  const workers = await createWorkers({
    connection,
    namespace: config.TEMPORAL_NAMESPACE,
    taskQueue: config.TEMPORAL_TASK_QUEUE,
    taskQueues,
    orm,
    logger,
    providers,
    publicBaseUrl: config.publicBaseUrl,
    client,
    callbackRetryInitialSeconds: config.CALLBACK_RETRY_INITIAL_SECONDS,
    deliveryConcurrencyPerMerchant: config.EVENT_DELIVERY_CONCURRENCY_PER_MERCHANT,
    // Within each attempt's 10 s, off libuv's thread pool (decision 0069).
    resolveHost: createDeadlineResolver(),
    privateTestCallbacks: config.NODE_ENV !== 'production' || config.ALLOW_PRIVATE_CALLBACKS,
    productionProfile: config.NODE_ENV === 'production',
    refundPollInitialSeconds: config.REFUND_POLL_INITIAL_SECONDS,
    stuckAfterSeconds: config.WORKFLOW_STUCK_AFTER_SECONDS,
    billingDaySeconds: config.BILLING_DAY_SECONDS,
    subscriptionAuthorizationExpirySeconds: config.SUBSCRIPTION_AUTHORIZATION_EXPIRY_SECONDS,
    smtpUrl: config.smtpUrl,
    identity,
    workflowBundle: { codePath: bundle.codePath },
    ...(config.WORKER_VERSIONING
      ? {
          versioning: {
            deploymentName: config.WORKER_DEPLOYMENT_NAME,
            buildId,
            // Every workflow type moves to the current version on its next task, so changes
            // go through patched() (the replay test); see docs/decisions.md, "Safe deploys".
            defaultVersioningBehavior: 'AUTO_UPGRADE' as const,
          },
        }
      : {}),
    workflowCache,
    ...payloads,
    activitySlotsPerConnection: config.WORKER_ACTIVITY_SLOTS_PER_CONNECTION,
  });
  // A process that delivers events wakes the delivery workflows of merchants with due deliveries.
  const deliveries = deliveryTaskQueue(config.TEMPORAL_TASK_QUEUE);
  const kicker = taskQueues.includes(deliveries)
    ? startDeliveryKicker({
        orm,
        client,
        taskQueue: deliveries,
        logger,
        intervalMs: config.EVENT_DELIVERY_POLL_MS,
        ...(config.EVENT_DELIVERY_MERCHANTS ? { merchantIds: () => config.EVENT_DELIVERY_MERCHANTS ?? [] } : {}),
      })
    : undefined;
  const preloaded = workflowThreadsPreloaded();
  logger.info(
    {
      role: config.WORKER_ROLE,
      taskQueues,
      workflowCache,
      activitySlots: workers.map((worker) => ({
        taskQueue: worker.options.taskQueue,
        ...compiledSlots(worker.options.tuner),
      })),
      providerCallLimits,
      namespace: config.TEMPORAL_NAMESPACE,
      deploymentName: config.WORKER_VERSIONING ? config.WORKER_DEPLOYMENT_NAME : undefined,
      buildId: config.WORKER_VERSIONING ? buildId : 'unversioned',
      metrics: metricsUrl ?? 'off',
      workflowStackTraces: config.WORKFLOW_STACK_TRACES || !preloaded ? 'on' : 'off',
    },
    'worker running',
  );
  if (!config.WORKFLOW_STACK_TRACES && !preloaded) {
    logger.warn(
      'started without src/main/workflowThreads preloaded (WORKER_NODE_ARGS): workflow stack traces stay on, at about a tenth of throughput',
    );
  }
  const liveness = config.WORKER_HEALTH_FILE ? touchWhileRunning(config.WORKER_HEALTH_FILE, workers) : undefined;
  const promotion = async () => {
    if (!config.WORKER_VERSIONING || !config.WORKER_SET_CURRENT_VERSION) return;
    // The version exists on the server once this worker polls, so this runs beside run().
    try {
      const decision = await promoteWorkerVersion({
        connection: clientConnection,
        namespace: config.TEMPORAL_NAMESPACE,
        deploymentName: config.WORKER_DEPLOYMENT_NAME,
        buildId,
        identity,
        log: (msg) => logger.debug(msg),
      });
      logger.info({ deploymentName: config.WORKER_DEPLOYMENT_NAME, buildId, decision }, 'worker deployment version');
    } catch (err) {
      // Never a crash loop: a version the server refuses to promote (e.g. roles deployed
      // separately under one deployment name) waits for the deploy step (decision 0083).
      logger.warn(
        { deploymentName: config.WORKER_DEPLOYMENT_NAME, buildId, err: errorText(err) },
        'worker version not promoted; promote it with `npm run cli -- workers:promote`',
      );
    }
  };
  let forced = false;
  await Promise.all([
    ...workers.map((worker) =>
      worker.run().catch((err: unknown) => {
        if (!isForcedShutdown(err)) throw err;
        forced = true;
        // Abandoned, not lost: each attempt times out on the server and is retried (decision 0075).
        logger.warn(
          { taskQueue: worker.options.taskQueue, activitiesInFlight: activitiesInFlight() },
          'worker stop forced: activities still running were abandoned',
        );
      }),
    ),
    promotion(),
  ]);
  if (liveness) clearInterval(liveness);
  await kicker?.stop();
  if (forced) {
    // Closing the pool would wait on the abandoned statements: the process ends here.
    logger.info('worker stopped by force');
    process.exit(1);
  }
  logger.info('worker stopped');
  await providerChanges.close();
  await orm.close();
  await connection.close();
  await clientConnection.close();
}

main().catch((err: unknown) => {
  if (err instanceof WorkflowBundleError) {
    process.stderr.write(`worker failed: ${err.message}\n`);
    process.exit(1);
  }
  process.stderr.write(`worker failed: ${errorText(err, (e) => e.stack ?? e.message)}\n`);
  process.exit(1);
});
