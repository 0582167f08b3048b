import path from 'node:path';
import { NativeConnection, Worker } from '@temporalio/worker';
import { call, eventually } from '../helpers/http';
import {
  createTestMerchant,
  startPaymentStack,
  startTestApi,
  testPayloads,
  type PaymentStack,
  type TestMerchant,
} from '../helpers/stack';
import { startTcpProxy } from '../helpers/tcpProxy';
import { sleep, subscriptionClient, succeededByInvoice } from '../helpers/subscriptions';
import { testStack } from '../setup/stackInfo';
import { subscriptionTaskQueue } from '../../src/temporal/taskQueues';
import { markInvoiceChargeSent } from '../../src/domain/subscriptions';
import { sweepOrphansWorkflow } from '../../workflows/sweepOrphans';
import { subscriptionWorkflowId } from '../../workflows/subscriptionApi';

/**
 * A cancel cannot be lost (issue 44 item 4, decision 0076). A DELETE records its intent in
 * PostgreSQL before it asks the subscription's workflow; opening and charging an invoice refuse
 * under the subscription's row lock once it is set. What the merchant observes: the DELETE's
 * answer, the sandbox ledger (GET /_admin/ledger), the subscription's end state and emails.
 * A one-second billing day.
 */
describe('a cancel cannot be lost', () => {
  const DAY_MS = 1000;
  let stack: PaymentStack;
  let merchant: TestMerchant;
  let subs: ReturnType<typeof subscriptionClient>;

  beforeAll(async () => {
    stack = await startPaymentStack('cancelintent', { billingDaySeconds: DAY_MS / 1000 });
    merchant = await createTestMerchant(stack.orm, 'Cancel intent merchant');
    subs = subscriptionClient(stack, merchant);
  });
  afterAll(() => stack.close());

  /** A build that fails every subscription workflow task, polling the subscription queue alone. */
  async function startBadDeploy(): Promise<{ stop: () => Promise<void> }> {
    const connection = await NativeConnection.connect({ address: testStack().temporalAddress });
    const worker = await Worker.create({
      connection,
      taskQueue: subscriptionTaskQueue(stack.taskQueue),
      workflowsPath: path.resolve(__dirname, '../fixtures/cancel-intent'),
      identity: 'bad-deploy',
      // It reads the stack's encrypted payloads: its own code is what fails (decision 0078).
      ...testPayloads,
    });
    const done = worker.run();
    return {
      stop: async () => {
        worker.shutdown();
        await done;
        await connection.close();
      },
    };
  }

  it('a DELETE while workflow tasks fail: answered accepted, never charged after it, cancelled once a good build runs', async () => {
    const created = await subs.create({ cardToken: 'tok_success', billingIntervalDays: 6 });
    expect(created.body.status).toBe('active');
    const id = created.body.id as string;
    const renewsAt = Date.parse(created.body.currentPeriodEnd as string);

    // The bad deploy replaces the good build.
    await stack.worker.stop();
    const bad = await startBadDeploy();
    let restarted = false;
    let deleted: Awaited<ReturnType<typeof subs.cancel>>;
    try {
      deleted = await subs.cancel(id);
      expect(deleted.status).toBe(503);
      // The renewal falls due while no build can run the workflow.
      await sleep(Math.max(0, renewsAt - Date.now()) + 1_500);
      await bad.stop();
      await stack.restartWorker();
      restarted = true;
    } finally {
      if (!restarted) {
        await bad.stop().catch(() => undefined);
        await stack.restartWorker();
      }
    }

    const cancelled = await subs.until(id, (s) => s.status === 'cancelled', 60_000);
    expect(cancelled).toMatchObject({ cancellationReason: 'merchant_request' });
    // Nothing reached the provider after the first period's charge.
    await sleep(2 * DAY_MS);
    const captures = await subs.captures(id);
    expect(captures.filter((c) => c.status === 'succeeded')).toHaveLength(1);
    const invoices = await subs.invoices(id);
    expect(invoices.filter((i) => i.status === 'paid')).toHaveLength(1);
    // The cancellation's email, once.
    expect(subs.mail(id).filter((e) => /cancel/i.test(e.subject))).toHaveLength(1);
    // What the DELETE answered was true: accepted, and it took effect.
    expect(deleted.body).toMatchObject({
      code: 'service_unavailable',
      details: { cancellation: 'accepted', subscription: { id, status: 'active' } },
    });
  }, 120_000);

  it('a DELETE whose Update never reaches Temporal: the next renewal is not charged, the subscription ends cancelled', async () => {
    const created = await subs.create({ cardToken: 'tok_success', billingIntervalDays: 4 });
    expect(created.body.status).toBe('active');
    const id = created.body.id as string;
    // A second API (same database and task queue) whose Temporal connection is cut.
    const [host, port] = testStack().temporalAddress.split(':');
    const proxy = await startTcpProxy(host!, Number(port));
    const cutApi = await startTestApi({
      orm: stack.orm,
      providers: stack.providers,
      temporalAddress: `127.0.0.1:${proxy.port}`,
      settings: { taskQueue: stack.taskQueue, billingDaySeconds: DAY_MS / 1000, paymentWaitMs: 2000 },
    });
    try {
      await proxy.cut();
      const deleted = await call(cutApi.baseUrl, 'DELETE', `/subscriptions/${id}`, merchant.auth);
      expect(deleted.status).toBe(503);
      // The renewal falls due: refused under the row's lock, the cancellation applied instead.
      const cancelled = await subs.until(id, (s) => s.status === 'cancelled', 15_000);
      expect(cancelled).toMatchObject({ cancellationReason: 'merchant_request' });
      await sleep(2 * DAY_MS);
      expect(succeededByInvoice(await subs.captures(id)).size).toBe(1);
      expect((await subs.invoices(id)).filter((i) => i.status === 'paid')).toHaveLength(1);
      expect(subs.mail(id).filter((e) => /cancel/i.test(e.subject))).toHaveLength(1);
      expect(deleted.body).toMatchObject({ details: { cancellation: 'accepted', subscription: { id } } });
    } finally {
      await proxy.close();
      await cutApi.close();
    }
  }, 60_000);

  it("a DELETE recorded while the run had ended: the sweeper's revived run cancels first, nothing charged", async () => {
    const created = await subs.create({ cardToken: 'tok_success', billingIntervalDays: 30 });
    expect(created.body.status).toBe('active');
    const id = created.body.id as string;
    const handle = stack.api.client.workflow.getHandle(subscriptionWorkflowId(id));
    await handle.terminate('test: the workflow ended under a live record');
    const [host, port] = testStack().temporalAddress.split(':');
    const proxy = await startTcpProxy(host!, Number(port));
    const cutApi = await startTestApi({
      orm: stack.orm,
      providers: stack.providers,
      temporalAddress: `127.0.0.1:${proxy.port}`,
      settings: { taskQueue: stack.taskQueue, billingDaySeconds: DAY_MS / 1000, paymentWaitMs: 2000 },
    });
    try {
      await proxy.cut();
      const deleted = await call(cutApi.baseUrl, 'DELETE', `/subscriptions/${id}?reason=moved`, merchant.auth);
      expect(deleted.status).toBe(503);
      expect(deleted.body).toMatchObject({ details: { cancellation: 'accepted', subscription: { id } } });
    } finally {
      await proxy.close();
      await cutApi.close();
    }
    // The live sweep (decisions 0059, 0061) revives the run with the recorded cancel first.
    const swept = await stack.worker.client.workflow.execute(sweepOrphansWorkflow, {
      taskQueue: stack.taskQueue,
      workflowId: `sweep-live-cancel-intent-${Date.now()}`,
      args: [
        {
          graceSeconds: 0,
          pageSize: 10,
          maxRows: 1000,
          merchantId: merchant.merchantId,
          kinds: [],
          liveKinds: ['subscriptions'],
        },
      ],
    });
    expect(swept.revived).toEqual({ subscriptions: 1 });
    const cancelled = await subs.until(id, (s) => s.status === 'cancelled', 15_000);
    expect(cancelled).toMatchObject({ cancellationReason: 'moved' });
    expect(succeededByInvoice(await subs.captures(id)).size).toBe(1);
    // The cancellation's email, sent by the revived run in the background.
    await eventually(
      async () => subs.mail(id).filter((e) => /cancel/i.test(e.subject)).length,
      (n) => n === 1,
      10_000,
    );
  }, 60_000);

  it('a DELETE racing renewal charges: each invoice either paid with its one capture before the cancel, or never charged', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 6; i++) {
      const created = await subs.create({ cardToken: 'tok_success', billingIntervalDays: 2 });
      expect(created.body.status).toBe('active');
      ids.push(created.body.id as string);
    }
    // Each DELETE lands around its subscription's renewal, a little before or after it.
    await Promise.all(
      ids.map(async (id, i) => {
        const s = (await subs.get(id)).body;
        await sleep(Math.max(0, Date.parse(s.currentPeriodEnd as string) - Date.now() + (i - 3) * 40));
        const deleted = await subs.cancel(id);
        expect(deleted.status).toBe(200);
        expect(deleted.body.status).toBe('cancelled');
      }),
    );
    await sleep(3 * DAY_MS);
    for (const id of ids) {
      const after = (await subs.get(id)).body;
      expect(after.status).toBe('cancelled');
      const cancelledAt = Date.parse(after.cancelledAt as string);
      const captured = succeededByInvoice(await subs.captures(id));
      for (const invoice of await subs.invoices(id)) {
        const count = captured.get(invoice.id) ?? 0;
        if (invoice.status === 'paid') {
          expect(count).toBe(1);
          expect(invoice.paidAt!.getTime()).toBeLessThanOrEqual(cancelledAt);
        } else {
          expect(count).toBe(0);
        }
      }
      for (const invoiceId of captured.keys()) {
        expect((await subs.invoices(id)).find((i) => i.id === invoiceId)?.status).toBe('paid');
      }
    }
  }, 120_000);

  it('at the lock: a charge mark waiting on a DELETE being recorded is refused; one made before it stands', async () => {
    // past_due: the renewal declined, its invoice open, its next attempt a month away.
    const created = await subs.create({
      cardToken: 'tok_renewal_insufficient_funds',
      billingIntervalDays: 2,
      retryScheduleDays: [30],
    });
    const id = created.body.id as string;
    const pastDue = await subs.until(id, (s) => s.status === 'past_due', 15_000);
    const invoiceId = pastDue.latestInvoice.id as string;

    // A DELETE's intent being written (its transaction open, the row locked): the mark waits,
    // then reads the intent and refuses; nothing is marked sent.
    let mark: ReturnType<typeof markInvoiceChargeSent> | undefined;
    await stack.orm.em.fork().transactional(async (tx) => {
      await tx.execute(`update subscriptions set cancel_requested_at = now() where id = ?`, [id]);
      mark = markInvoiceChargeSent(stack.orm.em.fork(), invoiceId);
      let settled = false;
      void mark.then(() => (settled = true));
      await sleep(300);
      expect(settled).toBe(false);
    });
    expect(await mark).toEqual({ kind: 'cancel_requested' });
    const [invoice] = (await subs.invoices(id)).filter((i) => i.id === invoiceId);
    expect(invoice!.providerCallSentAt).toBeNull();

    // A call marked sent before the intent (a retried attempt) is never refused: it is asked again.
    await stack.orm.em
      .getConnection()
      .execute(`update subscriptions set cancel_requested_at = null where id = ?`, [id]);
    expect(await markInvoiceChargeSent(stack.orm.em.fork(), invoiceId)).toEqual({ kind: 'marked', sentBefore: false });
    await stack.orm.em
      .getConnection()
      .execute(`update subscriptions set cancel_requested_at = now() where id = ?`, [id]);
    expect(await markInvoiceChargeSent(stack.orm.em.fork(), invoiceId)).toEqual({ kind: 'marked', sentBefore: true });
    await stack.orm.em
      .getConnection()
      .execute(`update invoices set provider_call_sent_at = null where id = ?`, [invoiceId]);
    await subs.cancel(id);
  }, 60_000);
});
