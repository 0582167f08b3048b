import { type NativeConnection, Worker, type WorkerOptions } from '@temporalio/worker';
import type { VersioningBehavior } from '@temporalio/common';
import type { MikroORM } from '@mikro-orm/postgresql';
import type { Logger } from './logger';
import { createActivities } from '../activities';
import type { ProviderRegistry } from './providers/registry';
import type { Client } from '@temporalio/client';
import { WORKFLOW_INTERCEPTOR_MODULES, WORKFLOWS_PATH } from './workflowBundle';
import { requestIdActivityInterceptors } from './temporal/requestId';
import { activityBugInterceptors, databaseErrorScrubbingInterceptors } from './temporal/activityErrors';
import { inFlightActivityInterceptors, workerShutdownOptions } from './temporal/workerShutdown';
import { WORKFLOW_TASK_POLLING } from './temporal/workflowTaskPolling';
import { deliveryTaskQueue } from './temporal/taskQueues';
import { workflowCacheOptions, type WorkflowCacheSettings } from './temporal/workflowCache';
import { activitySlots } from './temporal/activitySlots';
import { providerCallLimitInterceptors } from './temporal/providerCallLimits';
import type { ResolveHost } from './net/pinnedPost';
import type { WorkflowStarters } from '../activities/deps';
import { createDisputeGateway } from './temporal/disputeGateway';
import { createPaymentGateway } from './temporal/paymentGateway';
import { createRefundGateway } from './temporal/refundGateway';
import { createSubscriptionGateway } from './temporal/subscriptionGateway';
import { createOutboxEmailGateway } from './temporal/outboxEmailGateway';
import { createEventDeliveriesGateway } from './temporal/eventDeliveriesGateway';

export { WORKFLOWS_PATH };

/** Worker Deployment Versioning: which version this worker's code is (docs/decisions.md, "Safe deploys"). */
export interface WorkerDeploymentVersioning {
  deploymentName: string;
  buildId: string;
  /** For workflow types that do not choose one themselves (`setWorkflowOptions`). */
  defaultVersioningBehavior: VersioningBehavior;
}

export interface WorkerDeps {
  connection: NativeConnection;
  namespace: string;
  /** The main task queue (TEMPORAL_TASK_QUEUE): where the sweeper starts payments and refunds. */
  taskQueue: string;
  /**
   * The queues to poll, one SDK worker each (src/temporal/taskQueues.ts, `workerTaskQueues`);
   * default: the main queue alone.
   */
  taskQueues?: string[];
  orm: MikroORM;
  logger: Logger;
  providers: ProviderRegistry;
  publicBaseUrl: string;
  /** Temporal client of the gateways activities start workflows through (createWorkflowStarters). */
  client: Client;
  callbackRetryInitialSeconds: number;
  /** EVENT_DELIVERY_CONCURRENCY_PER_MERCHANT (default 4). */
  deliveryConcurrencyPerMerchant?: number;
  /** See ActivityDeps.privateTestCallbacks. */
  privateTestCallbacks?: boolean;
  /** See ActivityDeps.productionProfile (NODE_ENV=production). */
  productionProfile?: boolean;
  /** See ActivityDeps.resolveHost. */
  resolveHost?: ResolveHost;
  refundPollInitialSeconds?: number;
  /** See PaymentGatewaySettings.stuckAfterSeconds (runs the sweeper starts). */
  stuckAfterSeconds?: number;
  billingDaySeconds?: number;
  subscriptionAuthorizationExpirySeconds?: number;
  smtpUrl?: string;
  /** The built bundle (src/workflowBundle.ts); otherwise the worker bundles WORKFLOWS_PATH at start. */
  workflowBundle?: WorkerOptions['workflowBundle'];
  /** Unset: an unversioned worker (tests, or a server without Worker Deployments). */
  versioning?: WorkerDeploymentVersioning;
  identity?: string;
  /**
   * Sticky cache sizes and the subscription queue's sticky timeout (src/temporal/workflowCache.ts);
   * unset: the SDK's defaults (a cache sized from the heap limit, 10 s).
   */
  workflowCache?: WorkflowCacheSettings;
  /** The encryption codec (src/temporal/payloadCodec.ts, decision 0078); unset: payloads in clear. */
  dataConverter?: WorkerOptions['dataConverter'];
  /**
   * WORKER_ACTIVITY_SLOTS_PER_CONNECTION: activity and local activity slots per connection of the
   * ORM's pool, shared by the process's money queues (src/temporal/activitySlots.ts, decision 0085).
   */
  activitySlotsPerConnection?: number;
}

/**
 * A process's workers: one per task queue it polls, sharing one set of activities (one SMTP pool,
 * one provider registry) and one connection.
 */
export async function createWorkers(deps: WorkerDeps): Promise<Worker[]> {
  const activities = createActivities({
    ...deps,
    starters: createWorkflowStarters(deps),
    deliveries: {
      retryInitialSeconds: deps.callbackRetryInitialSeconds,
      ...(deps.deliveryConcurrencyPerMerchant ? { concurrencyPerMerchant: deps.deliveryConcurrencyPerMerchant } : {}),
    },
  });
  const workers: Worker[] = [];
  for (const taskQueue of deps.taskQueues ?? [deps.taskQueue]) {
    workers.push(await Worker.create(workerOptions(deps, taskQueue, activities)));
  }
  return workers;
}

