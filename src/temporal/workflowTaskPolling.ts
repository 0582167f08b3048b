import type { WorkerOptions } from '@temporalio/worker';

/**
 * How a worker polls for workflow tasks: the SDK's 10 polls, half of them (not the SDK's 2) on the
 * task queue's normal queue, where every new workflow's first task and every task of a workflow
 * not in the worker's cache arrive. A task queue has 4 partitions by default (dev server and
 * server), and a task written to a partition no poller is waiting on stays there until one polls
 * it: with 2 normal pollers, both busy, new workflows' first tasks waited about 2 s (4.7 % of
 * the floor's calls at 10 callers; bench/RESULTS.md, "The 2 s dispatch stalls"). Five normal
 * pollers cover the four partitions. The product's worker and the bench's floor worker both use it.
 */
export const WORKFLOW_TASK_POLLING: Pick<
  WorkerOptions,
  'maxConcurrentWorkflowTaskPolls' | 'nonStickyToStickyPollRatio'
> = {
  maxConcurrentWorkflowTaskPolls: 10,
  nonStickyToStickyPollRatio: 0.5,
};
