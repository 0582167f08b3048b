import { createTestMerchant, startPaymentStack, type PaymentStack, type TestMerchant } from '../helpers/stack';
import { call, eventually } from '../helpers/http';
import { paymentWorkflowId } from '../../workflows/paymentApi';
import { refundWorkflowId } from '../../workflows/refundApi';
import { disputeWorkflowId } from '../../workflows/disputeApi';
import { signWebhook } from '../../dev/sandbox/webhooks';
import { SANDBOX_WEBHOOK_SECRET } from '../helpers/stack';
import { StuckKey } from '../../workflows/searchAttributes';
import { STUCK_WORKFLOW_TYPES, stuckQuery } from '../../src/metrics/stuckWorkflows';

/**
 * Never fail closed (issue 42 item 6; decision 0059): a provider answering a well-formed status
 * nobody knows (the sandbox's `unknown_status` faults, status `on_hold`) leaves each record where
 * it is, its workflow running (never failed), marked `Stuck` past WORKFLOW_STUCK_AFTER_SECONDS
 * (2 s here); once the provider answers what we know again, the record settles and the mark goes.
 * As a merchant observes it: API bodies and the sandbox ledger (exactly one capture / refund).
 */
const STUCK_AFTER_SECONDS = 2;

describe('answers nobody knows', () => {
  let stack: PaymentStack;
  let merchant: TestMerchant;
  let seq = 0;
  const ext = (p: string) => `${p}-${Date.now()}-${++seq}`;
  const setFaults = (faults: Record<string, string>) => stack.sandbox('/_admin/faults', faults);
  const create = (body: Record<string, unknown>) =>
    call(stack.api.baseUrl, 'POST', '/payments', merchant.auth, {
      amount: 12,
      currency: 'USD',
      externalId: ext('unknown'),
      customer: { email: 'c@example.com' },
      ...body,
    });
  const get = (path: string) => call(stack.api.baseUrl, 'GET', path, merchant.auth);
  const describe = (workflowId: string) => stack.api.client.workflow.getHandle(workflowId).describe();
  const stuckOf = async (workflowId: string) => (await describe(workflowId)).typedSearchAttributes.get(StuckKey);

  /** While the fault lasts: the record stays `status`, its workflow runs, marked Stuck. */
  async function staysWhileStuck(
    path: string,
    workflowId: string,
    status: string,
    kind: keyof typeof STUCK_WORKFLOW_TYPES,
  ): Promise<void> {
    const stuck = await eventually(
      () => stuckOf(workflowId),
      (v) => v !== undefined,
      20_000,
      250,
    );
    expect(stuck).toBe('invalid_response');
    expect((await get(path)).body.status).toBe(status);
    expect((await describe(workflowId)).status.name).toBe('RUNNING');
    // Counted by the `workflows_stuck` gauge's query (Temporal's visibility catches up shortly).
    const counted = await eventually(
      async () =>
        (
          await stack.api.client.workflow.count(
            `${stuckQuery(STUCK_WORKFLOW_TYPES[kind])} AND WorkflowId = '${workflowId}'`,
          )
        ).count,
      (n) => n === 1,
      10_000,
      250,
    );
    expect(counted).toBe(1);
  }

  /** Once the fault is gone: the record settles as `status`, and the Stuck mark is cleared. */
  async function settles(path: string, workflowId: string, from: string, status: string): Promise<void> {
    await setFaults({});
    const settled = await eventually(
      () => get(path),
      (r) => r.body.status !== from,
      30_000,
      250,
    );
    expect(settled.body.status).toBe(status);
    // The record settles in the activity; the mark is cleared by the workflow task that follows.
    const cleared = await eventually(
      () => stuckOf(workflowId),
      (v) => v === undefined,
      10_000,
      100,
    );
    expect(cleared).toBeUndefined();
  }

  beforeAll(async () => {
    stack = await startPaymentStack(
      'unknown-answers',
      { stuckAfterSeconds: STUCK_AFTER_SECONDS },
      undefined,
      {},
      { sandbox: { disputeSeconds: 1, disputeEvidenceSeconds: 3600 } },
    );
    merchant = await createTestMerchant(stack.orm, 'Unknown answers merchant');
  });
  afterEach(async () => {
    await setFaults({});
  });
  afterAll(async () => {
    await stack.close();
  });

  it('a token payment answered with an unknown status stays created, its workflow running, until it settles', async () => {
    await setFaults({ payments: 'unknown_status' });
    const res = await create({ cardToken: 'tok_success' });
    // Never a decline, never a 500: the outcome follows.
    expect(res.status).toBe(502);
    expect(res.body.code).toBe('provider_invalid_response');
    const id = (res.body.details as { payment: { id: string } }).payment.id;
    await staysWhileStuck(`/payments/${id}`, paymentWorkflowId(id), 'created', 'payment');

    await settles(`/payments/${id}`, paymentWorkflowId(id), 'created', 'succeeded');
    expect((await stack.ledger('capture', id)).map((e) => e.status)).toEqual(['succeeded']);
  }, 60_000);

  it('a hosted payment whose customer paid stays created while the provider answers an unknown status', async () => {
    const res = await create({});
    expect(res.body).toMatchObject({ status: 'created', redirectUrl: expect.any(String) });
    const id = res.body.id as string;
    await setFaults({ payments: 'unknown_status' });
    // The customer pays on the page; its webhook makes the workflow ask, answered `on_hold`.
    expect((await fetch(`${res.body.redirectUrl as string}/pay`, { method: 'POST' })).ok).toBe(true);
    await staysWhileStuck(`/payments/${id}`, paymentWorkflowId(id), 'created', 'payment');

    await settles(`/payments/${id}`, paymentWorkflowId(id), 'created', 'succeeded');
    expect((await stack.ledger('capture', id)).map((e) => e.status)).toEqual(['succeeded']);
  }, 60_000);

  it('a refund answered with an unknown status stays pending, its workflow running, until it settles once', async () => {
    const paid = await create({ cardToken: 'tok_success' });
    expect(paid.body.status).toBe('succeeded');
    const paymentId = paid.body.id as string;
    await setFaults({ refunds: 'unknown_status' });
    const res = await call(stack.api.baseUrl, 'POST', `/payments/${paymentId}/refund`, merchant.auth, {
      externalId: ext('rf'),
      amount: 5,
    });
    expect(res.status).toBe(502);
    expect(res.body.code).toBe('provider_invalid_response');
    const refund = (res.body.details as { refund: { id: string; status: string } }).refund;
    expect(refund.status).toBe('pending');
    await staysWhileStuck(`/refunds/${refund.id}`, refundWorkflowId(refund.id), 'pending', 'refund');
    // The balance keeps the refund in flight meanwhile: nothing more is refundable twice.
    expect((await get(`/payments/${paymentId}`)).body).toMatchObject({ status: 'succeeded' });

    await settles(`/refunds/${refund.id}`, refundWorkflowId(refund.id), 'pending', 'succeeded');
    expect((await stack.ledger('refund', paymentId)).map((e) => [e.status, e.amount])).toEqual([['succeeded', 5]]);
    expect((await stack.ledger('capture', paymentId)).map((e) => e.status)).toEqual(['succeeded']);
  }, 60_000);

  it('a dispute answered with an unknown status stays where it is, its workflow running, until decided once', async () => {
    const paid = await create({ cardToken: 'tok_dispute' });
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
    await setFaults({ disputes: 'unknown_status' });
    expect(await stack.sandbox('/_admin/faults')).toMatchObject({
      payments: 'ok',
      refunds: 'ok',
      disputes: 'unknown_status',
    });
    // The processor takes the evidence, and answers `on_hold`: never a 500, the outcome follows.
    const sent = await call(stack.api.baseUrl, 'POST', `/disputes/${dispute.id}/evidence`, merchant.auth, {
      text: 'Delivered, signed for.',
      submit: true,
    });
    expect(sent.status).toBe(502);
    expect(sent.body.code).toBe('provider_invalid_response');
    const workflowId = disputeWorkflowId(dispute.id);
    await staysWhileStuck(`/disputes/${dispute.id}`, workflowId, 'needs_response', 'dispute');

    // A webhook whose dispute status nobody knows (as the sandbox sends meanwhile): acknowledged
    // and routed nowhere, as at Stripe (a resend would carry the same status), never a 500.
    const [raw] = await stack.ledger('dispute', paymentId);
    const body = JSON.stringify({
      id: `whevt_unknown_${Date.now()}`,
      type: 'dispute.updated',
      createdAt: new Date().toISOString(),
      data: {
        object: 'dispute',
        id: dispute.providerDisputeId,
        paymentId: paid.body.providerTransactionId,
        status: 'on_hold',
        amount: 12,
        currency: 'USD',
        reason: 'fraudulent',
        evidenceDueBy: new Date(Date.now() + 3600_000).toISOString(),
        metadata: raw!.metadata,
      },
    });
    const hook = await fetch(`${stack.api.baseUrl}/webhooks/sandbox`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'sandbox-signature': signWebhook(SANDBOX_WEBHOOK_SECRET, Math.floor(Date.now() / 1000), body),
      },
      body,
    });
    expect(hook.status).toBe(200);
    expect(await hook.json()).toEqual({ received: true });
    expect((await get(`/disputes/${dispute.id}`)).body.status).toBe('needs_response');
    expect((await describe(workflowId)).status.name).toBe('RUNNING');

    // The processor decides meanwhile; its webhook tells `on_hold` too: nothing moves.
    await stack.sandbox(`/_admin/disputes/${dispute.providerDisputeId}/close`, { status: 'won' });
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect((await get(`/disputes/${dispute.id}`)).body.status).toBe('needs_response');
    expect((await describe(workflowId)).status.name).toBe('RUNNING');
    expect(await stuckOf(workflowId)).toBe('invalid_response');

    // The fault gone: the workflow's question is answered, the dispute is decided, the mark goes.
    await settles(`/disputes/${dispute.id}`, workflowId, 'needs_response', 'won');
    expect((await stack.ledger('dispute', paymentId)).map((e) => e.status)).toEqual(['won']);
    expect((await stack.ledger('capture', paymentId)).map((e) => e.status)).toEqual(['succeeded']);
  }, 60_000);
});
