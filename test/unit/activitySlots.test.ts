import { noopMetricMeter } from '@temporalio/common';
import { DefaultLogger } from '@temporalio/worker';
import { compileWorkerOptions } from '@temporalio/worker/lib/worker-options';
import { loadConfig } from '../../src/config';
import { activitySlots, DELIVERY_STEP_SLOTS } from '../../src/temporal/activitySlots';
import { providerCallLimitsFromConfig } from '../../src/temporal/providerCallLimits';
import { deliveryTaskQueue, WORKER_ROLES, workerTaskQueues } from '../../src/temporal/taskQueues';

/** The slots the SDK hands its core for the worker of `taskQueue` in a process polling `role`'s queues. */
function nativeSlots(poolMax: number, role: (typeof WORKER_ROLES)[number], taskQueue: string, perConnection?: number) {
  const queues = workerTaskQueues(role, 'payments');
  const compiled = compileWorkerOptions(
    {
      taskQueue,
      workflowBundle: { code: '' },
      ...activitySlots(
        { poolMax, ...(perConnection ? { slotsPerConnection: perConnection } : {}) },
        taskQueue,
        queues,
        deliveryTaskQueue('payments'),
      ),
    },
    new DefaultLogger('ERROR'),
    noopMetricMeter,
  );
  const tuner = compiled.tuner as {
    activityTaskSlotSupplier: { type: string; numSlots: number };
    localActivityTaskSlotSupplier: { type: string; numSlots: number };
  };
  expect(tuner.activityTaskSlotSupplier.type).toBe('fixed-size');
  expect(tuner.localActivityTaskSlotSupplier.type).toBe('fixed-size');
  return {
    activities: tuner.activityTaskSlotSupplier.numSlots,
    local: tuner.localActivityTaskSlotSupplier.numSlots,
  };
}

describe('activity slots sized to the database pool (issue 44, item 8; decision 0085)', () => {
  it("the default process (pool 10, payments and subscriptions): 10 + 10 slots per queue, not the SDK's 100 + 100", () => {
    for (const queue of ['payments', 'payments-subscriptions']) {
      expect(nativeSlots(10, 'payments-subscriptions', queue)).toEqual({ activities: 10, local: 10 });
    }
    // A process of one money queue has the whole budget for it.
    expect(nativeSlots(10, 'payments', 'payments')).toEqual({ activities: 20, local: 20 });
  });

  it.each([1, 2, 3, 5, 10, 17, 50])(
    'pool %i: the money queues of every role share at most pool x slots per connection (each at least 1)',
    (poolMax) => {
      for (const perConnection of [undefined, 1, 2, 8]) {
        for (const role of WORKER_ROLES) {
          const money = workerTaskQueues(role, 'payments').filter((q) => q !== deliveryTaskQueue('payments'));
          const total = money
            .map((queue) => nativeSlots(poolMax, role, queue, perConnection))
            .reduce((sum, s) => {
              expect(s.activities).toBeGreaterThanOrEqual(1);
              expect(s.local).toBeGreaterThanOrEqual(1);
              return sum + s.activities + s.local;
            }, 0);
          expect(total).toBeLessThanOrEqual(Math.max(poolMax * (perConnection ?? 4), 2 * money.length));
        }
      }
    },
  );

  it('the delivery queue keeps its slot per merchant delivering (decision 0069)', () => {
    expect(nativeSlots(10, 'deliveries', deliveryTaskQueue('payments')).activities).toBe(DELIVERY_STEP_SLOTS);
    expect(nativeSlots(10, 'all', deliveryTaskQueue('payments')).activities).toBe(DELIVERY_STEP_SLOTS);
  });

  it('WORKER_ACTIVITY_SLOTS_PER_CONNECTION and the provider call limits are read from the environment', () => {
    const config = loadConfig({});
    expect(config.WORKER_ACTIVITY_SLOTS_PER_CONNECTION).toBe(4);
    // Half the process's slots per merchant by default: one merchant never holds them all.
    expect(providerCallLimitsFromConfig(config)).toEqual({ perSecond: 100, burst: 200, concurrency: 20 });
    const tuned = loadConfig({
      DATABASE_POOL_MAX: '5',
      WORKER_ACTIVITY_SLOTS_PER_CONNECTION: '2',
      PROVIDER_CALLS_PER_SECOND_PER_MERCHANT: '0',
      PROVIDER_CALL_BURST_PER_MERCHANT: '3',
      PROVIDER_CALL_CONCURRENCY_PER_MERCHANT: '2',
    });
    expect(providerCallLimitsFromConfig(tuned)).toEqual({ perSecond: 0, burst: 3, concurrency: 2 });
    expect(() => loadConfig({ WORKER_ACTIVITY_SLOTS_PER_CONNECTION: '0' })).toThrow();
  });
});
