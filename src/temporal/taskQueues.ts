/**
 * Which task queue each kind of work runs on (docs/decisions.md, "Task queues").
 *
 * Subscriptions (their first charge, renewals, charge retries, emails and callbacks) run on a
 * queue of their own beside TEMPORAL_TASK_QUEUE, which keeps payments, refunds and the sweeper: a
 * billing day's renewal backlog then waits in its own queue, and a checkout's workflow task is
 * dispatched at once, not after the renewals written before it. Subscriptions started before this
 * queue existed stay on the main one (a run keeps its queue), which `all` and `payments` workers poll.
 */
export function subscriptionTaskQueue(taskQueue: string): string {
  return `${taskQueue}-subscriptions`;
}

/**
 * Deliveries of events to merchants (callbackUrls and webhook endpoints; decision 0069) run on a
 * queue of their own and, in production, in worker processes of their own (WORKER_ROLE
 * `deliveries`): a merchant's server that hangs holds delivery slots, never a money movement's.
 */
export function deliveryTaskQueue(taskQueue: string): string {
  return `${taskQueue}-deliveries`;
}

/**
 * What a worker process polls (WORKER_ROLE): every queue, or one, so each scales on its own; or
 * every queue but the delivery queue (`payments-subscriptions`), beside `deliveries` workers of
 * their own (decision 0071: `npm run cluster`, docker-compose.yml).
 */
export const WORKER_ROLES = ['all', 'payments', 'subscriptions', 'deliveries', 'payments-subscriptions'] as const;
export type WorkerRole = (typeof WORKER_ROLES)[number];

/** The task queues a worker of `role` polls. */
export function workerTaskQueues(role: WorkerRole, taskQueue: string): string[] {
  if (role === 'payments') return [taskQueue];
  if (role === 'subscriptions') return [subscriptionTaskQueue(taskQueue)];
  if (role === 'deliveries') return [deliveryTaskQueue(taskQueue)];
  if (role === 'payments-subscriptions') return [taskQueue, subscriptionTaskQueue(taskQueue)];
  return [taskQueue, subscriptionTaskQueue(taskQueue), deliveryTaskQueue(taskQueue)];
}
