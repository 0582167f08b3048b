import { workflowInfo } from '@temporalio/workflow';
import type { WorkflowDefinitionOptions } from '@temporalio/common';

/**
 * The versioning behaviour of a short-lived workflow type (minutes: the probe, the sweeps;
 * decision 0083): PINNED on a versioned worker, so a run finishes on the build that started it
 * and never meets a newer build's code; none on an unversioned worker (tests,
 * WORKER_VERSIONING=false), which the server refuses to run an annotated type on (an unversioned
 * worker still reports a build id, never a deployment name). Called once,
 * before the first run of the workflow function; the version it reads is the task's, recorded
 * in history, so a replay reads the same.
 *
 * Everything else stays AUTO_UPGRADE (the worker default): payments, refunds, disputes, emails and
 * subscriptions can wait days on a customer or a processor, and pinning them would keep every
 * build's workers alive that long; their changes go behind patched() instead.
 */
export const pinnedWhenVersioned = (): WorkflowDefinitionOptions =>
  workflowInfo().currentDeploymentVersion?.deploymentName ? { versioningBehavior: 'PINNED' } : {};
