import { Client, Connection } from '@temporalio/client';
import { NativeConnection, Worker } from '@temporalio/worker';
import { createActivities, type Activities } from '../../activities';
import { ACTIVITY_INTERCEPTORS, createWorkflowStarters } from '../../src/worker';
import { clientInterceptors } from '../../src/temporal/connection';
import { requestIdClientOptions } from '../../src/temporal/requestId';
import { stackPayloads, testLogger, type PaymentStack } from './stack';
import { testStack } from '../setup/stackInfo';

export interface OverriddenWorker {
  stop(): Promise<void>;
}

/**
 * The product's worker on a payment stack's main task queue (its activities, built from the
 * stack's database and providers, its activity interceptors, the run's workflow bundle), with the
 * activities `override` returns in place of the real ones (it gets the real ones to call). For a
 * fault no provider or database answer can make, such as a bug in an activity (decision 0077).
 * Stop the stack's own worker first (`stack.worker.stop()`), or both poll the queue.
 */
export async function startWorkerWithOverrides(
  stack: PaymentStack,
  override: (real: Activities) => Partial<Activities>,
): Promise<OverriddenWorker> {
  const connection = await NativeConnection.connect({ address: testStack().temporalAddress });
  const clientConnection = await Connection.connect({
    address: testStack().temporalAddress,
    interceptors: clientInterceptors(),
  });
  const client = new Client({
    connection: clientConnection,
    namespace: 'default',
    ...requestIdClientOptions,
    ...stackPayloads(),
  });
  const real = createActivities({
    orm: stack.orm,
    logger: testLogger,
    providers: stack.providers,
    publicBaseUrl: stack.api.baseUrl,
    starters: createWorkflowStarters({ client, taskQueue: stack.taskQueue, callbackRetryInitialSeconds: 1 }),
  });
  const worker = await Worker.create({
    connection,
    namespace: 'default',
    taskQueue: stack.taskQueue,
    workflowBundle: { codePath: testStack().workflowBundlePath },
    activities: { ...real, ...override(real) },
    interceptors: { activity: ACTIVITY_INTERCEPTORS },
    // The stack's payloads are encrypted (decision 0078).
    ...stackPayloads(),
  });
  const running = worker.run();
  let stopped: Promise<void> | undefined;
  return {
    stop: () =>
      (stopped ??= (async () => {
        if (worker.getState() === 'RUNNING') worker.shutdown();
        await running;
        await clientConnection.close();
        await connection.close();
      })()),
  };
}
