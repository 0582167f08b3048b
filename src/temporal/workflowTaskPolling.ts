import type { WorkerOptions } from '@temporalio/worker';

type WorkflowTaskPolling = Pick<WorkerOptions, 'workflowTaskPollerBehavior' | 'nonStickyToStickyPollRatio'>;

/**
 * `maximum` workflow-task polls, half of them (not the SDK's fifth) on the task queue's normal
 * queue, where every new workflow's first task and every task of a workflow not in the worker's
 * cache arrive. Set through `workflowTaskPollerBehavior`: SDK 1.24 still documents
 * `maxConcurrentWorkflowTaskPolls` but no longer reads it (test/unit/workflowTaskPolling.test.ts).
 */
export function workflowTaskPolling(maximum: number): WorkflowTaskPolling {
  return { workflowTaskPollerBehavior: { type: 'simple-maximum', maximum }, nonStickyToStickyPollRatio: 0.5 };
}

/**
 * How a worker polls for workflow tasks: the SDK's 10 polls, five of them on the normal queue. A
 * task written to a partition of the queue that no poll is waiting on stays there about 2 s: with 4
 * partitions (the server's default) and 2 normal polls, 4.7 % of the floor's calls at 10 callers did
 * (bench/RESULTS.md, "The 2 s dispatch stalls"). Our servers run one partition (OUR_TUNING); five
 * normal polls keep a worker covering up to five if that is ever raised. 40 polls did not settle a
 * storm of 10,000 renewals sooner (bench/RESULTS.md, "Nineteenth"). The product's worker and the
 * bench's floor worker both use it.
 */
export const WORKFLOW_TASK_POLLING: WorkflowTaskPolling = workflowTaskPolling(10);
