import { Client, Connection } from '@temporalio/client';
import { NativeConnection, Worker } from '@temporalio/worker';
import type { MikroORM } from '@mikro-orm/postgresql';
import { ACTIVITY_INTERCEPTORS } from '../../src/worker';
import { activitiesInFlight, isForcedShutdown, workerShutdownOptions } from '../../src/temporal/workerShutdown';
import { openTestOrm, uniqueTaskQueue } from '../helpers/stack';
import { eventually } from '../helpers/http';
import { testStack } from '../setup/stackInfo';

/**
 * Decision 0075: a stopping worker cancels its activities at once and, when one does not answer
 * (here a real statement that ignores cancellation), gives up on it after the force time instead
 * of keeping the process alive; what it abandons is named for the log.
 */
describe('a worker stopping while an activity ignores its cancellation', () => {
  let orm: MikroORM;
  beforeAll(async () => {
    orm = await openTestOrm();
  });
  afterAll(() => orm.close());

  it('stops within the force time and names the activity it left running', async () => {
    const marker = `shutdown-probe-${Date.now()}`;
    // pg_sleep cannot be cancelled by the activity's signal: the worker has to give up on it.
    const stubbornProbe = async () => {
      await orm.em.fork().execute(`select pg_sleep(20), '${marker}'`);
      return 'finished';
    };
    const taskQueue = uniqueTaskQueue('worker-shutdown');
    const connection = await NativeConnection.connect({ address: testStack().temporalAddress });
    const clientConnection = await Connection.connect({ address: testStack().temporalAddress });
    const client = new Client({ connection: clientConnection, namespace: 'default' });
    const worker = await Worker.create({
      connection,
      namespace: 'default',
      taskQueue,
      workflowBundle: { codePath: testStack().workflowBundlePath },
      activities: { probeDatabase: stubbornProbe },
      interceptors: { activity: ACTIVITY_INTERCEPTORS },
      ...workerShutdownOptions(1500),
    });
    const workflowId = `shutdown-probe-${Date.now()}`;
    try {
      const run = worker.run().then(
        () => null,
        (err: unknown) => err,
      );
      await client.workflow.start('probeWorkflow', { workflowId, taskQueue, args: ['shutdown'] });
      const inFlight = await eventually(
        async () => activitiesInFlight().filter((a) => a.workflowId === workflowId),
        (list) => list.length === 1,
        10_000,
        50,
      );
      expect(inFlight).toEqual([
        { activityType: 'probeDatabase', workflowId, taskQueue, attempt: 1, runningMs: expect.any(Number) },
      ]);

      const stopping = Date.now();
      worker.shutdown();
      const ended = await run;
      const stoppedAfterMs = Date.now() - stopping;
      expect(isForcedShutdown(ended)).toBe(true);
      expect(stoppedAfterMs).toBeGreaterThanOrEqual(1400);
      expect(stoppedAfterMs).toBeLessThan(10_000);
      // The statement is still running: abandoned, not finished.
      expect(activitiesInFlight().filter((a) => a.workflowId === workflowId)).toHaveLength(1);
    } finally {
      await orm.em
        .fork()
        .execute(`select pg_cancel_backend(pid) from pg_stat_activity where query like ? and pid <> pg_backend_pid()`, [
          `%${marker}%`,
        ]);
      await client.workflow
        .getHandle(workflowId)
        .terminate('test over')
        .catch(() => undefined);
      await clientConnection.close();
      await connection.close().catch(() => undefined);
    }
  });
});
