import fs from 'node:fs';
import os from 'node:os';
import { parseArgs } from 'node:util';
import { Client, Connection } from '@temporalio/client';
import { ensureSchedules } from '../temporal/schedules';
import type { Config } from '../config';
import { promoteBuild, type PromoteBuildResult } from '../temporal/deploymentVersion';
import { temporalClientOptions } from '../temporal/connection';
import { WORKER_ROLES, workerTaskQueues, type WorkerRole } from '../temporal/taskQueues';
import { loadWorkflowBundle } from '../workflowBundle';

export const PROMOTE_USAGE = `  workers:promote [--build-id B] [--roles R1,R2] [--ramp P]
                                             the deploy step (decision 0083): once a worker of
                                             build B (default: WORKFLOW_BUNDLE_PATH's manifest)
                                             polls every task queue of the roles (default all:
                                             payments, subscriptions, deliveries), make it the
                                             Current Version, or with --ramp send P% (1..99) of
                                             new workflows to it; once current, applies the
                                             Temporal Schedules. Refused while a queue is not
                                             polled (exit 4, the queues named)`;

export class PromoteUsageError extends Error {}

/** The arguments of `workers:promote`, checked before anything is asked of Temporal. */
export function promoteArguments(
  argv: string[],
  config: Pick<Config, 'TEMPORAL_TASK_QUEUE' | 'WORKFLOW_BUNDLE_PATH'>,
): { buildId: string; taskQueues: string[]; rampPercent?: number } {
  const { values } = parseArgs({
    args: argv,
    options: {
      'build-id': { type: 'string' },
      roles: { type: 'string' },
      ramp: { type: 'string' },
      json: { type: 'boolean' },
    },
  });
  const buildId = values['build-id'] ?? bundleBuildId(config.WORKFLOW_BUNDLE_PATH);
  if (!buildId) throw new PromoteUsageError('--build-id is required (no built bundle at WORKFLOW_BUNDLE_PATH)');
  const roles = (values.roles ?? 'payments,subscriptions,deliveries').split(',').map((r) => r.trim());
  const unknown = roles.filter((r) => !(WORKER_ROLES as readonly string[]).includes(r));
  if (unknown.length > 0 || roles.length === 0) {
    throw new PromoteUsageError(
      `--roles takes ${WORKER_ROLES.join(', ')} (comma-separated); unknown: ${unknown.join(', ')}`,
    );
  }
  const taskQueues = [
    ...new Set(roles.flatMap((role) => workerTaskQueues(role as WorkerRole, config.TEMPORAL_TASK_QUEUE))),
  ];
  let rampPercent: number | undefined;
  if (values.ramp !== undefined) {
    rampPercent = Number(values.ramp);
    if (!/^\d+$/.test(values.ramp) || rampPercent < 1 || rampPercent > 99) {
      throw new PromoteUsageError('--ramp must be a whole percentage from 1 to 99 (omit it to make the build current)');
    }
  }
  return { buildId, taskQueues, ...(rampPercent !== undefined ? { rampPercent } : {}) };
}

function bundleBuildId(bundlePath: string | undefined): string | undefined {
  const candidate = bundlePath ?? 'dist/workflow-bundle.js';
  if (!fs.existsSync(candidate)) return undefined;
  return loadWorkflowBundle(candidate).manifest.buildId;
}

/**
 * Promotes, then (once the build is current, never on a ramp) applies the Temporal Schedules as
 * this build defines them: the deploy step owns their definition (decision 0083).
 */
export async function runPromote(
  config: Config,
  argv: string[],
): Promise<PromoteBuildResult & { schedulesApplied: boolean }> {
  const args = promoteArguments(argv, config);
  const connection = await Connection.connect(temporalClientOptions(config));
  try {
    const promotion = await promoteBuild({
      connection,
      namespace: config.TEMPORAL_NAMESPACE,
      deploymentName: config.WORKER_DEPLOYMENT_NAME,
      identity: `workers:promote@${os.hostname()}`,
      ...args,
    });
    const current = promotion.action !== 'ramping';
    if (current) {
      await ensureSchedules(
        new Client({ connection, namespace: config.TEMPORAL_NAMESPACE }),
        config.TEMPORAL_TASK_QUEUE,
      );
    }
    return { ...promotion, schedulesApplied: current };
  } finally {
    await connection.close();
  }
}
