import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createTestMerchant, startPaymentStack, type PaymentStack, type TestMerchant } from '../helpers/stack';
import { startWorkerProcess as startWorker } from '../helpers/workerProcess';
import { call, eventually } from '../helpers/http';

/**
 * Money invariant 5 and 1: a worker process killed (SIGKILL) in the middle of a token-flow
 * payment loses nothing and captures nothing twice once another worker takes over.
 */
describe('worker killed mid-payment', () => {
  let stack: PaymentStack;
  let merchant: TestMerchant;
  let child: ChildProcess | undefined;
  let dataDir: string;

  beforeAll(async () => {
    stack = await startPaymentStack('crash', { paymentWaitMs: 3000 });
    await stack.worker.stop(); // this file's work runs on a worker process it can kill
    merchant = await createTestMerchant(stack.orm, 'Crash merchant');
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'crash-worker-'));
  });
  afterAll(async () => {
    child?.kill('SIGKILL');
    await stack.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  const startWorkerProcess = () => startWorker(stack, dataDir);

  const post = (externalId: string) =>
    call(stack.api.baseUrl, 'POST', '/payments', merchant.auth, {
      amount: 42,
      currency: 'USD',
      externalId,
      customer: { email: 'c@example.com' },
      cardToken: 'tok_success',
    });
  const get = (id: string) => call(stack.api.baseUrl, 'GET', `/payments/${id}`, merchant.auth);

  it('settles the payment exactly once after the worker is killed during the provider call', async () => {
    child = startWorkerProcess();
    // Warm-up: the worker process bundles its workflows before it polls.
    const warm = await eventually(
      () => post(`warm-${Date.now()}`),
      (r) => r.status === 200,
      60_000,
      500,
    );
    expect(warm.body).toMatchObject({ status: 'succeeded' });

    // The sandbox captures at once but holds its answer: the worker is mid-call when killed.
    await stack.sandbox('/_admin/faults', { latencyMs: 4000 });
    const externalId = `crash-${Date.now()}`;
    const pending = post(externalId);
    const ledgerHas = async () =>
      (
        (await stack.sandbox('/_admin/ledger')) as {
          entries: Array<{ type: string; metadata: Record<string, string>; idempotencyKey: string }>;
        }
      ).entries.filter((e) => e.type === 'capture');
    const before = (await ledgerHas()).length;
    await eventually(ledgerHas, (entries) => entries.length > before, 10_000, 50);
    child.kill('SIGKILL');
    const answer = await pending;
    expect(answer.status).toBe(503); // nobody answered within the wait
    const paymentId = (answer.body.details as { payment: { id: string } }).payment.id;
    expect((await get(paymentId)).body).toMatchObject({ status: 'created' });

    await stack.sandbox('/_admin/faults', {});
    await stack.restartWorker();
    const settled = await eventually(
      () => get(paymentId),
      (r) => r.body.status !== 'created',
      40_000,
      250,
    );
    expect(settled.body).toMatchObject({ status: 'succeeded', providerTransactionId: expect.stringMatching(/^txn_/) });
    const captures = (await ledgerHas()).filter((e) => e.metadata?.paymentId === paymentId);
    expect(captures).toHaveLength(1);
    // A repeat of the request returns the same payment; still one capture.
    expect((await post(externalId)).body).toMatchObject({ id: paymentId, status: 'succeeded' });
    expect((await ledgerHas()).filter((e) => e.metadata?.paymentId === paymentId)).toHaveLength(1);
  });

  it('settles a refund exactly once after the worker is killed during the provider call', async () => {
    const paid = await post(`refund-base-${Date.now()}`);
    expect(paid.body).toMatchObject({ status: 'succeeded' });
    const paymentId = paid.body.id as string;
    await stack.worker.stop();
    child = startWorkerProcess();
    await eventually(
      () => post(`warm2-${Date.now()}`),
      (r) => r.status === 200,
      60_000,
      500,
    );

    await stack.sandbox('/_admin/faults', { latencyMs: 4000 });
    const refunds = () => stack.ledger('refund', paymentId);
    const pending = call(stack.api.baseUrl, 'POST', `/payments/${paymentId}/refund`, merchant.auth, {
      externalId: `crash-refund-${Date.now()}`,
      amount: 10,
    });
    await eventually(refunds, (entries) => entries.length > 0, 10_000, 50);
    child.kill('SIGKILL');
    const answer = await pending;
    expect(answer.status).toBe(200); // no answer yet: the refund is returned in flight
    expect(answer.body).toMatchObject({ status: 'pending', paymentAmountRefunded: 0 });

    await stack.sandbox('/_admin/faults', {});
    await stack.restartWorker();
    const settled = await eventually(
      () => call(stack.api.baseUrl, 'GET', `/refunds/${answer.body.id as string}`, merchant.auth),
      (r) => r.body.status !== 'pending',
      40_000,
      250,
    );
    expect(settled.body).toMatchObject({ status: 'succeeded', paymentAmountRefunded: 10, paymentAmountRefundable: 32 });
    expect(await refunds()).toEqual([expect.objectContaining({ status: 'succeeded' })]);
    expect((await get(paymentId)).body).toMatchObject({ status: 'partially_refunded', amountRefunded: 10 });
  });
});
