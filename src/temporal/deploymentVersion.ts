import type { Connection } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { status } from '@grpc/grpc-js';

type DeploymentInfo = temporal.api.deployment.v1.IWorkerDeploymentInfo;

export type PromotionDecision = 'already-current' | 'promote' | 'superseded';

/**
 * Whether a starting worker may make its version the deployment's Current Version: only
 * when it is the newest version the server has seen. A worker of an older build restarting
 * during or after a deploy must not pull auto-upgrading workflows back onto old code;
 * a rollback is an operator's explicit `temporal worker deployment set-current-version`.
 */
export function promotionDecision(info: DeploymentInfo | null | undefined, buildId: string): PromotionDecision {
  if (info?.routingConfig?.currentDeploymentVersion?.buildId === buildId) return 'already-current';
  const created = (b: string | null | undefined) => {
    const summary = info?.versionSummaries?.find((s) => s.deploymentVersion?.buildId === b);
    const t = summary?.createTime;
    return t ? Number(t.seconds ?? 0) * 1000 + Math.floor((t.nanos ?? 0) / 1e6) : undefined;
  };
  const own = created(buildId);
  if (own === undefined) return 'promote';
  const newer = (info?.versionSummaries ?? []).some((s) => {
    const other = created(s.deploymentVersion?.buildId);
    return s.deploymentVersion?.buildId !== buildId && other !== undefined && other > own;
  });
  return newer ? 'superseded' : 'promote';
}

export interface PromoteOptions {
  connection: Connection;
  namespace: string;
  deploymentName: string;
  buildId: string;
  identity: string;
  log?: (msg: string) => void;
  /** The version exists on the server only once this worker polls: retry until then. */
  timeoutMs?: number;
}

/**
 * Makes this worker's version the Current Version of its deployment (dev stack, tests, and
 * deploys without a pipeline step; WORKER_SET_CURRENT_VERSION). Call after the worker polls.
 */
export async function promoteWorkerVersion(opts: PromoteOptions): Promise<PromotionDecision> {
  const service = opts.connection.workflowService;
  const deadline = Date.now() + (opts.timeoutMs ?? 60_000);
  for (;;) {
    try {
      const { workerDeploymentInfo, conflictToken } = await service.describeWorkerDeployment({
        namespace: opts.namespace,
        deploymentName: opts.deploymentName,
      });
      const decision = promotionDecision(workerDeploymentInfo, opts.buildId);
      if (decision !== 'promote') return decision;
      await service.setWorkerDeploymentCurrentVersion({
        namespace: opts.namespace,
        deploymentName: opts.deploymentName,
        buildId: opts.buildId,
        conflictToken,
        identity: opts.identity,
      });
      return 'promote';
    } catch (err) {
      // Until the first poll registers the version the server answers NotFound /
      // FailedPrecondition; a concurrent change answers with a stale conflict token.
      if (Date.now() > deadline) throw err;
      opts.log?.(`version ${opts.buildId} not promotable yet (${(err as Error).message}); retrying`);
      await new Promise((r) => setTimeout(r, 500));
    }
  }
}

/** A build that some task queue of its roles has not polled yet: promoting it would strand that queue's work. */
export class VersionNotPolled extends Error {
  constructor(
    readonly buildId: string,
    readonly missingTaskQueues: string[],
  ) {
    super(`build ${buildId} has no worker polling ${missingTaskQueues.join(', ')}: not promoted`);
    this.name = 'VersionNotPolled';
  }
}

export interface PromoteBuildOptions {
  connection: Connection;
  namespace: string;
  deploymentName: string;
  buildId: string;
  /** Every task queue of every role of the build (workerTaskQueues): each must have polled. */
  taskQueues: string[];
  /** 1..99: route that share of new workflows to the build (a ramp); unset: make it current. */
  rampPercent?: number;
  identity: string;
}

export interface PromoteBuildResult {
  deploymentName: string;
  buildId: string;
  action: 'current' | 'already-current' | 'ramping';
  rampPercent: number | null;
  taskQueues: string[];
}

/**
 * The deploy step's promotion (`npm run cli -- workers:promote`, decision 0083): a build becomes
 * current, or ramps, only once a worker of the build has polled every task queue of every role,
 * so no queue's work is routed to a version nobody runs. Roles deployed separately under one
 * deployment name are promoted once, by this step, never by whichever worker starts first.
 */
export async function promoteBuild(opts: PromoteBuildOptions): Promise<PromoteBuildResult> {
  const service = opts.connection.workflowService;
  const polled = await service
    .describeWorkerDeploymentVersion({
      namespace: opts.namespace,
      deploymentVersion: { deploymentName: opts.deploymentName, buildId: opts.buildId },
    })
    .then(
      (res) =>
        new Set(
          (res.workerDeploymentVersionInfo?.taskQueueInfos ?? [])
            .filter((q) => q.type === temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW)
            .map((q) => q.name),
        ),
      (err: unknown) => {
        // Unknown until a worker of the build polls.
        if ((err as { code?: number }).code === status.NOT_FOUND) return new Set<string>();
        throw err;
      },
    );
  const missing = opts.taskQueues.filter((q) => !polled.has(q));
  if (missing.length > 0) throw new VersionNotPolled(opts.buildId, missing);

  const { workerDeploymentInfo, conflictToken } = await service.describeWorkerDeployment({
    namespace: opts.namespace,
    deploymentName: opts.deploymentName,
  });
  const base = { deploymentName: opts.deploymentName, buildId: opts.buildId, taskQueues: opts.taskQueues };
  if (opts.rampPercent !== undefined) {
    await service.setWorkerDeploymentRampingVersion({
      namespace: opts.namespace,
      deploymentName: opts.deploymentName,
      buildId: opts.buildId,
      percentage: opts.rampPercent,
      conflictToken,
      identity: opts.identity,
    });
    return { ...base, action: 'ramping', rampPercent: opts.rampPercent };
  }
  if (workerDeploymentInfo?.routingConfig?.currentDeploymentVersion?.buildId === opts.buildId) {
    return { ...base, action: 'already-current', rampPercent: null };
  }
  await service.setWorkerDeploymentCurrentVersion({
    namespace: opts.namespace,
    deploymentName: opts.deploymentName,
    buildId: opts.buildId,
    conflictToken,
    identity: opts.identity,
  });
  return { ...base, action: 'current', rampPercent: null };
}
