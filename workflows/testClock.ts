import { continueAsNew, proxyActivities, workflowInfo } from '@temporalio/workflow';
import type { Activities } from '../activities';
import type { TestClockWorkflowInput } from './testClockApi';

/** Database steps: retried until PostgreSQL answers. */
const records = proxyActivities<Activities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute' },
});

/**
 * One step of the advance: the subscriptions due are told the clock's time and answer once quiet.
 * A charge the processor decides later keeps a subscription busy (real time): bounded generously,
 * retried (the Update is idempotent: a subscription past the time answers at once).
 */
const steps = proxyActivities<Activities>({
  startToCloseTimeout: '15 minutes',
  // A worker lost mid-step is noticed within this (the step heartbeats while it waits).
  heartbeatTimeout: '30 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '30 seconds' },
});

/** Steps per run before continuing as new (each is one activity: 6 events or so). */
const STEPS_PER_RUN = 500;

/**
 * A test clock's advance (decision 0090): from the clock's time to its `advance_to`, instant by
 * instant. Each subscription of the clock says when it is next due (clock time); the earliest
 * such instant is the next step: the clock reads it, the subscriptions due then are told it and
 * do what is due (renewals, retries, reminders, expiries, with their emails and events), each
 * answering once quiet with its next due time. At the target every subscription is told it; the
 * clock then reads the target and is `ready`. Everything due happens in clock-time order, and at
 * the date real time would have given it.
 */
export async function testClockWorkflow(input: TestClockWorkflowInput): Promise<void> {
  const { clockId } = input;
  const clock = await records.testClockAdvanceOf(clockId);
  if (!clock || clock.advanceToMs === null) return;
  const target = clock.advanceToMs;
  let due: Record<string, number | null>;
  if (input.resume) {
    due = input.resume.due;
  } else {
    // Where each subscription stands at the clock's time (nothing moves yet).
    due = await steps.moveTestClock({ clockId, nowMs: clock.frozenTimeMs, subscriptionIds: clock.subscriptionIds });
  }
  for (let step = 1; ; step++) {
    const next = earliest(due);
    const t = next !== null && next < target ? next : target;
    // Ordered by real creation (the keys' order): the same instant, the same order, every time.
    const ids = Object.keys(due).filter((id) => t === target || (due[id] !== null && due[id]! <= t));
    Object.assign(due, await steps.moveTestClock({ clockId, nowMs: t, subscriptionIds: ids }));
    if (t === target) break;
    if (step >= STEPS_PER_RUN || workflowInfo().continueAsNewSuggested) {
      await continueAsNew<typeof testClockWorkflow>({ clockId, resume: { nowMs: t, due } });
    }
  }
  await records.finishTestClockAdvance(clockId);
}

function earliest(due: Record<string, number | null>): number | null {
  let min: number | null = null;
  for (const at of Object.values(due)) if (at !== null && (min === null || at < min)) min = at;
  return min;
}
