import { Client, Connection } from '@temporalio/client';
import { NativeConnection, Worker } from '@temporalio/worker';
import { ACTIVITY_INTERCEPTORS } from '../../src/worker';
import { parkedOnBugQuery } from '../../src/metrics/stuckWorkflows';
import { probeWorkflow } from '../../workflows/probe';
import { uniqueTaskQueue } from '../helpers/stack';
import { testStack } from '../setup/stackInfo';

/**
 * Issue 44, item 5 (decision 0077): a bug in an activity is not retried every minute forever
 * (nor, under a bounded retry policy, does it fail its run). A real worker with the product's
 * activity interceptors runs the probe workflow (3 attempts on main: retried, then failed),
 * whose activity throws a TypeError: it runs once, the run stays RUNNING, marked
 * `Stuck: activity_bug` (visible through the client's describe and list), and the gauge's
 * visibility query (workflows_parked_on_bug) counts it.
 */
async function waitFor<T>(probe: () => Promise<T | undefined>, ms: number): Promise<T | undefined> {
  const until = Date.now() + ms;
  for (;;) {
    const value = await probe();
    if (value !== undefined || Date.now() > until) return value;
    await new Promise((r) => setTimeout(r, 250));
  }
}

describe('an activity that hits a bug', () => {
  it('is not retried; its run is parked Stuck activity_bug, never failed, and counted', async () => {
    const probeDatabase = jest.fn(() => {
      const config = undefined as unknown as { region: string };
      return Promise.resolve(config.region); // a TypeError
    });
    const taskQueue = uniqueTaskQueue('activity-bugs');
    const connection = await NativeConnection.connect({ address: testStack().temporalAddress });
    const clientConnection = await Connection.connect({ address: testStack().temporalAddress });
    const client = new Client({ connection: clientConnection, namespace: 'default' });
    const worker = await Worker.create({
      connection,
      namespace: 'default',
      taskQueue,
      workflowBundle: { codePath: testStack().workflowBundlePath },
      activities: { probeDatabase },
      interceptors: { activity: ACTIVITY_INTERCEPTORS },
    });
    const workflowId = `bug-probe-${Date.now()}`;
    try {
      await worker.runUntil(async () => {
        const handle = await client.workflow.start(probeWorkflow, { workflowId, taskQueue, args: ['bug'] });
        const stuck = await waitFor(async () => {
          const d = await handle.describe();
          const mark = d.searchAttributes.Stuck as string[] | undefined;
          return mark?.[0];
        }, 20_000);
        expect(stuck).toBe('activity_bug');
        // Give a retry (1 s on the probe's policy) time to happen, were there one.
        await new Promise((r) => setTimeout(r, 3_000));
        expect(probeDatabase).toHaveBeenCalledTimes(1);
        const d = await handle.describe();
        expect(d.status.name).toBe('RUNNING');
        const history = JSON.stringify(await handle.fetchHistory());
        expect(history).toContain('activity bug: TypeError');
        // Listed by the Stuck mark, and counted by the gauge's query (the probe is an `other` kind).
        const listed = await waitFor(async () => {
          for await (const w of client.workflow.list({
            query: `Stuck = 'activity_bug' AND WorkflowId = '${workflowId}'`,
          })) {
            return w.workflowId;
          }
          return undefined;
        }, 20_000);
        expect(listed).toBe(workflowId);
        const counted = (await client.workflow.count(parkedOnBugQuery('other'))).count;
        expect(counted).toBeGreaterThanOrEqual(1);
        await handle.terminate('test over');
      });
    } finally {
      await clientConnection.close();
      await connection.close();
    }
  }, 90_000);
});
