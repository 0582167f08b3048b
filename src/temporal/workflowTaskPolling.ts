import type { WorkerOptions } from '@temporalio/worker';

/**
 * How a worker polls for workflow tasks: the SDK's 10 polls, half of them (not the SDK's 2) on the
 * task queue's normal queue, where every new workflow's first task and every task of a workflow
 * not in the worker's cache arrive. A task written to a partition of the queue that no poll is
 * waiting on stays there about 2 s: with 4 partitions (the server's default) and 2 normal polls,
 * 4.7 % of the floor's calls at 10 callers did (bench/RESULTS.md, "The 2 s dispatch stalls").
 * Our servers run one partition (OUR_TUNING); five normal polls keep a worker covering up to five
 * if that is ever raised. The product's worker and the bench's floor worker both use it.
 */
export const WORKFLOW_TASK_POLLING: Pick<
  WorkerOptions,
  'maxConcurrentWorkflowTaskPolls' | 'nonStickyToStickyPollRatio'
> = {
  maxConcurrentWorkflowTaskPolls: 10,
  nonStickyToStickyPollRatio: 0.5,
};
