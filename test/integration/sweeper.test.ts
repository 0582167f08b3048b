import { ScheduleNotFoundError, ScheduleOverlapPolicy } from '@temporalio/client';
import {
  createTestMerchant,
  startPaymentStack,
  startTestApi,
  type PaymentStack,
  type TestApi,
  type TestMerchant,
} from '../helpers/stack';
import { call, eventually } from '../helpers/http';
import { sweepOrphansWorkflow, SWEEP_SCHEDULE_ID, type SweepOrphansInput } from '../../workflows/sweepOrphans';
import { sweepOrphanPaymentsWorkflow } from '../../workflows/sweepPayments';
import { paymentWorkflowId } from '../../workflows/paymentApi';
import { ensureSchedules, SWEEP_ARGS } from '../../src/temporal/schedules';

/** The orphan sweeper: paged, past a grace age, skipping records with a workflow, each examined once. */
describe('orphan sweeper', () => {
  let stack: PaymentStack;
  let cutOff: TestApi;
  let merchant: TestMerchant;

  beforeAll(async () => {
    stack = await startPaymentStack('sweeper');
    merchant = await createTestMerchant(stack.orm, 'Sweeper merchant');
    // An API whose Temporal answers nothing: what it records has no workflow.
    cutOff = await startTestApi({
      orm: stack.orm,
      providers: stack.providers,
      temporalAddress: '127.0.0.1:9',
      settings: { taskQueue: stack.taskQueue },
    });
  });
  afterAll(async () => {
    await cutOff.close();
    await stack.close();
  });

  const orphanPayment = async (name: string) => {
    const res = await call(cutOff.baseUrl, 'POST', '/payments', merchant.auth, {
      amount: 2,
      currency: 'USD',
      externalId: `${name}-${Date.now()}`,
      customer: { email: 'c@example.com' },
    });
    expect(res.status).toBe(503);
    return (res.body.details as { payment: { id: string } }).payment.id;
  };
  const sweep = (input: Partial<SweepOrphansInput> = {}) =>
    stack.worker.client.workflow.execute(sweepOrphansWorkflow, {
      taskQueue: stack.taskQueue,
      workflowId: `sweep-test-${Date.now()}-${Math.random()}`,
      args: [{ graceSeconds: 1, pageSize: 1, maxRows: 1000, merchantId: merchant.merchantId, ...input }],
    });
  const workflowStatus = async (paymentId: string) =>
    (await stack.api.client.workflow.getHandle(paymentWorkflowId(paymentId)).describe()).status.name;

  it('pages through every orphan once, skips records with a workflow, and leaves younger ones for later', async () => {
    // A hosted payment with its workflow (it has a provider transaction): never a candidate.
    const hosted = await call(stack.api.baseUrl, 'POST', '/payments', merchant.auth, {
      amount: 2,
      currency: 'USD',
      externalId: `hosted-${Date.now()}`,
      customer: { email: 'c@example.com' },
    });
    expect(hosted.body).toMatchObject({ status: 'created', providerTransactionId: expect.any(String) });
    const orphans = [await orphanPayment('o1'), await orphanPayment('o2'), await orphanPayment('o3')];
    await new Promise((r) => setTimeout(r, 1100));

    // One row per page: three pages.
    expect(await sweep()).toEqual({ payments: 3, refunds: 0, subscriptions: 0 });
    for (const id of orphans) expect(await workflowStatus(id)).toBe('RUNNING');
    // The watermark is past them: the next sweep examines nothing.
    expect(await sweep()).toEqual({ payments: 0, refunds: 0, subscriptions: 0 });

    // Younger than the grace age: left for a later sweep (the watermark stays before it).
    const young = await orphanPayment('young');
    expect(await sweep({ graceSeconds: 60 })).toEqual({ payments: 0, refunds: 0, subscriptions: 0 });
    expect(await sweep()).toEqual({ payments: 1, refunds: 0, subscriptions: 0 });
    expect(await workflowStatus(young)).toBe('RUNNING');
  });

  it('gives a subscription committed without its workflow one: charged once, as the merchant asked', async () => {
    const created = await call(cutOff.baseUrl, 'POST', '/subscriptions', merchant.auth, {
      amount: 3,
      currency: 'USD',
      billingIntervalDays: 30,
      externalId: `orphan-sub-${Date.now()}`,
      cardToken: 'tok_success',
      customer: { email: 'c@example.com' },
    });
    // Recorded, but the workflow service never answered: a 503 that carries the subscription.
    expect(created.status).toBe(503);
    expect(created.body).toMatchObject({
      code: 'service_unavailable',
      details: { subscription: { status: 'created' } },
    });
    const id = (created.body.details as { subscription: { id: string } }).subscription.id;
    await new Promise((r) => setTimeout(r, 1100));

    expect(await sweep({ kinds: ['subscriptions'] })).toEqual({ subscriptions: 1 });
    const active = await eventually(
      () => call(stack.api.baseUrl, 'GET', `/subscriptions/${id}`, merchant.auth),
      (r) => r.body.status === 'active',
    );
    expect(active.body.latestInvoice).toMatchObject({ status: 'paid', attempts: 1 });
    const captures = await stack.ledger('capture', id, 'subscriptionId');
    expect(captures.map((c) => c.status)).toEqual(['succeeded']);
    // Examined once: the next sweep has nothing to do.
    expect(await sweep({ kinds: ['subscriptions'] })).toEqual({ subscriptions: 0 });
    await call(stack.api.baseUrl, 'DELETE', `/subscriptions/${id}?notify=false`, merchant.auth);
  });

  it("ensureSchedules updates a schedule whose definition changed, keeping an operator's pause", async () => {
    const client = stack.worker.client;
    const handle = client.schedule.getHandle(SWEEP_SCHEDULE_ID);
    await handle.delete().catch((err: unknown) => {
      if (!(err instanceof ScheduleNotFoundError)) throw err;
    });
    // An older definition, paused by an operator.
    await client.schedule.create({
      scheduleId: SWEEP_SCHEDULE_ID,
      spec: { intervals: [{ every: '5 minutes' }] },
      policies: { overlap: ScheduleOverlapPolicy.SKIP },
      state: { paused: true, note: 'operator: investigating' },
      action: {
        type: 'startWorkflow',
        workflowType: sweepOrphanPaymentsWorkflow,
        workflowId: SWEEP_SCHEDULE_ID,
        taskQueue: 'an-old-queue',
        args: [{ olderThanSeconds: 120, limit: 500 }],
      },
    });
    try {
      await ensureSchedules(client, stack.taskQueue);
      const updated = await handle.describe();
      expect(updated.action).toMatchObject({
        workflowType: 'sweepOrphansWorkflow',
        taskQueue: stack.taskQueue,
        args: [SWEEP_ARGS],
      });
      expect(updated.spec.intervals?.map((i) => i.every)).toEqual([60_000]);
      expect(updated.state).toMatchObject({ paused: true, note: 'operator: investigating' });

      // Unchanged definition: left alone (the operator's note is not touched either).
      await ensureSchedules(client, stack.taskQueue);
      expect((await handle.describe()).state).toMatchObject({ paused: true, note: 'operator: investigating' });
    } finally {
      await handle.delete();
    }
  });
});
