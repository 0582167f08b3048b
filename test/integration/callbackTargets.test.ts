import { paymentRow } from '../helpers/records';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { MikroORM } from '@mikro-orm/postgresql';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection, type Worker } from '@temporalio/worker';
import { createTestMerchant, openTestOrm, testLogger, testProviders, uniqueTaskQueue } from '../helpers/stack';
import { startCallbackReceiver } from '../helpers/callbackReceiver';
import { testStack } from '../setup/stackInfo';
import { createWorkers } from '../../src/worker';
import { recordEvent } from '../../src/domain/events';
import { Merchant, MerchantEvent, type KeyEnvironment } from '../../src/db/entities';
import { merchantEventsWorkflow } from '../../workflows/merchantEvents';

/**
 * PRODUCT.md, "Production profile": callback URLs are checked when delivered, after DNS.
 * Real workers deliver through the real outbox workflow to real HTTP servers on loopback; the
 * records are written to the database as the money paths leave them.
 */
describe('callback targets, checked at delivery', () => {
  let orm: MikroORM;
  let merchantId: string;
  let receiver: Awaited<ReturnType<typeof startCallbackReceiver>>;
  const workers: Array<{ worker: Worker; running: Promise<void>; close(): Promise<void> }> = [];
  let client: Client;
  let clientConnection: Connection;
  const queues = { development: uniqueTaskQueue('callbacks-dev'), production: uniqueTaskQueue('callbacks-prod') };

  async function startWorker(taskQueue: string, privateTestCallbacks: boolean): Promise<void> {
    const connection = await NativeConnection.connect({ address: testStack().temporalAddress });
    const [worker] = await createWorkers({
      connection,
      namespace: 'default',
      taskQueue,
      orm,
      logger: testLogger,
      providers: testProviders(orm),
      publicBaseUrl: 'http://127.0.0.1:9',
      client,
      callbackRetryInitialSeconds: 1,
      privateTestCallbacks,
      workflowBundle: { codePath: testStack().workflowBundlePath },
    });
    if (!worker) throw new Error('no worker created');
    const running = worker.run();
    workers.push({
      worker,
      running,
      close: async () => {
        worker.shutdown();
        await running.catch(() => undefined);
        await connection.close();
      },
    });
  }

  /** A payment of the environment with one undelivered event for callbackUrl. */
  async function paymentWithEvent(environment: KeyEnvironment, callbackUrl: string): Promise<string> {
    const em = orm.em.fork();
    const merchant = em.getReference(Merchant, merchantId);
    const payment = paymentRow(em, merchantId, { environment, status: 'succeeded', callbackUrl });
    recordEvent(em, {
      merchant,
      type: 'payment.succeeded',
      resourceId: payment.id,
      dedupeKey: `${payment.id}:payment.succeeded`,
      callbackUrl,
      environment,
      data: { id: payment.id, environment },
    });
    await em.flush();
    return payment.id;
  }

  /** Runs the outbox workflow for the payment's event to its end; answers the event row. */
  async function deliver(paymentId: string, taskQueue: string): Promise<MerchantEvent> {
    const { id } = await orm.em.fork().findOneOrFail(MerchantEvent, { resourceId: paymentId });
    await client.workflow.execute(merchantEventsWorkflow, {
      taskQueue,
      workflowId: `deliver-${paymentId}`,
      args: [{ eventIds: [id], callbackRetryInitialSeconds: 1 }],
      workflowExecutionTimeout: '60 seconds',
    });
    return orm.em.fork().findOneOrFail(MerchantEvent, { id });
  }

  beforeAll(async () => {
    orm = await openTestOrm();
    merchantId = (await createTestMerchant(orm, 'Callback targets merchant')).merchantId;
    receiver = await startCallbackReceiver();
    clientConnection = await Connection.connect({ address: testStack().temporalAddress });
    client = new Client({ connection: clientConnection, namespace: 'default' });
    await startWorker(queues.development, true);
    await startWorker(queues.production, false);
  });
  afterAll(async () => {
    for (const w of workers) await w.close();
    await clientConnection.close();
    await receiver.close();
    await orm.close();
  });

  it('delivers a test-environment callback to loopback outside production', async () => {
    const paymentId = await paymentWithEvent('test', receiver.url);
    const event = await deliver(paymentId, queues.development);
    expect(event.deliveredAt).not.toBeNull();
    expect(receiver.received.map((r) => r.json.data.id)).toContain(paymentId);
  });

  it.each([
    ['a live callback to 127.0.0.1', 'live', 'development', (port: number) => `http://127.0.0.1:${port}/cb`],
    [
      'a live callback to a name resolving to loopback',
      'live',
      'development',
      (port: number) => `http://localhost:${port}/cb`,
    ],
    [
      'a live callback to an IPv4-mapped IPv6 address',
      'live',
      'development',
      (port: number) => `http://[::ffff:127.0.0.1]:${port}/cb`,
    ],
    ['a live callback to the metadata address', 'live', 'development', () => 'http://169.254.169.254/latest/meta-data'],
    [
      'a test callback to loopback in production',
      'test',
      'production',
      (port: number) => `http://127.0.0.1:${port}/cb`,
    ],
  ] as const)('refuses %s: recorded, never sent, not retried', async (_name, environment, mode, url) => {
    const port = Number(new URL(receiver.url).port);
    const before = receiver.received.length;
    const paymentId = await paymentWithEvent(environment, url(port));
    const started = Date.now();
    const event = await deliver(paymentId, queues[mode]);
    expect(event.deliveredAt).toBeNull();
    expect(event.attempts).toBe(1); // ended at once, not retried for three days
    expect(event.lastError).toMatch(/^refused: .* \((loopback|ipv4_mapped|link_local)\)$/);
    expect(Date.now() - started).toBeLessThan(15_000);
    expect(receiver.received.length).toBe(before);
  });

  it('never reads the response body: an endless answer does not hold the delivery', async () => {
    const endless = http.createServer((req, res) => {
      req.resume();
      res.writeHead(200, { 'content-type': 'application/octet-stream' });
      const chunk = Buffer.alloc(64 * 1024);
      const pump = () => {
        while (res.write(chunk)) {
          /* keep the pipe full */
        }
      };
      res.on('drain', pump);
      pump();
    });
    await new Promise<void>((resolve) => endless.listen(0, '127.0.0.1', resolve));
    try {
      const port = (endless.address() as AddressInfo).port;
      const paymentId = await paymentWithEvent('test', `http://127.0.0.1:${port}/cb`);
      const started = Date.now();
      const event = await deliver(paymentId, queues.development);
      expect(event.deliveredAt).not.toBeNull();
      expect(event.lastError).toBeNull();
      // The callback timeout is 10 s: reading the body would end there, as a failure or late.
      expect(Date.now() - started).toBeLessThan(5_000);
    } finally {
      endless.closeAllConnections();
      await new Promise((resolve) => endless.close(resolve));
    }
  });
});
