/**
 * The kinds of record the orphan sweeper gives a workflow, in the order it sweeps them. Each has
 * a row in activities/sweeper.ts `orphanKinds` (its candidates and how its workflow starts).
 * The last two are the outbox relay: emails and merchant events recorded by a run that was lost
 * before it handed them on (a local activity whose worker died), sent by a workflow of their own.
 * Then open disputes (since SWEEP_DISPUTES).
 */
export const ORPHAN_KINDS = ['payments', 'refunds', 'subscriptions', 'emails', 'merchantEvents', 'disputes'] as const;
export type OrphanKind = (typeof ORPHAN_KINDS)[number];

/**
 * The kinds of LIVE record (not in a final status) the sweeper gives a new workflow run when
 * theirs ended (completed, failed, timed out, terminated): decision 0059. Each has a row in
 * activities/sweeper.ts `liveKinds`.
 * A new kind of record with a workflow of its own is one more entry here and a row there.
 */
export const LIVE_KINDS = ['payments', 'refunds', 'subscriptions', 'disputes'] as const;
export type LiveKind = (typeof LIVE_KINDS)[number];

/**
 * Where a live subscription whose workflow ended is taken up (subscriptionCollection.ts
 * `subscriptionRevivalOf`): `created` starts over (its first charge is keyed by its invoice, so
 * never charged twice); otherwise a new run resumes at the period the record shows, with the
 * collection of its invoice rebuilt from the record when it is being collected (decision 0061).
 */
export type { SubscriptionRevival } from './subscriptionCollection';
