/**
 * The billing plan of a subscription, as pure rules: which phase a period belongs to, how long
 * it lasts, and when a failed charge is retried. Shared by the workflow (deterministic: no I/O,
 * no clock) and the API, so both tell the same story.
 */

/** The lifecycle of PRODUCT.md: created -> pending -> active <-> past_due -> cancelled. */
export const SUBSCRIPTION_STATUSES = ['created', 'pending', 'active', 'past_due', 'cancelled'] as const;
export type SubscriptionStatus = (typeof SUBSCRIPTION_STATUSES)[number];

/** What a recorded state change left to send: the workflow sends the emails, delivers the events. */
export interface Outbox {
  status: SubscriptionStatus;
  emailIds: string[];
  eventIds: string[];
}

export interface PlanPhase {
  id: string;
  /** Per period, integer minor units; 0 is a free period (nothing is charged). */
  amountMinor: number;
  billingIntervalDays: number;
  /** Periods in this phase; null for the evergreen phase, which repeats for ever (always last). */
  iterations: number | null;
}

export interface Plan {
  phases: PlanPhase[];
  /** Billing days between a failed attempt and the next; one entry per retry. */
  retryScheduleDays: number[];
}

export const DEFAULT_RETRY_SCHEDULE_DAYS = [1, 3, 5];

/*
 * Workflow-visible arithmetic (issue 44, item 7; decision 0083): phaseOfPeriod, periodMillis,
 * retryDelayMillis and retryScheduleTotalMillis decide the timers of running subscription
 * workflows. Their outputs are frozen (test/unit/workflowArithmetic.test.ts): a change comes as a
 * new function chosen behind patched() in the workflow, never as an edit of these. They live in
 * src/rules, the deterministic layer workflows may import, because the sweeper's revival and the
 * API compute the same periods from the same definitions.
 */

/** The phase that bills the period `periodIndex` (0-based) and its position in the plan. */
export function phaseOfPeriod(plan: Plan, periodIndex: number): { phase: PlanPhase; phaseIndex: number } {
  let remaining = periodIndex;
  for (let i = 0; i < plan.phases.length; i++) {
    const phase = plan.phases[i]!;
    if (phase.iterations === null || remaining < phase.iterations) return { phase, phaseIndex: i };
    remaining -= phase.iterations;
  }
  throw new Error('a plan ends with its evergreen phase');
}

/** A period's length in milliseconds, with a billing day of `billingDaySeconds`. */
export function periodMillis(phase: PlanPhase, billingDaySeconds: number): number {
  return phase.billingIntervalDays * billingDaySeconds * 1000;
}

/**
 * After `failedAttempts` failed attempts on one invoice: the delay to the next attempt in
 * milliseconds, or null when the retries are exhausted.
 */
export function retryDelayMillis(plan: Plan, failedAttempts: number, billingDaySeconds: number): number | null {
  const days = plan.retryScheduleDays[failedAttempts - 1];
  return days === undefined ? null : days * billingDaySeconds * 1000;
}

/**
 * The retry schedule's total in milliseconds (the sum of `retryScheduleDays`): how long a hard
 * decline waits for a new card, from the last declined attempt, before the subscription is
 * cancelled.
 */
export function retryScheduleTotalMillis(plan: Plan, billingDaySeconds: number): number {
  return plan.retryScheduleDays.reduce((sum, days) => sum + days, 0) * billingDaySeconds * 1000;
}

/**
 * The provider idempotency key of an invoice's n-th attempt. The first is the invoice id
 * itself. A decline is final at the provider (the same key answers the same decline), so a
 * retry needs a key of its own; it is only made once the previous attempt is known to have
 * been declined, so at most one attempt of an invoice can ever capture.
 */
export function invoiceAttemptKey(invoiceId: string, attempt: number): string {
  return attempt <= 1 ? invoiceId : `${invoiceId}.retry${attempt - 1}`;
}
