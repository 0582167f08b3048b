import type { Client } from '@temporalio/client';
import { Gauge } from 'prom-client';
import type { Logger } from '../logger';
import { ACTIVITY_BUG } from '../../workflows/activityBug';

/**
 * `workflows_stuck{workflow}`: running workflows marked `Stuck` (search attribute; decision 0059):
 * a question to the provider without an answer the code knows for longer than
 * WORKFLOW_STUCK_AFTER_SECONDS. Their record stays where it is and they keep asking; the
 * `WorkflowsStuck` alert (ops/prometheus/alerts.yml) asks an operator to look. Counted by the API
 * at scrape time from Temporal's visibility (one count per workflow kind), answered from a cache
 * for CACHE_MS. Temporal unreachable: no series (the scrape still answers).
 */
const CACHE_MS = 15_000;

/** The workflow types counted, by the `workflow` label (runs of the old and the V2 types together). */
export const STUCK_WORKFLOW_TYPES = {
  payment: ['paymentWorkflow', 'paymentWorkflowV2'],
  refund: ['refundWorkflow', 'refundWorkflowV2'],
  subscription: ['subscriptionWorkflow'],
  dispute: ['disputeWorkflow'],
} as const;

/** The visibility query of a kind's stuck runs. */
export function stuckQuery(types: readonly string[]): string {
  const typeList = types.map((t) => `'${t}'`).join(', ');
  return `ExecutionStatus = 'Running' AND Stuck IS NOT NULL AND WorkflowType IN (${typeList})`;
}

/**
 * The visibility query of a kind's runs parked on a bug (decision 0077: `Stuck = 'activity_bug'`);
 * kind `other`: every other workflow type (sweeps, deliveries, emails).
 */
export function parkedOnBugQuery(types: readonly string[] | 'other'): string {
  const all = Object.values(STUCK_WORKFLOW_TYPES).flat();
  const typeList = (types === 'other' ? all : types).map((t) => `'${t}'`).join(', ');
  return `ExecutionStatus = 'Running' AND Stuck = '${ACTIVITY_BUG}' AND WorkflowType ${types === 'other' ? 'NOT IN' : 'IN'} (${typeList})`;
}

/** The kinds `workflows_parked_on_bug` counts. */
const PARKED_KINDS: [string, readonly string[] | 'other'][] = [
  ...Object.entries(STUCK_WORKFLOW_TYPES),
  ['other', 'other'],
];

let registered = false;

export function registerStuckWorkflowGauge(client: Client, logger: Logger): void {
  if (registered) return;
  registered = true;
  let cached: { at: number; counts: Promise<Record<string, number> | null> } | undefined;
  const counts = (): Promise<Record<string, number> | null> => {
    const now = Date.now();
    if (cached && now - cached.at < CACHE_MS) return cached.counts;
    const taken = Promise.all(
      Object.entries(STUCK_WORKFLOW_TYPES).map(
        async ([workflow, types]) => [workflow, (await client.workflow.count(stuckQuery(types))).count] as const,
      ),
    ).then(
      (entries) => Object.fromEntries(entries),
      (err: unknown) => {
        logger.warn({ err }, 'stuck workflows gauge: count failed');
        cached = undefined;
        return null;
      },
    );
    cached = { at: now, counts: taken };
    return taken;
  };
  new Gauge({
    name: 'workflows_stuck',
    help: 'Running workflows marked Stuck: asking the provider without an answer the code knows for long',
    labelNames: ['workflow'],
    // Every API process counts the same runs: a cluster shows one count, not their sum.
    aggregator: 'max',
    async collect() {
      const c = await counts();
      this.reset();
      if (!c) return;
      for (const [workflow, n] of Object.entries(c)) this.set({ workflow }, n);
    },
  });

  // Runs parked on a bug in an activity (decision 0077), of every workflow type: the ActivityBugsParked alert.
  let parkedCache: { at: number; counts: Promise<Record<string, number> | null> } | undefined;
  const parkedCounts = (): Promise<Record<string, number> | null> => {
    const now = Date.now();
    if (parkedCache && now - parkedCache.at < CACHE_MS) return parkedCache.counts;
    const taken = Promise.all(
      PARKED_KINDS.map(
        async ([workflow, types]) => [workflow, (await client.workflow.count(parkedOnBugQuery(types))).count] as const,
      ),
    ).then(
      (entries) => Object.fromEntries(entries),
      (err: unknown) => {
        logger.warn({ err }, 'parked-on-bug workflows gauge: count failed');
        parkedCache = undefined;
        return null;
      },
    );
    parkedCache = { at: now, counts: taken };
    return taken;
  };
  new Gauge({
    name: 'workflows_parked_on_bug',
    help: 'Running workflows parked on a bug in an activity (Stuck = activity_bug): the call waits for a fixed worker',
    labelNames: ['workflow'],
    aggregator: 'max',
    async collect() {
      const c = await parkedCounts();
      this.reset();
      if (!c) return;
      for (const [workflow, n] of Object.entries(c)) this.set({ workflow }, n);
    },
  });
}
