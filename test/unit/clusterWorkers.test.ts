import { loadConfig } from '../../src/config';
import { clusterWorkerKinds, metricsEndpoints, workerMetricsPort } from '../../dev/stack/stackParts';
import { deliveryTaskQueue, workerTaskQueues } from '../../src/temporal/taskQueues';

/**
 * `npm run cluster`'s worker processes by kind (decision 0071): event deliveries in processes of
 * their own, the other workers never polling the delivery queue; each process its metrics port.
 */
describe('npm run cluster: worker kinds', () => {
  const config = (env: Record<string, string> = {}) => loadConfig({ DATA_DIR: '/tmp/nowhere-cluster-test', ...env });

  it('runs WORKER_PROCESSES workers of every queue but deliveries, and one delivery worker by default', () => {
    const c = config();
    expect(c.DELIVERY_WORKER_PROCESSES).toBe(1);
    expect(clusterWorkerKinds(c)).toEqual([
      { kind: 'worker', role: 'payments-subscriptions', count: 2, firstSlot: 1 },
      { kind: 'delivery-worker', role: 'deliveries', count: 1, firstSlot: 3 },
    ]);
    const [workers, deliveries] = clusterWorkerKinds(c).map((k) => workerTaskQueues(k.role, 'payments'));
    expect(workers).not.toContain(deliveryTaskQueue('payments'));
    expect(deliveries).toEqual([deliveryTaskQueue('payments')]);
    // Between them every queue an `all` worker polls.
    expect([...workers!, ...deliveries!].sort()).toEqual(workerTaskQueues('all', 'payments').sort());
  });

  it('counts come from WORKER_PROCESSES and DELIVERY_WORKER_PROCESSES; 0 delivery workers: the workers poll all', () => {
    expect(clusterWorkerKinds(config({ WORKER_PROCESSES: '3', DELIVERY_WORKER_PROCESSES: '2' }))).toEqual([
      { kind: 'worker', role: 'payments-subscriptions', count: 3, firstSlot: 1 },
      { kind: 'delivery-worker', role: 'deliveries', count: 2, firstSlot: 4 },
    ]);
    expect(clusterWorkerKinds(config({ DELIVERY_WORKER_PROCESSES: '0' }))).toEqual([
      { kind: 'worker', role: 'all', count: 2, firstSlot: 1 },
    ]);
    expect(() => config({ DELIVERY_WORKER_PROCESSES: '-1' })).toThrow();
  });

  it('gives every worker process its own metrics port: the delivery workers after the workers', () => {
    const c = config({ WORKER_METRICS_PORT: '9465', WORKER_PROCESSES: '2', DELIVERY_WORKER_PROCESSES: '2' });
    const ports = clusterWorkerKinds(c).flatMap((k) =>
      Array.from({ length: k.count }, (_, i) => workerMetricsPort(c, k.firstSlot + i)),
    );
    expect(ports).toEqual([9465, 9466, 9467, 9468]);
    expect(metricsEndpoints(c, 4).workers).toHaveLength(4);
  });
});
