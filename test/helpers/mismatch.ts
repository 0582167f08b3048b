import type { Client } from '@temporalio/client';
import { RECONCILIATION_MISMATCH } from '../../activities/providerFailures';
import { eventually } from './http';

/**
 * Waits (up to a minute) until a pending activity of the workflow last failed as a
 * reconciliation mismatch, as an operator sees it in the Temporal UI; answers that activity.
 */
export async function mismatchShown(client: Client, workflowId: string) {
  const shown = (d: Awaited<ReturnType<ReturnType<Client['workflow']['getHandle']>['describe']>>) =>
    d.raw.pendingActivities?.find((a) => a.lastFailure?.applicationFailureInfo?.type === RECONCILIATION_MISMATCH);
  const described = await eventually(
    () => client.workflow.getHandle(workflowId).describe(),
    (d) => shown(d) !== undefined,
    60_000,
    250,
  );
  return shown(described)!;
}
