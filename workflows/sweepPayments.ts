import { proxyActivities, setWorkflowOptions } from '@temporalio/workflow';
import { pinnedWhenVersioned } from './versioning';
import type { Activities } from '../activities';

const acts = proxyActivities<Activities>({
  startToCloseTimeout: '2 minutes',
  retry: { initialInterval: '5 seconds', maximumInterval: '1 minute', maximumAttempts: 5 },
});

/**
 * Superseded by sweepOrphansWorkflow (src/temporal/schedules.ts moves the schedule over). Kept,
 * unchanged, so that a run the old schedule started before the deploy still completes.
 */
export async function sweepOrphanPaymentsWorkflow(input: { olderThanSeconds: number; limit: number }): Promise<number> {
  return acts.startOrphanPaymentWorkflows(input.olderThanSeconds, input.limit);
}
setWorkflowOptions(pinnedWhenVersioned, sweepOrphanPaymentsWorkflow);
