/**
 * The kinds of record the orphan sweeper gives a workflow, in the order it sweeps them. Each has
 * a row in activities/sweeper.ts `orphanKinds` (its candidates and how its workflow starts).
 * The last two are the outbox relay: emails and merchant events recorded by a run that was lost
 * before it handed them on (a local activity whose worker died), sent by a workflow of their own.
 * Then open disputes (since SWEEP_DISPUTES).
 */
export const ORPHAN_KINDS = ['payments', 'refunds', 'subscriptions', 'emails', 'merchantEvents', 'disputes'] as const;
export type OrphanKind = (typeof ORPHAN_KINDS)[number];
