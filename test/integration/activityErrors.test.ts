import { Client, Connection } from '@temporalio/client';
import { NativeConnection, Worker } from '@temporalio/worker';
import type { MikroORM } from '@mikro-orm/postgresql';
import { ACTIVITY_INTERCEPTORS } from '../../src/worker';
import { probeWorkflow } from '../../workflows/probe';
import { openTestOrm, uniqueTaskQueue } from '../helpers/stack';
import { testStack } from '../setup/stackInfo';

/**
 * Issue 44, item 13 (decision 0074): an activity's database error reaches Temporal's history as
 * its summary, never its message: MikroORM writes the SQL and its parameters there, PostgreSQL's
 * detail quotes the values. A real worker with the product's activity interceptors runs the probe
 * workflow, whose activity here fails on a real unique violation of a customer's email.
 */
describe("an activity's database error in history", () => {
  let orm: MikroORM;
  beforeAll(async () => {
    orm = await openTestOrm();
  });
  afterAll(() => orm.close());

  it('shows the SQLSTATE class, code and error type; never the statement, its values or the detail', async () => {
    const email = `secret-${Date.now()}@customer.example`;
    // A real violation: the same email twice under a primary key, in one transaction.
    const failingProbe = () =>
      orm.em.fork().transactional(async (tx) => {
        await tx.execute('create temporary table scrub_probe (email text primary key) on commit drop');
        await tx.execute('insert into scrub_probe (email) values (?)', [email]);
        await tx.execute('insert into scrub_probe (email) values (?)', [email]);
        return 'unreachable';
      });
    const taskQueue = uniqueTaskQueue('activity-errors');
    const connection = await NativeConnection.connect({ address: testStack().temporalAddress });
    const clientConnection = await Connection.connect({ address: testStack().temporalAddress });
    const client = new Client({ connection: clientConnection, namespace: 'default' });
    const worker = await Worker.create({
      connection,
      namespace: 'default',
      taskQueue,
      workflowBundle: { codePath: testStack().workflowBundlePath },
      activities: { probeDatabase: failingProbe },
      interceptors: { activity: ACTIVITY_INTERCEPTORS },
    });
    try {
      const workflowId = `scrub-probe-${Date.now()}`;
      // A constraint violation is a bug (decision 0077): not retried, the run parked (Stuck activity_bug).
      await worker.runUntil(async () => {
        const handle = await client.workflow.start(probeWorkflow, { workflowId, taskQueue, args: ['scrub'] });
        for (let i = 0; i < 80; i += 1) {
          const mark = (await handle.describe()).searchAttributes.Stuck as string[] | undefined;
          if (mark?.[0] === 'activity_bug') break;
          await new Promise((r) => setTimeout(r, 250));
        }
        await handle.terminate('test over');
      });
      const history = JSON.stringify(await client.workflow.getHandle(workflowId).fetchHistory());
      expect(history).not.toContain(email);
      expect(history).not.toMatch(/insert into|already exists|Key \(email\)/i);
      expect(history).toContain('database error integrity_constraint_violation (23505) constraint scrub_probe_pkey');
      expect(history).toContain('UniqueConstraintViolationException');
    } finally {
      await clientConnection.close();
      await connection.close();
    }
  }, 60_000);
});
