import { Client, Connection } from '@temporalio/client';
import { NativeConnection, Worker } from '@temporalio/worker';
import { temporal } from '@temporalio/proto';
import { loadConfig } from '../../src/config';
import { loadWorkflowBundle } from '../../src/workflowBundle';
import { workerTaskQueues } from '../../src/temporal/taskQueues';
import type { Activities } from '../../activities';
import { sweepScheduleId } from '../../workflows/sweepOrphans';
import { runCli } from '../helpers/cli';
import { eventually } from '../helpers/http';
import { uniqueTaskQueue } from '../helpers/stack';
import { testStack } from '../setup/stackInfo';

/**
 * Issue 44, item 3 (decision 0083): the deploy step promotes a build (`workers:promote`) only once
 * every task queue of its roles is polled by a worker of that build, ramps it or makes it current;
 * production workers no longer promote themselves; short-lived types run PINNED on versioned workers
 * and unannotated on unversioned ones.
 */
describe('promoting a worker build', () => {
  const taskQueue = uniqueTaskQueue('promote');
  const deploymentName = `test-promote-${process.pid}-${Date.now()}`;
  let connection: Connection;
  let client: Client;
  let workerConnection: NativeConnection;
  const running: Array<{ worker: Worker; done: Promise<void> }> = [];
  const buildId = loadWorkflowBundle(testStack().workflowBundlePath).manifest.buildId;
  const probeActivities: Pick<Activities, 'probeDatabase'> = { probeDatabase: async () => 'database time' };

  beforeAll(async () => {
    connection = await Connection.connect({ address: testStack().temporalAddress });
    client = new Client({ connection });
    workerConnection = await NativeConnection.connect({ address: testStack().temporalAddress });
  });
  afterAll(async () => {
    for (const { worker } of running) if (worker.getState() === 'RUNNING') worker.shutdown();
    await Promise.all(running.map((r) => r.done));
    await workerConnection?.close();
    await connection?.close();
  });

  /** A worker of the product's bundle on one queue, versioned under this file's deployment or not. */
  async function startWorker(queue: string, versioned: boolean): Promise<void> {
    const worker = await Worker.create({
      connection: workerConnection,
      taskQueue: queue,
      activities: probeActivities,
      workflowBundle: { codePath: testStack().workflowBundlePath },
      ...(versioned
        ? {
            workerDeploymentOptions: {
              version: { deploymentName, buildId },
              useWorkerVersioning: true,
              defaultVersioningBehavior: 'AUTO_UPGRADE' as const,
            },
          }
        : {}),
    });
    running.push({ worker, done: worker.run() });
  }

  const promote = (...args: string[]) =>
    runCli(['workers:promote', ...args], {
      TEMPORAL_ADDRESS: testStack().temporalAddress,
      TEMPORAL_TASK_QUEUE: taskQueue,
      WORKER_DEPLOYMENT_NAME: deploymentName,
    });

  it('refuses while a role of the build is not polled, then ramps it, then makes it current', async () => {
    const [main, subscriptions, deliveries] = workerTaskQueues('all', taskQueue);
    await startWorker(main!, true);
    await startWorker(subscriptions!, true);

    // The delivery role has not started: promoting would strand its queue. (A worker just started
    // is seen polling a moment later: asked until the two started roles are, then the refusal
    // names the delivery queue alone.)
    const refused = await eventually(
      () => promote('--build-id', buildId),
      (r) => r.code !== 4 || (r.json.error?.missingTaskQueues as unknown[] | undefined)?.length === 1,
      15_000,
      500,
    );
    expect(refused.code).toBe(4);
    expect(refused.json).toEqual({
      error: { code: 'version_not_polled', message: expect.stringContaining(buildId), missingTaskQueues: [deliveries] },
    });
    // Only the roles named: these two are polled.
    const ramped = await promote('--build-id', buildId, '--roles', 'payments,subscriptions', '--ramp', '10');
    expect(ramped.code).toBe(0);
    expect(ramped.json).toEqual({
      promotion: {
        deploymentName,
        buildId,
        action: 'ramping',
        rampPercent: 10,
        taskQueues: [main, subscriptions],
        schedulesApplied: false,
      },
    });
    const rampInfo = (
      await connection.workflowService.describeWorkerDeployment({ namespace: 'default', deploymentName })
    ).workerDeploymentInfo?.routingConfig;
    expect(rampInfo?.rampingDeploymentVersion?.buildId).toBe(buildId);
    expect(rampInfo?.rampingVersionPercentage).toBe(10);

    await startWorker(deliveries!, true);
    // Refused (code 4) only until the delivery worker is seen polling.
    const promoted = await eventually(
      () => promote('--build-id', buildId),
      (r) => r.code !== 4,
      15_000,
      500,
    );
    expect(promoted.code).toBe(0);
    expect(promoted.json.promotion).toMatchObject({
      action: 'current',
      taskQueues: [main, subscriptions, deliveries],
      schedulesApplied: true,
    });
    // The deploy step applied the sweep schedule of this queue (workers no longer do in production).
    const schedule = client.schedule.getHandle(sweepScheduleId(taskQueue));
    expect((await schedule.describe()).action).toMatchObject({ workflowType: 'sweepOrphansWorkflow', taskQueue });
    await schedule.delete();
    const routing = (
      await connection.workflowService.describeWorkerDeployment({ namespace: 'default', deploymentName })
    ).workerDeploymentInfo?.routingConfig;
    expect(routing?.currentDeploymentVersion?.buildId).toBe(buildId);
    // Again: nothing to do.
    expect((await promote('--build-id', buildId)).json.promotion).toMatchObject({ action: 'already-current' });

    // A short-lived type runs PINNED on the versioned worker.
    const handle = await client.workflow.start('probeWorkflow', {
      taskQueue: main!,
      workflowId: `${deploymentName}-probe`,
      args: ['pinned'],
    });
    expect(await handle.result()).toMatchObject({ echo: 'pinned', databaseTime: 'database time' });
    const versioning = (await handle.describe()).raw.workflowExecutionInfo?.versioningInfo;
    expect(versioning?.behavior).toBe(temporal.api.enums.v1.VersioningBehavior.VERSIONING_BEHAVIOR_PINNED);
    expect(versioning?.deploymentVersion?.buildId).toBe(buildId);
  });

  it('runs the same type unannotated on an unversioned worker', async () => {
    const queue = uniqueTaskQueue('promote-unversioned');
    await startWorker(queue, false);
    const handle = await client.workflow.start('probeWorkflow', {
      taskQueue: queue,
      workflowId: `${deploymentName}-unversioned-probe`,
      args: ['unversioned'],
    });
    expect(await handle.result()).toMatchObject({ echo: 'unversioned' });
    const versioning = (await handle.describe()).raw.workflowExecutionInfo?.versioningInfo;
    expect(versioning?.behavior ?? 0).toBe(temporal.api.enums.v1.VersioningBehavior.VERSIONING_BEHAVIOR_UNSPECIFIED);
  });

  it('bad arguments are a usage error before Temporal is asked', async () => {
    const bad = await promote('--build-id', buildId, '--ramp', '100');
    expect(bad.code).toBe(2);
    expect(bad.json.error).toMatchObject({ code: 'usage', message: expect.stringContaining('--ramp') });
    const role = await promote('--build-id', buildId, '--roles', 'payments,billing');
    expect(role.json.error.message).toContain('unknown: billing');
  });

  it('production workers leave promotion to the deploy step; development workers promote themselves', () => {
    const base = {
      DATABASE_URL: 'postgres://u:p@db/x',
      TEMPORAL_ADDRESS: 'temporal:7233',
      PUBLIC_BASE_URL: 'https://pay.example',
    };
    expect(loadConfig({ ...base, NODE_ENV: 'development' }).WORKER_SET_CURRENT_VERSION).toBe(true);
    expect(
      loadConfig({ ...base, NODE_ENV: 'development', WORKER_SET_CURRENT_VERSION: 'false' }).WORKER_SET_CURRENT_VERSION,
    ).toBe(false);
    const production = {
      ...base,
      NODE_ENV: 'production' as const,
      SANDBOX_API_KEY: 'sk_sandbox_prod_0123456789abcdef0123456789',
      SANDBOX_WEBHOOK_SECRET: 'whsec_prod_0123456789abcdef0123456789abcd',
      SANDBOX_ADMIN_TOKEN: 'admin-token-0123456789abcdef0123456789abcd',
      CURSOR_SECRET: 'cursor-secret-0123456789abcdef0123456789',
      PROVIDER_SECRETS_KEY: Buffer.alloc(32, 7).toString('base64'),
      TEMPORAL_PAYLOAD_KEYS: `k1:${Buffer.alloc(32, 9).toString('base64')}`,
    };
    expect(loadConfig(production).WORKER_SET_CURRENT_VERSION).toBe(false);
    expect(loadConfig({ ...production, WORKER_SET_CURRENT_VERSION: 'true' }).WORKER_SET_CURRENT_VERSION).toBe(true);
  });
});
