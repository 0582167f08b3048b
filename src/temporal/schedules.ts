import { isDeepStrictEqual } from 'node:util';
import {
  ScheduleAlreadyRunning,
  ScheduleNotFoundError,
  ScheduleOverlapPolicy,
  type Client,
  type ScheduleDescription,
} from '@temporalio/client';
import {
  LIVE_KINDS,
  ORPHAN_KINDS,
  sweepOrphansWorkflow,
  sweepScheduleId,
  type SweepOrphansInput,
} from '../../workflows/sweepOrphans';
import { sweepOrphansWorkflowSummary } from '../rules/workflowSummaries';

/** The payments-only sweeper's schedule, replaced by sweepScheduleId's. */
const LEGACY_PAYMENT_SWEEP_SCHEDULE_ID = 'sweep-orphan-payments';

const SWEEP_EVERY_MS = 60_000;
/** A run stuck (e.g. a workflow task failing) ends here, so SKIP does not hold the schedule forever. */
const SWEEP_RUN_TIMEOUT_MS = 10 * 60_000;
export const SWEEP_ARGS: SweepOrphansInput = {
  graceSeconds: 120,
  pageSize: 200,
  maxRows: 5000,
  // Live records whose workflow ended get a new run (decision 0059).
  liveKinds: [...LIVE_KINDS],
};

/** What each sweep run shows in the Temporal UI. */
const SWEEP_SUMMARY = sweepOrphansWorkflowSummary({ everySeconds: SWEEP_EVERY_MS / 1000, kinds: ORPHAN_KINDS });

/** The sweep schedule as this code defines it. */
function sweepSchedule(taskQueue: string) {
  return {
    spec: { intervals: [{ every: SWEEP_EVERY_MS }] },
    action: {
      type: 'startWorkflow' as const,
      workflowType: sweepOrphansWorkflow,
      workflowId: sweepScheduleId(taskQueue),
      taskQueue,
      args: [SWEEP_ARGS] as [SweepOrphansInput],
      workflowRunTimeout: SWEEP_RUN_TIMEOUT_MS,
      ...SWEEP_SUMMARY,
    },
    policies: { overlap: ScheduleOverlapPolicy.SKIP },
  };
}

/** Does the existing schedule run what this code defines (interval, workflow, queue, args, timeout, summary)? */
function isCurrent(existing: ScheduleDescription, taskQueue: string): boolean {
  const { action } = existing;
  const intervals = existing.spec.intervals ?? [];
  return (
    intervals.length === 1 &&
    intervals[0]!.every === SWEEP_EVERY_MS &&
    !existing.spec.calendars?.length &&
    action.workflowType === sweepOrphansWorkflow.name &&
    action.taskQueue === taskQueue &&
    action.workflowRunTimeout === SWEEP_RUN_TIMEOUT_MS &&
    existing.policies.overlap === ScheduleOverlapPolicy.SKIP &&
    action.staticSummary === SWEEP_SUMMARY.staticSummary &&
    action.staticDetails === SWEEP_SUMMARY.staticDetails &&
    isDeepStrictEqual(action.args, [SWEEP_ARGS])
  );
}

/**
 * The platform's Temporal Schedules, applied by the deploy step (`workers:promote` making a build
 * current; in development each worker at start; decision 0083), so a restarting worker of an older
 * build never takes a definition back: created if missing,
 * updated if their definition changed (a deploy), left alone otherwise. An update keeps the
 * schedule's state, so an operator's pause (and its note) survives a deploy.
 */
export async function ensureSchedules(client: Client, taskQueue: string): Promise<void> {
  const desired = sweepSchedule(taskQueue);
  const scheduleId = sweepScheduleId(taskQueue);
  const handle = client.schedule.getHandle(scheduleId);
  let existing: ScheduleDescription | undefined;
  try {
    existing = await handle.describe();
  } catch (err) {
    if (!(err instanceof ScheduleNotFoundError)) throw err;
  }
  if (!existing) {
    try {
      await client.schedule.create({ scheduleId, ...desired });
    } catch (err) {
      // Another worker created it a moment ago (with this same definition, or its own).
      if (!(err instanceof ScheduleAlreadyRunning)) throw err;
    }
  } else if (!isCurrent(existing, taskQueue)) {
    await handle.update((previous) => ({
      ...previous,
      spec: desired.spec,
      action: desired.action,
      policies: { ...previous.policies, ...desired.policies },
    }));
  }
  await deleteLegacySchedule(client);
}

async function deleteLegacySchedule(client: Client): Promise<void> {
  try {
    await client.schedule.getHandle(LEGACY_PAYMENT_SWEEP_SCHEDULE_ID).delete();
  } catch (err) {
    if (!(err instanceof ScheduleNotFoundError)) throw err;
  }
}
