import {
  createTestMerchant,
  startPaymentStack,
  startTestApi,
  type PaymentStack,
  type TestApi,
  type TestMerchant,
} from '../helpers/stack';
import { call, eventually } from '../helpers/http';
import { sweepOrphanPaymentsWorkflow } from '../../workflows/sweepPayments';

/** Temporal unreachable: a clear 503, and nothing half-done left behind for refunds. */
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

  it('refund: 503 service_unavailable, no refund recorded, the balance untouched', async () => {
    const paid = await call(stack.api.baseUrl, 'POST', '/payments', merchant.auth, {
      amount: 10,
      currency: 'USD',
      externalId: `down-${Date.now()}`,
      customer: { email: 'c@example.com' },
      cardToken: 'tok_success',
    });
    expect(paid.body).toMatchObject({ status: 'succeeded' });
    const res = await call(cutOff.baseUrl, 'POST', `/payments/${paid.body.id as string}/refund`, merchant.auth, {
      externalId: `r-${Date.now()}`,
      amount: 1,
    });
    expect(res.status).toBe(503);
    expect(res.body).toEqual({ code: 'service_unavailable', message: expect.any(String), details: {} });
    expect(
      (await call(stack.api.baseUrl, 'GET', `/payments/${paid.body.id as string}/refunds`, merchant.auth)).body,
    ).toEqual({ refunds: [] });
    expect(
      (await call(stack.api.baseUrl, 'GET', `/payments/${paid.body.id as string}`, merchant.auth)).body,
    ).toMatchObject({ amountRefundable: 10 });
    // Once Temporal is back (the normal API), the same request goes through.
    const again = await call(stack.api.baseUrl, 'POST', `/payments/${paid.body.id as string}/refund`, merchant.auth, {
      externalId: `r2-${Date.now()}`,
      amount: 1,
    });
    expect(again.body).toMatchObject({ status: 'succeeded' });
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
    const swept = await stack.worker.client.workflow.execute(sweepOrphanPaymentsWorkflow, {
      taskQueue: stack.taskQueue,
      workflowId: `sweep-test-${Date.now()}`,
      args: [{ olderThanSeconds: 1, limit: 500 }],
    });
    expect(swept).toBeGreaterThanOrEqual(1);
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
