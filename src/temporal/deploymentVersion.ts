import type { Connection } from '@temporalio/client';
import type { temporal } from '@temporalio/proto';

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
