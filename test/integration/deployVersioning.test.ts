import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection, Worker } from '@temporalio/worker';
import { temporal } from '@temporalio/proto';
import { buildWorkflowBundle, type BuiltWorkflowBundle } from '../../src/workflowBundle';
import { promoteWorkerVersion, promotionDecision } from '../../src/temporal/deploymentVersion';
import { testStack } from '../setup/stackInfo';
import { uniqueTaskQueue } from '../helpers/stack';
import { eventually } from '../helpers/http';
import type { DeployFixtureActivities } from '../fixtures/deploy-versioning/activities';

/**
 * A deploy with Worker Deployment Versioning, on the real dev server: build v1 of a workflow
 * module runs, build v2 (a change behind patched()) becomes the Current Version, the v1
 * worker goes away. A long-lived AUTO_UPGRADE workflow started on v1 finishes on v2 through
 * the patch path; a PINNED one finishes on v1 while v1 still runs.
 */
const FIXTURES = path.resolve(__dirname, '../fixtures/deploy-versioning');

describe('deploying a new workflow build', () => {
  const taskQueue = uniqueTaskQueue('deploy');
  const deploymentName = `test-deploy-${process.pid}-${Date.now()}`;
  let connection: Connection;
  let client: Client;
  let workerConnection: NativeConnection;
  const running: Array<{ worker: Worker; done: Promise<void> }> = [];
  let v1: BuiltWorkflowBundle;
  let v2: BuiltWorkflowBundle;

  beforeAll(async () => {
    const { dir, temporalAddress } = testStack();
    // Through the same function as `npm run build`: the build id is the bundle's content hash.
    const build = (v: 'v1' | 'v2') =>
      buildWorkflowBundle({ workflowsPath: path.join(FIXTURES, v), outPath: path.join(dir, `deploy-fixture-${v}.js`) });
    [v1, v2] = await Promise.all([build('v1'), build('v2')]);
    connection = await Connection.connect({ address: temporalAddress });
    client = new Client({ connection });
    workerConnection = await NativeConnection.connect({ address: temporalAddress });
  }, 120_000);

  afterAll(async () => {
    for (const { worker } of running) if (worker.getState() === 'RUNNING') worker.shutdown();
    await Promise.all(running.map((r) => r.done));
    await workerConnection?.close();
    await connection?.close();
  });

  async function startWorker(
    label: string,
    bundle: BuiltWorkflowBundle,
    { queue = taskQueue, deployment = deploymentName, versioned = true } = {},
  ): Promise<Worker> {
    const activities: DeployFixtureActivities = { workerLabel: async () => label };
    const worker = await Worker.create({
      connection: workerConnection,
      taskQueue: queue,
      activities,
      workflowBundle: { codePath: bundle.codePath },
      ...(versioned
        ? {
            workerDeploymentOptions: {
              version: { deploymentName: deployment, buildId: bundle.manifest.buildId },
              useWorkerVersioning: true,
              defaultVersioningBehavior: 'AUTO_UPGRADE',
            },
          }
        : {}),
      identity: `deploy-test-${label}`,
    });
    const done = worker.run();
    running.push({ worker, done });
    return worker;
  }

  async function stopWorker(worker: Worker): Promise<void> {
    worker.shutdown();
    await running.find((r) => r.worker === worker)!.done;
  }

  const promote = (bundle: BuiltWorkflowBundle, deployment = deploymentName) =>
    promoteWorkerVersion({
      connection,
      namespace: 'default',
      deploymentName: deployment,
      buildId: bundle.manifest.buildId,
      identity: 'deploy-test',
      timeoutMs: 60_000,
    });

  const describeDeployment = async () =>
    (await connection.workflowService.describeWorkerDeployment({ namespace: 'default', deploymentName }))
      .workerDeploymentInfo;

  it('finishes a pinned workflow on v1 and an auto-upgrading one on v2 (patch path)', async () => {
    expect(v1.manifest.buildId).not.toEqual(v2.manifest.buildId);

    const workerV1 = await startWorker('worker-v1', v1);
    expect(await promote(v1)).toBe('promote');

    const upgrading = await client.workflow.start('upgradingWorkflow', {
      taskQueue,
      workflowId: `${deploymentName}-upgrading`,
    });
    const pinned = await client.workflow.start('pinnedWorkflow', { taskQueue, workflowId: `${deploymentName}-pinned` });
    for (const handle of [upgrading, pinned]) {
      // Queried until the first step (an activity on v1) is done.
      await eventually(
        () => handle.query<string[]>('steps'),
        (steps) => steps.length === 1,
        60_000,
        250,
      );
    }

    // The deploy: v2 starts beside v1 and becomes current.
    await startWorker('worker-v2', v2);
    expect(await promote(v2)).toBe('promote');
    const info = await describeDeployment();
    expect(info?.routingConfig?.currentDeploymentVersion?.buildId).toBe(v2.manifest.buildId);
    // A v1 worker restarting now must not take the deployment back.
    expect(promotionDecision(info, v1.manifest.buildId)).toBe('superseded');

    // New workflows go to v2 at once, though v1 still polls.
    const started = await client.workflow.start('pinnedWorkflow', { taskQueue, workflowId: `${deploymentName}-new` });
    await started.signal('proceed');
    expect(await started.result()).toEqual(['first step on worker-v2', 'second step, v2 code, on worker-v2']);

    // PINNED: still on v1 while v1 runs.
    const pinnedInfo = (await pinned.describe()).raw.workflowExecutionInfo?.versioningInfo;
    expect(pinnedInfo?.deploymentVersion?.buildId).toBe(v1.manifest.buildId);
    await pinned.signal('proceed');
    expect(await pinned.result()).toEqual(['first step on worker-v1', 'second step, v1 code, on worker-v1']);

    // v1 goes away; the AUTO_UPGRADE workflow goes on on v2, through v2's patched() branch.
    await stopWorker(workerV1);
    await upgrading.signal('proceed');
    expect(await upgrading.result()).toEqual(['first step on worker-v1', 'second step, v2 code, on worker-v2']);

    const described = (await upgrading.describe()).raw.workflowExecutionInfo?.versioningInfo;
    expect(described?.deploymentVersion?.buildId).toBe(v2.manifest.buildId);
    // Not annotated in code: the worker's default behaviour.
    expect(described?.behavior).toBe(temporal.api.enums.v1.VersioningBehavior.VERSIONING_BEHAVIOR_AUTO_UPGRADE);
  }, 180_000);

  it('moves workflows started by unversioned workers onto the first current version', async () => {
    // The first versioned deploy of a running system: its workflows were started unversioned.
    const queue = uniqueTaskQueue('deploy-first');
    const deployment = `${deploymentName}-first`;
    const unversioned = await startWorker('worker-unversioned', v1, { queue, versioned: false });
    const handle = await client.workflow.start('upgradingWorkflow', { taskQueue: queue, workflowId: deployment });
    await eventually(
      () => handle.query<string[]>('steps'),
      (steps) => steps.length === 1,
      60_000,
      250,
    );

    await startWorker('worker-v2', v2, { queue, deployment });
    expect(await promote(v2, deployment)).toBe('promote');
    await stopWorker(unversioned);
    await handle.signal('proceed');
    expect(await handle.result()).toEqual(['first step on worker-unversioned', 'second step, v2 code, on worker-v2']);
  }, 180_000);
});
