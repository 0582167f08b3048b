import {
  periodMillis,
  phaseOfPeriod,
  retryDelayMillis,
  retryScheduleTotalMillis,
  type Plan,
} from '../../src/rules/subscriptionPlan';

/**
 * Issue 44, item 7 (decision 0083): the period and retry arithmetic decides the timers running
 * subscription workflows sleep on, so a replay depends on it. These outputs are frozen: a change
 * that moves one of them must come as a new function chosen behind `patched()` in the workflow,
 * never as an edit of these (a running workflow replaying with new numbers fails, or worse,
 * charges at another time). If this test fails, revert the edit and version it instead.
 */
const DAY = 86_400;
const plan: Plan = {
  phases: [
    { id: 'trial', amountMinor: 0, billingIntervalDays: 7, iterations: 1 },
    { id: 'intro', amountMinor: 500, billingIntervalDays: 30, iterations: 2 },
    { id: 'evergreen', amountMinor: 1000, billingIntervalDays: 365, iterations: null },
  ],
  retryScheduleDays: [1, 3, 5],
};

describe('the workflow-visible subscription arithmetic (frozen: change it only behind a patch)', () => {
  it('the phase of each period', () => {
    expect(
      [0, 1, 2, 3, 4, 100].map((i) => [i, phaseOfPeriod(plan, i).phase.id, phaseOfPeriod(plan, i).phaseIndex]),
    ).toEqual([
      [0, 'trial', 0],
      [1, 'intro', 1],
      [2, 'intro', 1],
      [3, 'evergreen', 2],
      [4, 'evergreen', 2],
      [100, 'evergreen', 2],
    ]);
  });

  it('period lengths in milliseconds, for a real day and a test day', () => {
    expect(plan.phases.map((p) => periodMillis(p, DAY))).toEqual([604_800_000, 2_592_000_000, 31_536_000_000]);
    expect(plan.phases.map((p) => periodMillis(p, 2))).toEqual([14_000, 60_000, 730_000]);
    expect(periodMillis({ ...plan.phases[0]!, billingIntervalDays: 3650 }, DAY)).toBe(315_360_000_000);
  });

  it('retry delays after each failed attempt, then exhausted', () => {
    expect([1, 2, 3, 4].map((n) => retryDelayMillis(plan, n, DAY))).toEqual([
      86_400_000,
      259_200_000,
      432_000_000,
      null,
    ]);
    expect([1, 2, 3, 4].map((n) => retryDelayMillis(plan, n, 2))).toEqual([2_000, 6_000, 10_000, null]);
    expect(retryDelayMillis({ ...plan, retryScheduleDays: [] }, 1, DAY)).toBeNull();
  });

  it('the whole retry schedule (how long a hard decline waits for a new card)', () => {
    expect(retryScheduleTotalMillis(plan, DAY)).toBe(777_600_000);
    expect(retryScheduleTotalMillis(plan, 2)).toBe(18_000);
    expect(retryScheduleTotalMillis({ ...plan, retryScheduleDays: [] }, DAY)).toBe(0);
  });
});
