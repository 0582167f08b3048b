import {
  createTestMerchant,
  startPaymentStack,
  startTestApi,
  type PaymentStack,
  type TestApi,
  type TestMerchant,
} from '../helpers/stack';
import { call, eventually } from '../helpers/http';
import { sweepOrphansWorkflow } from '../../workflows/sweepOrphans';

/** Temporal unreachable: a 503 that says what is left, and the sweeper sees recorded work through. */
describe('with Temporal unreachable', () => {
  let stack: PaymentStack;
  let cutOff: TestApi;
  let merchant: TestMerchant;

  beforeAll(async () => {
    stack = await startPaymentStack('temporal-down');
    merchant = await createTestMerchant(stack.orm, 'Cut-off merchant');
    // A second API on the same database whose Temporal address answers nothing.
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

  const sweep = (merchantId: string) =>
    stack.worker.client.workflow.execute(sweepOrphansWorkflow, {
      taskQueue: stack.taskQueue,
      workflowId: `sweep-test-${merchantId}-${Date.now()}`,
      args: [{ graceSeconds: 1, pageSize: 100, maxRows: 1000, merchantId }],
    });

  it('refund: 503 service_unavailable with details.refund; the sweeper gives it its workflow and it proceeds', async () => {
    const paid = await call(stack.api.baseUrl, 'POST', '/payments', merchant.auth, {
      amount: 10,
      currency: 'USD',
      externalId: `down-${Date.now()}`,
      customer: { email: 'c@example.com' },
      cardToken: 'tok_success',
    });
    expect(paid.body).toMatchObject({ status: 'succeeded' });
    const paymentId = paid.body.id as string;
    const externalId = `r-${Date.now()}`;
    const res = await call(cutOff.baseUrl, 'POST', `/payments/${paymentId}/refund`, merchant.auth, {
      externalId,
      amount: 1,
    });
    expect(res.status).toBe(503);
    // Recorded before Temporal was asked: the refund is pending and holds the in-flight slot.
    expect(res.body).toMatchObject({
      code: 'service_unavailable',
      details: { refund: { externalId, paymentId, status: 'pending', amount: 1, paymentAmountRefundable: 9 } },
    });
    const refundId = (res.body.details as { refund: { id: string } }).refund.id;
    // A repeat while Temporal is still unreachable: the same refund, the same answer.
    const repeat = await call(cutOff.baseUrl, 'POST', `/payments/${paymentId}/refund`, merchant.auth, {
      externalId,
      amount: 1,
    });
    expect(repeat.status).toBe(503);
    expect(repeat.body).toMatchObject({ details: { refund: { id: refundId, status: 'pending' } } });

    await new Promise((r) => setTimeout(r, 1100));
    expect(await sweep(merchant.merchantId)).toMatchObject({ refunds: 1 });
    const settled = await eventually(
      () => call(stack.api.baseUrl, 'GET', `/refunds/${refundId}`, merchant.auth),
      (r) => r.body.status !== 'pending',
      30_000,
      250,
    );
    expect(settled.body).toMatchObject({ status: 'succeeded', paymentAmountRefunded: 1, paymentAmountRefundable: 9 });
    expect(await stack.ledger('refund', paymentId)).toHaveLength(1);
  });

  it('payment: 503 service_unavailable; nothing is captured, and a repeat once Temporal is back goes through', async () => {
    const body = {
      amount: 3,
      currency: 'USD',
      externalId: `down-pay-${Date.now()}`,
      customer: { email: 'c@example.com' },
      cardToken: 'tok_success',
    };
    const res = await call(cutOff.baseUrl, 'POST', '/payments', merchant.auth, body);
    expect(res.status).toBe(503);
    // The payment is recorded: the answer says what is left (not settled, nothing captured).
    expect(res.body).toMatchObject({
      code: 'service_unavailable',
      details: { payment: { externalId: body.externalId, status: 'created' } },
    });
    const again = await call(stack.api.baseUrl, 'POST', '/payments', merchant.auth, body);
    expect(again.body).toMatchObject({ status: 'succeeded' });
    expect(await stack.ledger('capture', again.body.id as string)).toHaveLength(1);
  });

  it('a payment left without a workflow is given one by the sweeper and voided at its expiry, never captured', async () => {
    const body = {
      amount: 4,
      currency: 'USD',
      externalId: `orphan-${Date.now()}`,
      customer: { email: 'c@example.com' },
      cardToken: 'tok_success',
    };
    const shortLived = await startTestApi({
      orm: stack.orm,
      providers: stack.providers,
      temporalAddress: '127.0.0.1:9',
      settings: { taskQueue: stack.taskQueue, paymentExpirySeconds: 4 },
    });
    const res = await call(shortLived.baseUrl, 'POST', '/payments', merchant.auth, body).finally(() =>
      shortLived.close(),
    );
    expect(res.status).toBe(503);
    const rows: Array<{ id: string; status: string }> = await stack.orm.em
      .getConnection()
      .execute('select id, status from payments where merchant_id = ? and external_id = ?', [
        merchant.merchantId,
        body.externalId,
      ]);
    expect(rows).toEqual([{ id: expect.stringMatching(/^pay_/), status: 'created' }]);
    const paymentId = rows[0]!.id;

    await new Promise((r) => setTimeout(r, 1100));
    expect(await sweep(merchant.merchantId)).toMatchObject({ payments: 1 });
    const voided = await eventually(
      () => call(stack.api.baseUrl, 'GET', `/payments/${paymentId}`, merchant.auth),
      (r) => r.body.status !== 'created',
      15_000,
      250,
    );
    expect(voided.body).toMatchObject({ status: 'voided' });
    expect(await stack.ledger('capture', paymentId)).toHaveLength(0);
  });
});
