import { ScheduleAlreadyRunning, ScheduleOverlapPolicy, type Client } from '@temporalio/client';
import { SWEEP_SCHEDULE_ID, sweepOrphanPaymentsWorkflow } from '../../workflows/sweepPayments';

/**
 * The platform's Temporal Schedules, created by every worker at start (idempotent: an existing
 * schedule is left as operators may have tuned or paused it in the UI).
 */
export async function ensureSchedules(client: Client, taskQueue: string): Promise<void> {
  try {
    await client.schedule.create({
      scheduleId: SWEEP_SCHEDULE_ID,
      spec: { intervals: [{ every: '1 minute' }] },
      policies: { overlap: ScheduleOverlapPolicy.SKIP },
      action: {
        type: 'startWorkflow',
        workflowType: sweepOrphanPaymentsWorkflow,
        workflowId: SWEEP_SCHEDULE_ID,
        taskQueue,
        args: [{ olderThanSeconds: 120, limit: 500 }],
      },
    });
  } catch (err) {
    if (!(err instanceof ScheduleAlreadyRunning)) throw err;
  }
}
