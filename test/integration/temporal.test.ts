import type { MikroORM } from '@mikro-orm/postgresql';
import { openTestOrm, startTestWorker, uniqueTaskQueue, type TestWorker } from '../helpers/stack';
import { probeWorkflow } from '../../workflows';
import { customSearchAttributes } from '../../workflows/searchAttributes';

describe('worker on the real Temporal server', () => {
  let orm: MikroORM;
  let tw: TestWorker;

  beforeAll(async () => {
    orm = await openTestOrm();
    tw = await startTestWorker(orm, { taskQueue: uniqueTaskQueue('probe') });
  });
  afterAll(async () => {
    await tw.stop();
    await orm.close();
  });

  it('runs a workflow that calls an activity reading PostgreSQL', async () => {
    const workflowId = `probe-${Date.now()}`;
    const before = Date.now();
    const result = await tw.client.workflow.execute(probeWorkflow, {
      taskQueue: tw.taskQueue,
      workflowId,
      args: ['hello'],
    });
    expect(result.workflowId).toBe(workflowId);
    expect(result.echo).toBe('hello');
    const dbTime = Date.parse(result.databaseTime);
    expect(dbTime).toBeGreaterThanOrEqual(before - 5000);
    expect(dbTime).toBeLessThanOrEqual(Date.now() + 5000);

    const history = await tw.client.workflow.getHandle(workflowId).fetchHistory();
    const kinds = (history.events ?? []).map((e) => e.eventType);
    expect(kinds.length).toBeGreaterThan(5);
  });

  it('has the custom search attributes registered for operators', async () => {
    const res = await tw.client.connection.operatorService.listSearchAttributes({ namespace: 'default' });
    const names = Object.keys(res.customAttributes ?? {});
    for (const key of customSearchAttributes) expect(names).toContain(key.name);
  });
});
