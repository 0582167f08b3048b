import path from 'node:path';
import { type NativeConnection, Worker, type WorkerOptions } from '@temporalio/worker';
import type { MikroORM } from '@mikro-orm/postgresql';
import type { Logger } from './logger';
import { createActivities } from '../activities';
import type { ProviderRegistry } from './providers/registry';
import type { Client } from '@temporalio/client';

export const WORKFLOWS_PATH = path.resolve(__dirname, '../workflows');

export interface WorkerDeps {
  connection: NativeConnection;
  namespace: string;
  taskQueue: string;
  orm: MikroORM;
  logger: Logger;
  providers: ProviderRegistry;
  publicBaseUrl: string;
  /** Temporal client for activities that start workflows. */
  client: Client;
  callbackRetryInitialSeconds: number;
  refundPollInitialSeconds?: number;
  smtpUrl?: string;
  /** A prebuilt bundle (tests bundle once per run); otherwise the worker bundles WORKFLOWS_PATH. */
  workflowBundle?: WorkerOptions['workflowBundle'];
  identity?: string;
  /** Sticky cache size (see README, Configuration); unset: the SDK's default from the heap limit. */
  maxCachedWorkflows?: number;
}

export async function createWorker(deps: WorkerDeps): Promise<Worker> {
  return Worker.create({
    connection: deps.connection,
    namespace: deps.namespace,
    taskQueue: deps.taskQueue,
    activities: createActivities(deps),
    ...(deps.workflowBundle ? { workflowBundle: deps.workflowBundle } : { workflowsPath: WORKFLOWS_PATH }),
    ...(deps.identity ? { identity: deps.identity } : {}),
    ...(deps.maxCachedWorkflows !== undefined ? { maxCachedWorkflows: deps.maxCachedWorkflows } : {}),
  });
}
