import {
  basicAuth,
  createTestMerchant,
  startPaymentStack,
  SANDBOX_WEBHOOK_SECRET,
  type PaymentStack,
  type TestMerchant,
} from '../helpers/stack';
import { call, eventually } from '../helpers/http';
import { startCallbackReceiver } from '../helpers/callbackReceiver';
import { signWebhook } from '../../dev/sandbox/webhooks';
import { createKey } from '../../src/domain/merchants';
import { disputeWorkflow } from '../../workflows/dispute';
import { disputeEventSignal } from '../../workflows/disputeApi';

/**
 * Disputes on the provider sandbox (PRODUCT.md, "Processor lifecycle"; decision 0056): a
 * `tok_dispute` payment is disputed by the processor, the merchant sees and answers it, the
 * processor decides, and refunds wait while it is open. Everything as a merchant observes it:
 * the API, the callbacks, the sandbox ledger.
 */
describe('disputes', () => {
  let stack: PaymentStack;
  let merchant: TestMerchant;
  let other: TestMerchant;
  let receiver: Awaited<ReturnType<typeof startCallbackReceiver>>;
  let seq = 0;
  const ext = (p = 'd') => `${p}-${Date.now()}-${++seq}`;

  type Json = Record<string, unknown>;
  const api = (s: PaymentStack, method: string, path: string, body?: unknown, auth = merchant.auth) =>
    call(s.api.baseUrl, method, path, auth, body);
  const pay = async (s: PaymentStack, amount: number, cardToken = 'tok_dispute') => {
    const res = await api(s, 'POST', '/payments', {
      amount,
      currency: 'USD',
      externalId: ext('p'),
      customer: { email: 'c@example.com' },
      cardToken,
      callbackUrl: receiver.url,
    });
    expect(res.body).toMatchObject({ status: 'succeeded', disputed: false, amountDisputed: 0 });
    return res.body as Json & { id: string; providerTransactionId: string };
  };
  const disputeOf = async (s: PaymentStack, paymentId: string): Promise<Json & { id: string }> => {
    const listed = await eventually(
      () => api(s, 'GET', `/disputes?paymentId=${paymentId}`),
      (r) => (r.body.disputes as Json[] | undefined)?.length === 1,
    );
    return (listed.body.disputes as Array<Json & { id: string }>)[0]!;
  };
  const statusOf = (s: PaymentStack, disputeId: string, status: string) =>
    eventually(
      () => api(s, 'GET', `/disputes/${disputeId}`),
      (r) => r.body.status === status,
    );
  const callbacks = (disputeId: string, type: string) =>
    eventually(
      async () => receiver.received.filter((c) => c.json.type === type && c.json.data.id === disputeId),
      (found) => found.length > 0,
    );

  beforeAll(async () => {
    // Long enough to refund before the processor disputes; evidence due in an hour.
    stack = await startPaymentStack(
      'disputes',
      {},
      undefined,
      {},
      {
        sandbox: { disputeSeconds: 1.5, disputeEvidenceSeconds: 3600 },
      },
    );
    merchant = await createTestMerchant(stack.orm, 'Disputes merchant');
    other = await createTestMerchant(stack.orm, 'Another merchant');
    receiver = await startCallbackReceiver();
  });
  afterAll(async () => {
    await stack.close();
    await receiver.close();
  });

  it('the processor disputes a tok_dispute payment: the dispute, the payment, refunds refused, the ledger', async () => {
    const payment = await pay(stack, 10);
    const dispute = await disputeOf(stack, payment.id);
    expect(dispute).toEqual({
      id: expect.stringMatching(/^dp_[0-9A-HJKMNP-TV-Z]{26}$/),
      paymentId: payment.id,
      providerDisputeId: expect.stringMatching(/^dsp_/),
      amount: 10,
      currency: 'USD',
      reason: 'fraudulent',
      status: 'needs_response',
      evidenceDueBy: expect.any(String),
      evidence: null,
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
      closedAt: null,
    });
    const window = Date.parse(dispute.evidenceDueBy as string) - Date.parse(dispute.createdAt as string);
    expect(Math.abs(window - 3600_000)).toBeLessThan(5000);
    expect((await api(stack, 'GET', `/disputes/${dispute.id}`)).body).toEqual(dispute);
    expect((await api(stack, 'GET', '/disputes?status=needs_response')).body.disputes).toEqual(
      expect.arrayContaining([dispute]),
    );

    expect((await api(stack, 'GET', `/payments/${payment.id}`)).body).toMatchObject({
      status: 'succeeded',
      disputed: true,
      amountDisputed: 10,
      amountRefundable: 0,
    });
    const refused = await api(stack, 'POST', `/payments/${payment.id}/refund`, { externalId: ext(), amount: 1 });
    expect(refused.status).toBe(409);
    expect(refused.body).toMatchObject({ code: 'charge_disputed' });

    const [entry] = await stack.ledger('dispute', payment.id);
    expect(entry).toEqual({
      id: expect.any(String),
      type: 'dispute',
      status: 'needs_response',
      amount: 10,
      currency: 'USD',
      idempotencyKey: null,
      reference: null,
      transactionId: dispute.providerDisputeId,
      paymentTransactionId: payment.providerTransactionId,
      metadata: expect.objectContaining({ paymentId: payment.id }),
      createdAt: expect.any(String),
    });
    expect(await stack.ledger('refund', payment.id)).toEqual([]);
    const [created] = await callbacks(dispute.id, 'dispute.created');
    expect(created!.json.data).toMatchObject({ id: dispute.id, status: 'needs_response', amount: 10 });

    // Another merchant sees nothing of it.
    const foreign = (method: string, path: string, body?: unknown) => api(stack, method, path, body, other.auth);
    expect((await foreign('GET', `/disputes/${dispute.id}`)).status).toBe(404);
    expect((await foreign('GET', '/disputes')).body.disputes).toEqual([]);
    expect((await foreign('POST', `/disputes/${dispute.id}/evidence`, { text: 'x', submit: true })).status).toBe(404);
    expect((await foreign('POST', `/disputes/${dispute.id}/accept`)).status).toBe(404);
    expect((await api(stack, 'GET', `/disputes/${dispute.id}`)).body.status).toBe('needs_response');

    // The same merchant's live key sees nothing of its test records.
    const { apiKey, secretKey } = await createKey(stack.orm.em.fork(), merchant.merchantId, {
      environment: 'live',
      role: 'merchant',
    });
    const liveAuth = basicAuth(apiKey.publicKey, secretKey);
    expect((await api(stack, 'GET', `/disputes/${dispute.id}`, undefined, liveAuth)).status).toBe(404);
    expect((await api(stack, 'GET', '/disputes', undefined, liveAuth)).body.disputes).toEqual([]);
    expect((await api(stack, 'POST', `/disputes/${dispute.id}/accept`, undefined, liveAuth)).status).toBe(404);
  });

  it('evidence: a draft, then submitted (under_review); the processor decides won; refunds allowed again', async () => {
    const payment = await pay(stack, 20);
    const dispute = await disputeOf(stack, payment.id);
    const draft = await api(stack, 'POST', `/disputes/${dispute.id}/evidence`, { text: 'Draft.', submit: false });
    expect(draft.status).toBe(200);
    expect(draft.body).toMatchObject({ status: 'needs_response', evidence: { text: 'Draft.', submittedAt: null } });
    expect(await stack.ledger('dispute', payment.id)).toMatchObject([{ status: 'needs_response' }]);

    const sent = await api(stack, 'POST', `/disputes/${dispute.id}/evidence`, {
      text: 'Signed delivery receipt — ✓',
      submit: true,
    });
    expect(sent.status).toBe(200);
    expect(sent.body).toMatchObject({
      status: 'under_review',
      evidence: { text: 'Signed delivery receipt — ✓', submittedAt: expect.any(String) },
      closedAt: null,
    });
    expect(await stack.ledger('dispute', payment.id)).toMatchObject([{ status: 'under_review' }]);
    await callbacks(dispute.id, 'dispute.updated');
    expect((await api(stack, 'GET', `/payments/${payment.id}`)).body).toMatchObject({ disputed: true });

    for (const [path, body] of [
      ['evidence', { text: 'More.', submit: true }],
      ['evidence', { text: 'More.', submit: false }],
      ['accept', undefined],
    ] as const) {
      const again = await api(stack, 'POST', `/disputes/${dispute.id}/${path}`, body);
      expect(again.status).toBe(409);
      expect(again.body).toMatchObject({ code: 'dispute_not_updatable', details: { status: 'under_review' } });
    }

    await stack.sandbox(`/_admin/disputes/${String(dispute.providerDisputeId)}/close`, { status: 'won' });
    const won = await statusOf(stack, dispute.id, 'won');
    expect(won.body.closedAt).toEqual(expect.any(String));
    const [closed] = await callbacks(dispute.id, 'dispute.closed');
    expect(closed!.json.data).toMatchObject({ status: 'won' });
    expect(await stack.ledger('dispute', payment.id)).toMatchObject([{ status: 'won' }]);
    expect((await api(stack, 'GET', `/payments/${payment.id}`)).body).toMatchObject({
      disputed: false,
      amountDisputed: 0,
      amountRefundable: 20,
    });
    expect((await api(stack, 'POST', `/disputes/${dispute.id}/evidence`, { text: 'Late.', submit: true })).status).toBe(
      409,
    );
    const refund = await api(stack, 'POST', `/payments/${payment.id}/refund`, { externalId: ext(), amount: 5 });
    expect(refund.body).toMatchObject({ status: 'succeeded', paymentAmountRefundable: 15 });
  });

  it('accept: accepted counts as lost; an admin close lost too; nothing is left to refund', async () => {
    const payment = await pay(stack, 8);
    const dispute = await disputeOf(stack, payment.id);
    const accepted = await api(stack, 'POST', `/disputes/${dispute.id}/accept`);
    expect(accepted.status).toBe(200);
    expect(accepted.body).toMatchObject({ status: 'accepted', closedAt: expect.any(String) });
    expect(await stack.ledger('dispute', payment.id)).toMatchObject([{ status: 'accepted', amount: 8 }]);
    await callbacks(dispute.id, 'dispute.closed');
    expect((await api(stack, 'GET', `/payments/${payment.id}`)).body).toMatchObject({
      status: 'succeeded',
      disputed: false,
      amountDisputed: 8,
      amountRefundable: 0,
    });
    const nothing = await api(stack, 'POST', `/payments/${payment.id}/refund`, { externalId: ext() });
    expect(nothing.status).toBe(422);
    expect(nothing.body).toMatchObject({ code: 'amount_exceeds_refundable', details: { amountRefundable: 0 } });
    expect((await api(stack, 'POST', `/disputes/${dispute.id}/accept`)).status).toBe(409);

    const lostPayment = await pay(stack, 5);
    const lostDispute = await disputeOf(stack, lostPayment.id);
    await stack.sandbox(`/_admin/disputes/${String(lostDispute.providerDisputeId)}/close`, { status: 'lost' });
    await statusOf(stack, lostDispute.id, 'lost');
    await callbacks(lostDispute.id, 'dispute.closed');
    expect(await stack.ledger('dispute', lostPayment.id)).toMatchObject([{ status: 'lost' }]);
    expect((await api(stack, 'GET', `/payments/${lostPayment.id}`)).body).toMatchObject({
      disputed: false,
      amountDisputed: 5,
      amountRefundable: 0,
    });
    expect((await api(stack, 'GET', `/disputes?status=lost&paymentId=${lostPayment.id}`)).body.disputes).toHaveLength(
      1,
    );
    expect((await api(stack, 'GET', `/disputes?status=won&paymentId=${lostPayment.id}`)).body.disputes).toEqual([]);
  });

  it('closed at the processor before our record knows: evidence and accept are 409 dispute_not_updatable, the record follows, nothing else moves', async () => {
    // The processor decides lost; its webhook never comes (a change in the sandbox's state sends none).
    const payment = await pay(stack, 7);
    const dispute = await disputeOf(stack, payment.id);
    stack.sandboxDisputes.close(String(dispute.providerDisputeId), 'lost');
    expect((await api(stack, 'GET', `/disputes/${dispute.id}`)).body).toMatchObject({ status: 'needs_response' });
    const sent = await api(stack, 'POST', `/disputes/${dispute.id}/evidence`, { text: 'Too late.', submit: true });
    expect(sent.status).toBe(409);
    expect(sent.body).toMatchObject({
      code: 'dispute_not_updatable',
      message: expect.any(String),
      details: { status: 'lost' },
    });
    // Our record follows the processor at once; the evidence it refused is not kept as sent.
    expect((await api(stack, 'GET', `/disputes/${dispute.id}`)).body).toMatchObject({
      status: 'lost',
      evidence: null,
      closedAt: expect.any(String),
    });
    expect(stack.sandboxDisputes.get(String(dispute.providerDisputeId)).evidence).toBeNull();
    const [closed] = await callbacks(dispute.id, 'dispute.closed');
    expect(closed!.json.data).toMatchObject({ status: 'lost' });
    expect((await api(stack, 'GET', `/payments/${payment.id}`)).body).toMatchObject({
      status: 'succeeded',
      disputed: false,
      amountDisputed: 7,
      amountRefundable: 0,
    });
    expect(await stack.ledger('dispute', payment.id)).toMatchObject([{ status: 'lost', amount: 7 }]);
    expect((await stack.ledger('capture', payment.id)).map((c) => [c.status, c.amount])).toEqual([['succeeded', 7]]);
    expect(await stack.ledger('refund', payment.id)).toEqual([]);
    // Accept now: our record already knows.
    const acceptLate = await api(stack, 'POST', `/disputes/${dispute.id}/accept`);
    expect(acceptLate.status).toBe(409);
    expect(acceptLate.body).toMatchObject({ code: 'dispute_not_updatable', details: { status: 'lost' } });

    // Accept on a dispute the processor decided won, unknown to us: 409, the record is won, refunds open again.
    const wonPayment = await pay(stack, 9);
    const wonDispute = await disputeOf(stack, wonPayment.id);
    stack.sandboxDisputes.close(String(wonDispute.providerDisputeId), 'won');
    const accepted = await api(stack, 'POST', `/disputes/${wonDispute.id}/accept`);
    expect(accepted.status).toBe(409);
    expect(accepted.body).toMatchObject({ code: 'dispute_not_updatable', details: { status: 'won' } });
    expect((await api(stack, 'GET', `/disputes/${wonDispute.id}`)).body).toMatchObject({
      status: 'won',
      evidence: null,
      closedAt: expect.any(String),
    });
    expect(await stack.ledger('dispute', wonPayment.id)).toMatchObject([{ status: 'won', amount: 9 }]);
    expect((await api(stack, 'GET', `/payments/${wonPayment.id}`)).body).toMatchObject({
      disputed: false,
      amountDisputed: 0,
      amountRefundable: 9,
    });
    const [wonClosed] = await callbacks(wonDispute.id, 'dispute.closed');
    expect(wonClosed!.json.data).toMatchObject({ status: 'won' });
    // One closing event each, whoever learnt it first (the route or the workflow).
    await new Promise((r) => setTimeout(r, 1000));
    for (const id of [dispute.id, wonDispute.id]) {
      expect(receiver.received.filter((c) => c.json.type === 'dispute.closed' && c.json.data.id === id)).toHaveLength(
        1,
      );
    }
  });

  it('a partial refund before the dispute: the dispute is for the remainder', async () => {
    const payment = await pay(stack, 10);
    const refund = await api(stack, 'POST', `/payments/${payment.id}/refund`, { externalId: ext(), amount: 4 });
    expect(refund.body).toMatchObject({ status: 'succeeded' });
    const dispute = await disputeOf(stack, payment.id);
    expect(dispute).toMatchObject({ amount: 6, status: 'needs_response' });
    expect(await stack.ledger('dispute', payment.id)).toMatchObject([{ amount: 6 }]);
    expect((await api(stack, 'GET', `/payments/${payment.id}`)).body).toMatchObject({
      status: 'partially_refunded',
      amountRefunded: 4,
      amountDisputed: 6,
      disputed: true,
      amountRefundable: 0,
    });
  });

  it('invariant 6 under concurrency: refunds racing the dispute never exceed the amount with it', async () => {
    const payment = await pay(stack, 100);
    const answers: Array<{ status: number; code?: string; refund?: string }> = [];
    const started = Date.now();
    const burst = async () => {
      while (Date.now() - started < 3000) {
        const res = await api(stack, 'POST', `/payments/${payment.id}/refund`, { externalId: ext('race'), amount: 1 });
        answers.push({
          status: res.status,
          code: res.body.code as string | undefined,
          refund: res.body.status as string,
        });
      }
    };
    await Promise.all(Array.from({ length: 4 }, burst));
    expect(answers.filter((a) => a.status >= 500)).toEqual([]);
    expect(answers.some((a) => a.refund === 'succeeded')).toBe(true);
    expect(answers.some((a) => a.code === 'charge_disputed')).toBe(true);

    const dispute = await disputeOf(stack, payment.id);
    await stack.sandbox(`/_admin/disputes/${String(dispute.providerDisputeId)}/close`, { status: 'lost' });
    await statusOf(stack, dispute.id, 'lost');
    const refunds = await eventually(
      () => api(stack, 'GET', `/payments/${payment.id}/refunds`),
      (r) => (r.body.refunds as Json[]).every((x) => x.status !== 'pending'),
    );
    const succeeded = (refunds.body.refunds as Json[])
      .filter((r) => r.status === 'succeeded')
      .reduce((sum, r) => sum + Math.round((r.amount as number) * 100), 0);
    const moved = (await stack.ledger('refund', payment.id))
      .filter((e) => e.status === 'succeeded')
      .reduce((sum, e) => sum + Math.round(e.amount * 100), 0);
    const [lost] = await stack.ledger('dispute', payment.id);
    const disputedMinor = Math.round((dispute.amount as number) * 100);
    expect(lost).toMatchObject({ status: 'lost', amount: dispute.amount });
    expect(moved).toBe(succeeded);
    expect(succeeded + disputedMinor).toBeLessThanOrEqual(100_00);
    const after = await api(stack, 'GET', `/payments/${payment.id}`);
    expect(after.body).toMatchObject({
      amountRefunded: succeeded / 100,
      amountDisputed: dispute.amount,
      disputed: false,
      amountRefundable: (100_00 - succeeded - disputedMinor) / 100,
    });
  });

  it('a repeated dispute webhook keeps one dispute; a forged one is refused', async () => {
    const payment = await pay(stack, 3);
    const dispute = await disputeOf(stack, payment.id);
    const [raw] = await stack.ledger('dispute', payment.id);
    const body = JSON.stringify({
      id: 'whevt_repeat',
      type: 'dispute.created',
      createdAt: new Date().toISOString(),
      data: {
        object: 'dispute',
        id: dispute.providerDisputeId,
        paymentId: payment.providerTransactionId,
        status: 'needs_response',
        amount: 3,
        currency: 'USD',
        reason: 'fraudulent',
        evidenceDueBy: dispute.evidenceDueBy,
        evidence: null,
        metadata: raw!.metadata,
        createdAt: dispute.createdAt,
        updatedAt: dispute.createdAt,
        closedAt: null,
      },
    });
    const post = (signature: string) =>
      fetch(`${stack.api.baseUrl}/webhooks/sandbox`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'sandbox-signature': signature },
        body,
      });
    const now = Math.floor(Date.now() / 1000);
    for (let i = 0; i < 2; i++) expect((await post(signWebhook(SANDBOX_WEBHOOK_SECRET, now, body))).status).toBe(200);
    expect((await post(signWebhook('whsec_forged', now, body))).status).toBe(400);
    expect((await api(stack, 'GET', `/disputes?paymentId=${payment.id}`)).body.disputes).toEqual([dispute]);
  });

  it('bad input: 400 with details, 404 for unknown ids, never a 500', async () => {
    const payment = await pay(stack, 2);
    const dispute = await disputeOf(stack, payment.id);
    for (const body of [
      {},
      { text: 'x' },
      { text: '', submit: true },
      { text: 'x', submit: 'yes' },
      { text: 'x', submit: true, more: 1 },
    ]) {
      const res = await api(stack, 'POST', `/disputes/${dispute.id}/evidence`, body);
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({ code: 'validation_error', details: { issues: expect.any(Array) } });
    }
    const long = await api(stack, 'POST', `/disputes/${dispute.id}/evidence`, {
      text: 'x'.repeat(20_001),
      submit: true,
    });
    expect(long.status).toBe(400);
    const nul = await api(stack, 'POST', `/disputes/${dispute.id}/evidence`, { text: 'a\u0000b', submit: true });
    expect(nul.status).toBe(400);
    for (const id of ['dp_01M80J0M3F0AF909BAA7744V6V', 'nonsense', payment.id]) {
      expect((await api(stack, 'GET', `/disputes/${id}`)).status).toBe(404);
      expect((await api(stack, 'POST', `/disputes/${id}/evidence`, { text: 'x', submit: true })).status).toBe(404);
      expect((await api(stack, 'POST', `/disputes/${id}/accept`)).status).toBe(404);
    }
    expect((await api(stack, 'GET', '/disputes?status=open')).status).toBe(400);
    expect((await api(stack, 'GET', '/disputes?cursor=garbage')).status).toBe(400);
    expect((await api(stack, 'GET', '/disputes?surprise=1')).status).toBe(400);
    expect((await api(stack, 'GET', `/disputes/${dispute.id}`)).body).toMatchObject({
      status: 'needs_response',
      evidence: null,
    });
  });

  it('bounded history: a long run continues as new, keeps following, and ends when the processor decides', async () => {
    const payment = await pay(stack, 6);
    const dispute = await disputeOf(stack, payment.id);
    // A second run over the same dispute, with a tiny history bound (the real one runs beside it).
    const workflowId = `dispute-bounded-${dispute.id}`;
    const handle = await stack.api.client.workflow.start(disputeWorkflow, {
      workflowId,
      taskQueue: stack.taskQueue,
      args: [
        {
          disputeId: dispute.id,
          paymentId: payment.id,
          merchantId: merchant.merchantId,
          openedAtMs: Date.parse(dispute.createdAt as string),
          evidenceDueByMs: Date.parse(dispute.evidenceDueBy as string),
          callbackRetryInitialSeconds: 1,
          callbacks: false,
          historyEventLimit: 20,
        },
      ],
    });
    const runs = async () => {
      const ids = new Set<string>();
      for await (const wf of stack.api.client.workflow.list({ query: `WorkflowId = "${workflowId}"` }))
        ids.add(wf.runId);
      return ids.size;
    };
    for (let i = 0; i < 12; i++) {
      await stack.api.client.workflow.getHandle(workflowId).signal(disputeEventSignal);
      await new Promise((r) => setTimeout(r, 150));
    }
    await eventually(runs, (n) => n >= 2, 20_000, 250);
    await stack.sandbox(`/_admin/disputes/${String(dispute.providerDisputeId)}/close`, { status: 'won' });
    await stack.api.client.workflow.getHandle(workflowId).signal(disputeEventSignal);
    expect(await stack.api.client.workflow.getHandle(workflowId).result()).toEqual({ closed: true });
    expect(handle.workflowId).toBe(workflowId);
    await statusOf(stack, dispute.id, 'won');
  });

  it('lists newest first with cursors', async () => {
    const first = await api(stack, 'GET', '/disputes?limit=1');
    expect(first.body.disputes).toHaveLength(1);
    const second = await api(stack, 'GET', `/disputes?limit=1&cursor=${String(first.body.nextCursor)}`);
    expect(second.body.disputes).toHaveLength(1);
    const [a] = first.body.disputes as Json[];
    const [b] = second.body.disputes as Json[];
    expect(Date.parse(a!.createdAt as string)).toBeGreaterThanOrEqual(Date.parse(b!.createdAt as string));
    expect(a!.id).not.toEqual(b!.id);
  });

  describe('at the deadline', () => {
    let quick: PaymentStack;
    beforeAll(async () => {
      quick = await startPaymentStack(
        'disputes-deadline',
        {},
        undefined,
        {},
        {
          sandbox: { disputeSeconds: 0.2, disputeEvidenceSeconds: 7 },
        },
      );
    });
    afterAll(() => quick.close());

    it('a dispute left unanswered: evidence_due_soon, then lost by the processor', async () => {
      const payment = await pay(quick, 4);
      const dispute = await disputeOf(quick, payment.id);
      const [soon] = await callbacks(dispute.id, 'dispute.evidence_due_soon');
      // A seventh of the 7 s window before the deadline: about 6 s after opening.
      const opened = Date.parse(dispute.createdAt as string);
      expect(soon!.receivedAt - opened).toBeGreaterThan(5000);
      expect(soon!.json.data).toMatchObject({ status: 'needs_response' });
      const lost = await statusOf(quick, dispute.id, 'lost');
      expect(lost.body.closedAt).toEqual(expect.any(String));
      const [closed] = await callbacks(dispute.id, 'dispute.closed');
      expect(closed!.json.data).toMatchObject({ status: 'lost' });
      expect(await quick.ledger('dispute', payment.id)).toMatchObject([{ status: 'lost', amount: 4 }]);
      expect((await api(quick, 'GET', `/payments/${payment.id}`)).body).toMatchObject({
        disputed: false,
        amountDisputed: 4,
        amountRefundable: 0,
      });
    });
  });
});
