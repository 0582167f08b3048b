import { deliveryTaskQueue, subscriptionTaskQueue, workerTaskQueues } from '../../src/temporal/taskQueues';

describe('task queues', () => {
  it('puts subscriptions and deliveries beside the main queue, under its name', () => {
    expect(subscriptionTaskQueue('payments')).toBe('payments-subscriptions');
    expect(deliveryTaskQueue('payments')).toBe('payments-deliveries');
  });

  it.each([
    ['all', ['payments', 'payments-subscriptions', 'payments-deliveries']],
    ['payments', ['payments']],
    ['subscriptions', ['payments-subscriptions']],
    ['deliveries', ['payments-deliveries']],
    // Beside `deliveries` workers of their own: every queue that moves money, never the delivery one.
    ['payments-subscriptions', ['payments', 'payments-subscriptions']],
  ] as const)('a worker of role %s polls %j', (role, queues) => {
    expect(workerTaskQueues(role, 'payments')).toEqual(queues);
  });
});
