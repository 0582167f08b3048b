import { proxyActivities } from '@temporalio/workflow';
import type { Activities } from '../activities';

const acts = proxyActivities<Activities>({
  startToCloseTimeout: '2 minutes',
  retry: { initialInterval: '5 seconds', maximumInterval: '1 minute', maximumAttempts: 5 },
});

export const SWEEP_SCHEDULE_ID = 'sweep-orphan-payments';

/** Run by a Temporal Schedule every minute (see src/temporal/schedules.ts). */
export async function sweepOrphanPaymentsWorkflow(input: { olderThanSeconds: number; limit: number }): Promise<number> {
  return acts.startOrphanPaymentWorkflows(input.olderThanSeconds, input.limit);
}