/**
 * Every activity's interceptors: its request id in its log lines; its database errors scrubbed
 * before they reach history (decision 0074); bugs failed non-retryably, for their run to park
 * (decision 0077); what a forced stop leaves behind (decision 0075); a provider call refused over
 * its merchant's limit retried later, out of its slot (decision 0085).
 */
export const ACTIVITY_INTERCEPTORS = [
  requestIdActivityInterceptors,
  databaseErrorScrubbingInterceptors,
  activityBugInterceptors,
  inFlightActivityInterceptors,
  providerCallLimitInterceptors,
];

/** The size of the ORM's pool (DATABASE_POOL_MAX as opened: src/db/orm.ts); 10, its default, if unread. */
export function ormPoolMax(orm: MikroORM): number {
  const max = (orm.config.get('pool') as { max?: unknown } | undefined)?.max;
  return typeof max === 'number' && max > 0 ? max : 10;
}

/** A day of 86,400 s and a day for the customer: PRODUCT.md's defaults. */
const DEFAULT_DAY_SECONDS = 86_400;

/** The default first poll of a pending refund (REFUND_POLL_INITIAL_SECONDS' default). */
const DEFAULT_REFUND_POLL_INITIAL_SECONDS = 30;

/**
 * The gateways activities start workflows through (the orphan sweeper), with the API's settings:
 * a workflow the sweeper starts is started as the API would have started it.
 */
export function createWorkflowStarters(
  deps: Pick<
    WorkerDeps,
    | 'client'
    | 'taskQueue'
    | 'callbackRetryInitialSeconds'
    | 'refundPollInitialSeconds'
    | 'stuckAfterSeconds'
    | 'billingDaySeconds'
    | 'subscriptionAuthorizationExpirySeconds'
  >,
): WorkflowStarters {
  const { client, taskQueue, callbackRetryInitialSeconds } = deps;
  const stuck = deps.stuckAfterSeconds ? { stuckAfterSeconds: deps.stuckAfterSeconds } : {};
  return {
    payment: createPaymentGateway({ client, settings: { taskQueue, callbackRetryInitialSeconds, ...stuck } }),
    dispute: createDisputeGateway({ client, settings: { taskQueue, callbackRetryInitialSeconds, ...stuck } }),
    refund: createRefundGateway({
      client,
      settings: {
        taskQueue,
        callbackRetryInitialSeconds,
        refundPollInitialSeconds: deps.refundPollInitialSeconds ?? DEFAULT_REFUND_POLL_INITIAL_SECONDS,
        ...stuck,
      },
    }),
    subscription: createSubscriptionGateway({
      client,
      settings: {
        taskQueue,
        callbackRetryInitialSeconds,
        billingDaySeconds: deps.billingDaySeconds ?? DEFAULT_DAY_SECONDS,
        subscriptionAuthorizationExpirySeconds: deps.subscriptionAuthorizationExpirySeconds ?? DEFAULT_DAY_SECONDS,
        ...stuck,
      },
    }),
    outboxEmail: createOutboxEmailGateway({ client, settings: { taskQueue } }),
    eventDeliveries: createEventDeliveriesGateway({ client, settings: { taskQueue: deliveryTaskQueue(taskQueue) } }),
  };
}

function workerOptions(
  deps: WorkerDeps,
  taskQueue: string,
  activities: ReturnType<typeof createActivities>,
): WorkerOptions {
  return {
    connection: deps.connection,
    namespace: deps.namespace,
    taskQueue,
    activities,
    // The request id of the API request that started a workflow, in its activities' log lines
    // (a bundle carries the workflow interceptors itself: src/workflowBundle.ts).
    interceptors: {
      activity: ACTIVITY_INTERCEPTORS,
      ...(deps.workflowBundle ? {} : { workflowModules: WORKFLOW_INTERCEPTOR_MODULES }),
    },
    ...(deps.workflowBundle ? { workflowBundle: deps.workflowBundle } : { workflowsPath: WORKFLOWS_PATH }),
    ...(deps.versioning
      ? {
          workerDeploymentOptions: {
            version: { deploymentName: deps.versioning.deploymentName, buildId: deps.versioning.buildId },
            useWorkerVersioning: true,
            defaultVersioningBehavior: deps.versioning.defaultVersioningBehavior,
          },
        }
      : {}),
    ...WORKFLOW_TASK_POLLING,
    ...workerShutdownOptions(),
    // Sized to the ORM's pool, shared by the process's money queues; a delivery step holds one
    // slot per merchant for up to 50 s, mostly waiting on sockets (src/temporal/activitySlots.ts).
    ...activitySlots(
      {
        poolMax: ormPoolMax(deps.orm),
        ...(deps.activitySlotsPerConnection ? { slotsPerConnection: deps.activitySlotsPerConnection } : {}),
      },
      taskQueue,
      deps.taskQueues ?? [deps.taskQueue],
      deliveryTaskQueue(deps.taskQueue),
    ),
    ...(deps.identity ? { identity: deps.identity } : {}),
    ...(deps.dataConverter ? { dataConverter: deps.dataConverter } : {}),
    ...(deps.workflowCache ? workflowCacheOptions(deps.workflowCache, taskQueue, deps.taskQueue) : {}),
  };
}
