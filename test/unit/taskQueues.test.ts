import { subscriptionTaskQueue, workerTaskQueues } from '../../src/temporal/taskQueues';

describe('task queues', () => {
  it('puts subscriptions beside the main queue, under its name', () => {
    expect(subscriptionTaskQueue('payments')).toBe('payments-subscriptions');
  });

  it.each([
    ['all', ['payments', 'payments-subscriptions']],
    ['payments', ['payments']],
    ['subscriptions', ['payments-subscriptions']],
  ] as const)('a worker of role %s polls %j', (role, queues) => {
    expect(workerTaskQueues(role, 'payments')).toEqual(queues);
  });
});
