import { Context } from '@temporalio/activity';
import { clockAdvanceOf, clockSubscriptionIds, finishAdvance, setClockTime } from '../src/domain/testClocks';
import { subscriptionRecordOf, subscriptionStartOf } from '../src/domain/subscriptions';
import type { ActivityDeps } from './deps';

/** How long a subscription handing over (continue-as-new) is given before it is asked again. */
const AGAIN_MS = 200;
/** Heartbeats of a step while its subscriptions work (the workflow's heartbeat timeout is 30 s). */
const HEARTBEAT_MS = 5_000;

/** The test clock's advance (workflows/testClock.ts, decision 0090): its record and its subscriptions. */
export function createTestClockActivities(deps: Pick<ActivityDeps, 'orm' | 'starters'>) {
  const { orm, starters } = deps;
  return {
    /** The clock's time, its target and its subscriptions not cancelled (null: gone). */
    async testClockAdvanceOf(clockId: string) {
      const clock = await clockAdvanceOf(orm.em, clockId);
      if (!clock || clock.status !== 'advancing') return clock && { ...clock, advanceToMs: null, subscriptionIds: [] };
      return { ...clock, subscriptionIds: await clockSubscriptionIds(orm.em, clockId) };
    },

    /**
     * One step: the clock reads `nowMs`, and each subscription named is told it, in parallel,
     * answering once quiet with its next due time (clock time; null: nothing due).
     */
    async moveTestClock(input: {
      clockId: string;
      nowMs: number;
      subscriptionIds: string[];
    }): Promise<Record<string, number | null>> {
      await setClockTime(orm.em, input.clockId, input.nowMs);
      // Alive while the subscriptions work (a charge decided later keeps one busy in real time).
      const context = Context.current();
      const beat = setInterval(() => context.heartbeat(), HEARTBEAT_MS);
      try {
        return await tell(input);
      } finally {
        clearInterval(beat);
      }
    },

    /** The advance is over: the clock reads its target and is ready. */
    async finishTestClockAdvance(clockId: string): Promise<void> {
      await finishAdvance(orm.em, clockId);
    },
  };

  async function tell(input: { nowMs: number; subscriptionIds: string[] }): Promise<Record<string, number | null>> {
    const answers = await Promise.all(
      input.subscriptionIds.map(async (id) => {
        let revived = false;
        for (;;) {
          const answer = await starters.subscription.clockTime(id, input.nowMs);
          if (answer === 'closed') {
            // Once per step: a live subscription whose run ended (the sweeper leaves clock
            // subscriptions alone) is taken up where its record says, at the clock's time.
            if (revived || !(await reviveOnClock(id, input.nowMs))) return [id, null] as const;
            revived = true;
            continue;
          }
          if (answer !== 'again') return [id, answer.nextDueMs] as const;
          await new Promise((resolve) => setTimeout(resolve, AGAIN_MS));
        }
      }),
    );
    return Object.fromEntries(answers);
  }

  /** Revives a clock subscription's run from its record (decision 0061) with the clock's time as now. */
  async function reviveOnClock(subscriptionId: string, nowMs: number): Promise<boolean> {
    const start = await subscriptionStartOf(orm.em.fork(), subscriptionId);
    if (!start) return false;
    const answer = await starters.subscription.revive(
      start,
      () => subscriptionRecordOf(orm.em.fork(), subscriptionId),
      undefined,
      nowMs,
    );
    return answer !== 'skipped';
  }
}
