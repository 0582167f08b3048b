import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import {
  createTestMerchant,
  startPaymentStack,
  testPayloads,
  type PaymentStack,
  type TestMerchant,
} from '../helpers/stack';
import { startWorkerProcess } from '../helpers/workerProcess';
import { call, eventually } from '../helpers/http';
import { testStack } from '../setup/stackInfo';

/**
 * The workflow stack-trace query of a worker process started with the product's Node flags
 * (src/main/workflowThreads.ts): refused by default, answered with WORKFLOW_STACK_TRACES=true.
 */
describe('workflow stack traces (WORKFLOW_STACK_TRACES)', () => {
  let stack: PaymentStack;
  let merchant: TestMerchant;
  let connection: Connection;
  let client: Client;
  let child: ChildProcess | undefined;
  let dataDir: string;

  beforeAll(async () => {
    stack = await startPaymentStack('stacktraces');
    await stack.worker.stop(); // this file's workflows run on worker processes
    merchant = await createTestMerchant(stack.orm, 'Stack trace merchant');
    connection = await Connection.connect({ address: testStack().temporalAddress });
    client = new Client({ connection, namespace: 'default', ...testPayloads });
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'stacktrace-worker-'));
  });
  afterAll(async () => {
    child?.kill('SIGKILL');
    await connection.close();
    await stack.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  /** A worker process on the run's built bundle, replacing the one before. */
  async function startWorker(env: NodeJS.ProcessEnv): Promise<void> {
    if (child) {
      const exited = new Promise((resolve) => child!.once('exit', resolve));
      child.kill('SIGKILL');
      await exited;
    }
    child = startWorkerProcess(stack, dataDir, { WORKFLOW_BUNDLE_PATH: testStack().workflowBundlePath, ...env });
  }

  /** A hosted-page payment: its workflow stays open, waiting for the customer. */
  async function openPayment(externalId: string): Promise<string> {
    const created = await eventually(
      () =>
        call(stack.api.baseUrl, 'POST', '/payments', merchant.auth, {
          amount: 12.5,
          currency: 'USD',
          externalId,
          customer: { email: 'c@example.com' },
        }),
      (r) => r.status === 200 || r.status === 201,
      60_000,
      500,
    );
    expect(created.body).toMatchObject({ status: 'created' });
    return (created.body as { id: string }).id;
  }

  const stackTrace = (paymentId: string) =>
    client.workflow.getHandle(`payment-${paymentId}`).query<string>('__stack_trace');

  /** Event types of the payment's history: a workflow task the worker failed would be there. */
  async function eventTypes(paymentId: string) {
    const history = await client.workflow.getHandle(`payment-${paymentId}`).fetchHistory();
    return (history.events ?? []).map((e) => e.eventType);
  }

  it('refuses the query by default', async () => {
    await startWorker({});
    const id = await openPayment(`st-off-${Date.now()}`);
    await expect(stackTrace(id)).rejects.toThrow('Workflow stack traces are not enabled on this worker');
    // Only the query is refused: the workflow's own tasks ran (Node's async hooks still work).
    expect(await eventTypes(id)).not.toContain(temporal.api.enums.v1.EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED);
  });

  it('answers it with WORKFLOW_STACK_TRACES=true: where the payment waits', async () => {
    await startWorker({ WORKFLOW_STACK_TRACES: 'true' });
    const id = await openPayment(`st-on-${Date.now()}`);
    const trace = await stackTrace(id);
    // Source-mapped: the workflow's own step and file (the payment's wait, workflows/payment/waits.ts).
    expect(trace).toContain('waitForRequest');
    expect(trace).toContain('workflows/payment/waits.ts');
  });
});
