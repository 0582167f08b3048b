import { deprecatePatch, proxyActivities, setWorkflowOptions } from '@temporalio/workflow';
import { pinnedWhenVersioned } from './versioning';
import { SWEEP_DISPUTES, SWEEP_OUTBOX_RELAY, SWEEP_SUBSCRIPTIONS } from './patches';
import type { Activities } from '../activities';
import { LIVE_KINDS, ORPHAN_KINDS, type LiveKind, type OrphanKind } from '../src/rules/orphanKinds';

export { LIVE_KINDS, ORPHAN_KINDS, type LiveKind, type OrphanKind };

export const SWEEP_SCHEDULE_ID = 'sweep-orphans';

/**
 * The sweep schedule of a task queue (and its runs' workflow id): `sweep-orphans` for the default
 * queue, as it always was; one of its own for any other, so stacks sharing a namespace each keep theirs.
 */
export function sweepScheduleId(taskQueue: string): string {
  return taskQueue === 'payments' ? SWEEP_SCHEDULE_ID : `${SWEEP_SCHEDULE_ID}-${taskQueue}`;
}

export interface SweepOrphansInput {
  /** Only rows at least this old: the API starts a record's workflow right after its commit. */
  graceSeconds: number;
  /** Rows per query (keyset page). */
  pageSize: number;
  /** At most this many rows per kind and run; the next run goes on from the watermark. */
  maxRows: number;
  /** Absent: every kind. */
  kinds?: OrphanKind[];
  /** Only this merchant's records, with a watermark of their own (tests, operators). */
  merchantId?: string;
  /**
   * Then, for these kinds, live records whose workflow ended get a new run (decision 0059; the
   * schedule passes every LIVE_KINDS). Absent: none (runs of older schedules).
   */
  liveKinds?: LiveKind[];
}

/** What a sweep did: rows examined per orphan kind, and with `liveKinds` the runs started per live kind. */
export type SweepResult = Partial<Record<OrphanKind, number>> & { revived?: Partial<Record<LiveKind, number>> };

const acts = proxyActivities<Activities>({
  startToCloseTimeout: '10 minutes',
  // A dead worker is noticed within this; the retry resumes at the heartbeat's cursor.
  heartbeatTimeout: '30 seconds',
  retry: { initialInterval: '5 seconds', maximumInterval: '1 minute', maximumAttempts: 5 },
});

/** Run by a Temporal Schedule every minute (see src/temporal/schedules.ts): rows examined, per kind. */
export async function sweepOrphansWorkflow(input: SweepOrphansInput): Promise<SweepResult> {
  const examined: SweepResult = {};
  // Every kind since SWEEP_DISPUTES. A run lives at most 10 minutes (the schedule's run timeout):
  // the runs that began with fewer kinds ended long ago, so the three patches are deprecated
  // (their markers still recorded, no longer needed to replay; decision 0084's calendar).
  if (!input.kinds) {
    deprecatePatch(SWEEP_SUBSCRIPTIONS);
    deprecatePatch(SWEEP_OUTBOX_RELAY);
    deprecatePatch(SWEEP_DISPUTES);
  }
  const kinds = input.kinds ?? ORPHAN_KINDS;
  for (const kind of kinds) {
    examined[kind] = await acts.sweepOrphans({
      kind,
      graceSeconds: input.graceSeconds,
      pageSize: input.pageSize,
      maxRows: input.maxRows,
      ...(input.merchantId ? { merchantId: input.merchantId } : {}),
    });
  }
  if (input.liveKinds) {
    const revived: Partial<Record<LiveKind, number>> = {};
    for (const kind of input.liveKinds) {
      revived[kind] = await acts.reviveLiveRecords({
        kind,
        graceSeconds: input.graceSeconds,
        pageSize: input.pageSize,
        maxRows: input.maxRows,
        ...(input.merchantId ? { merchantId: input.merchantId } : {}),
      });
    }
    examined.revived = revived;
  }
  return examined;
}
setWorkflowOptions(pinnedWhenVersioned, sweepOrphansWorkflow);
