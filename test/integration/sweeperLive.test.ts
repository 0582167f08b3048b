import { createTestMerchant, startPaymentStack, type PaymentStack, type TestMerchant } from '../helpers/stack';
import { call, eventually } from '../helpers/http';
import { sweepOrphansWorkflow, type LiveKind, type SweepResult } from '../../workflows/sweepOrphans';
import { paymentWorkflowId } from '../../workflows/paymentApi';
import { refundWorkflowId } from '../../workflows/refundApi';
import { subscriptionWorkflowId } from '../../workflows/subscriptionApi';
import { disputeWorkflowId } from '../../workflows/disputeApi';
import { SWEEP_ARGS } from '../../src/temporal/schedules';

/**
 * A workflow that did end can be started again for its record (issue 42 item 6; decision 0059):
 * the sweeper finds every live record (a payment not final, a refund pending, a subscription not
 * cancelled, a dispute open) without a running
 * workflow and starts one, which takes the record up where it is; the record then settles.
 * Workflows are ended for real (terminated through the Temporal client, as an operator would).
 */
describe('the sweeper revives live records whose workflow ended', () => {
  let stack: PaymentStack;
  let merchant: TestMerchant;
  let seq = 0;
  const ext = (p: string) => `${p}-${Date.now()}-${++seq}`;
  const get = (path: string) => call(stack.api.baseUrl, 'GET', path, merchant.auth);
  const status = async (workflowId: string) =>
    (await stack.api.client.workflow.getHandle(workflowId).describe()).status.name;
  const terminate = async (workflowId: string) => {
    await stack.api.client.workflow.getHandle(workflowId).terminate('test: the workflow ended under a live record');
    expect(await status(workflowId)).toBe('TERMINATED');
  };
  /** Only the live pass, over this merchant's records. */
  const sweepLive = (liveKinds: LiveKind[]): Promise<SweepResult> =>
    stack.worker.client.workflow.execute(sweepOrphansWorkflow, {
      taskQueue: stack.taskQueue,
      workflowId: `sweep-live-test-${Date.now()}-${Math.random()}`,
      args: [{ graceSeconds: 0, pageSize: 2, maxRows: 1000, merchantId: merchant.merchantId, kinds: [], liveKinds }],
    });

  beforeAll(async () => {
    stack = await startPaymentStack('sweeper-live');
    merchant = await createTestMerchant(stack.orm, 'Sweeper live merchant');
  });
  afterEach(async () => {
    await stack.sandbox('/_admin/faults', {});
  });
  afterAll(async () => {
    await stack.close();
  });

  it('the schedule sweeps every live kind', () => {
    expect(SWEEP_ARGS.liveKinds).toEqual(['payments', 'refunds', 'subscriptions', 'disputes']);
  });

  it('a hosted payment whose workflow was terminated gets a new run; the customer pays; captured once', async () => {
    const res = await call(stack.api.baseUrl, 'POST', '/payments', merchant.auth, {
      amount: 7,
      currency: 'USD',
      externalId: ext('hosted'),
      customer: { email: 'c@example.com' },
    });
    expect(res.body).toMatchObject({ status: 'created', redirectUrl: expect.any(String) });
    const id = res.body.id as string;
    const workflowId = paymentWorkflowId(id);
    await terminate(workflowId);

    expect((await sweepLive(['payments'])).revived).toEqual({ payments: 1 });
    expect(await status(workflowId)).toBe('RUNNING');
    // A running workflow is left alone.
    expect((await sweepLive(['payments'])).revived).toEqual({ payments: 0 });

    // The new run asked the provider and waits for the customer as the first did.
    expect((await fetch(`${res.body.redirectUrl as string}/pay`, { method: 'POST' })).ok).toBe(true);
    const settled = await eventually(
      () => get(`/payments/${id}`),
      (r) => r.body.status !== 'created',
      20_000,
      250,
    );
    expect(settled.body.status).toBe('succeeded');
    expect((await stack.ledger('capture', id)).map((e) => e.status)).toEqual(['succeeded']);
    // Settled: no longer live, never started again.
    await eventually(
      () => status(workflowId),
      (s) => s === 'COMPLETED',
      20_000,
      250,
    );
    expect((await sweepLive(['payments'])).revived).toEqual({ payments: 0 });
  }, 60_000);

  it('a pending refund whose workflow was terminated gets a new run, which settles it; refunded once', async () => {
    const paid = await call(stack.api.baseUrl, 'POST', '/payments', merchant.auth, {
      amount: 9,
      currency: 'USD',
      externalId: ext('paid'),
      customer: { email: 'c@example.com' },
      cardToken: 'tok_success',
    });
    expect(paid.body.status).toBe('succeeded');
    const paymentId = paid.body.id as string;
    // Performed at the provider, answered with a status nobody knows: the refund stays pending.
    await stack.sandbox('/_admin/faults', { refunds: 'unknown_status' });
    const res = await call(stack.api.baseUrl, 'POST', `/payments/${paymentId}/refund`, merchant.auth, {
      externalId: ext('rf'),
      amount: 4,
    });
    const refundId = (res.body.details as { refund: { id: string } }).refund.id;
    expect((await get(`/refunds/${refundId}`)).body.status).toBe('pending');
    const workflowId = refundWorkflowId(refundId);
    await terminate(workflowId);
    await stack.sandbox('/_admin/faults', {});
    // Nothing moves it without a workflow.
    await new Promise((r) => setTimeout(r, 1000));
    expect((await get(`/refunds/${refundId}`)).body.status).toBe('pending');

    expect((await sweepLive(['payments', 'refunds'])).revived).toEqual({ payments: 0, refunds: 1 });
    const settled = await eventually(
      () => get(`/refunds/${refundId}`),
      (r) => r.body.status !== 'pending',
      20_000,
      250,
    );
    expect(settled.body.status).toBe('succeeded');
    expect((await stack.ledger('refund', paymentId)).map((e) => [e.status, e.amount])).toEqual([['succeeded', 4]]);
    expect((await sweepLive(['refunds'])).revived).toEqual({ refunds: 0 });
  }, 60_000);

  it('an active subscription whose workflow was terminated gets a new run: it cancels, charged once', async () => {
    const created = await call(stack.api.baseUrl, 'POST', '/subscriptions', merchant.auth, {
      amount: 3,
      currency: 'USD',
      billingIntervalDays: 30,
      externalId: ext('sub'),
      cardToken: 'tok_success',
      customer: { email: 'c@example.com' },
    });
    expect(created.body).toMatchObject({ status: 'active', latestInvoice: { status: 'paid' } });
    const id = created.body.id as string;
    const workflowId = subscriptionWorkflowId(id);
    await terminate(workflowId);

    expect((await sweepLive(['subscriptions'])).revived).toEqual({ subscriptions: 1 });
    expect(await status(workflowId)).toBe('RUNNING');
    expect((await sweepLive(['subscriptions'])).revived).toEqual({ subscriptions: 0 });
    // The new run waits for the next period (not charging the paid one again) and takes the cancel.
    const cancelled = await call(stack.api.baseUrl, 'DELETE', `/subscriptions/${id}?notify=false`, merchant.auth);
    expect(cancelled.status).toBe(200);
    expect(cancelled.body.status).toBe('cancelled');
    expect((await stack.ledger('capture', id, 'subscriptionId')).map((c) => c.status)).toEqual(['succeeded']);
    // Cancelled: no longer live, never started again.
    expect((await sweepLive(['subscriptions'])).revived).toEqual({ subscriptions: 0 });
  }, 60_000);

  it('an open dispute whose workflow was terminated gets a new run, which follows the processor to its decision', async () => {
    const paid = await call(stack.api.baseUrl, 'POST', '/payments', merchant.auth, {
      amount: 11,
      currency: 'USD',
      externalId: ext('disputed'),
      customer: { email: 'c@example.com' },
      cardToken: 'tok_dispute',
    });
    expect(paid.body.status).toBe('succeeded');
    const paymentId = paid.body.id as string;
    const listed = await eventually(
      () => get(`/disputes?paymentId=${paymentId}`),
      (r) => (r.body.disputes as unknown[] | undefined)?.length === 1,
      20_000,
      250,
    );
    const dispute = (listed.body.disputes as Array<{ id: string; providerDisputeId: string; status: string }>)[0]!;
    expect(dispute.status).toBe('needs_response');
    const workflowId = disputeWorkflowId(dispute.id);
    await eventually(
      () => status(workflowId).catch(() => 'NONE'),
      (s) => s === 'RUNNING',
      10_000,
      250,
    );
    await terminate(workflowId);

    expect((await sweepLive(['disputes'])).revived).toEqual({ disputes: 1 });
    expect(await status(workflowId)).toBe('RUNNING');
    expect((await sweepLive(['disputes'])).revived).toEqual({ disputes: 0 });

    await stack.sandbox(`/_admin/disputes/${dispute.providerDisputeId}/close`, { status: 'won' });
    const won = await eventually(
      () => get(`/disputes/${dispute.id}`),
      (r) => r.body.status !== 'needs_response',
      20_000,
      250,
    );
    expect(won.body.status).toBe('won');
    // The new run followed it to the decision and ended; closed disputes are not live.
    await eventually(
      () => status(workflowId),
      (s) => s === 'COMPLETED',
      20_000,
      250,
    );
    expect((await sweepLive(['disputes'])).revived).toEqual({ disputes: 0 });
    expect((await stack.ledger('capture', paymentId)).map((e) => e.status)).toEqual(['succeeded']);
  }, 60_000);
});
