import {
  createTestMerchant,
  startPaymentStack,
  startTestApi,
  type PaymentStack,
  type TestApi,
  type TestMerchant,
} from '../helpers/stack';
import { call, eventually, type JsonResponse } from '../helpers/http';
import { startTcpProxy, type TcpProxy } from '../helpers/tcpProxy';
import { testStack } from '../setup/stackInfo';
import { sweepOrphansWorkflow } from '../../workflows/sweepOrphans';

/**
 * Temporal lost in the middle of a call (the connection drops while the API waits for the
 * Update's outcome): the answer is a 503 that says what is left, never a 500, and a repeat of
 * the same request once Temporal is back sees the record through.
 */
describe('Temporal connection lost mid-call', () => {
  let stack: PaymentStack;
  let merchant: TestMerchant;
  let proxy: TcpProxy;
  let proxied: TestApi;

  beforeAll(async () => {
    stack = await startPaymentStack('temporal-cut');
    merchant = await createTestMerchant(stack.orm, 'Cut merchant');
  });
  beforeEach(async () => {
    const [host, port] = testStack().temporalAddress.split(':');
    proxy = await startTcpProxy(host!, Number(port));
    // A second API (same database and task queue) that reaches Temporal only through the proxy.
    proxied = await startTestApi({
      orm: stack.orm,
      providers: stack.providers,
      temporalAddress: `127.0.0.1:${proxy.port}`,
      settings: { taskQueue: stack.taskQueue, paymentWaitMs: 4000, refundWaitMs: 4000 },
    });
  });
  afterEach(async () => {
    await stack.sandbox('/_admin/faults', {});
    await proxy.close();
    await proxied.close();
  });
  afterAll(() => stack.close());

  /**
   * Sends the request, then drops the API's Temporal connection while the provider holds its
   * answer (past the provider timeout: nothing is settled before the API answers).
   */
  const cutMidCall = async (request: () => Promise<JsonResponse>) => {
    await stack.sandbox('/_admin/faults', { latencyMs: 6000 });
    const pending = request();
    await new Promise((r) => setTimeout(r, 600));
    await proxy.cut();
    const res = await pending;
    await stack.sandbox('/_admin/faults', {});
    return res;
  };

  it('payment: 503 service_unavailable with details.payment; a repeat captures it once', async () => {
    const body = {
      amount: 7,
      currency: 'USD',
      externalId: `cut-pay-${Date.now()}`,
      customer: { email: 'c@example.com' },
      cardToken: 'tok_success',
    };
    const res = await cutMidCall(() => call(proxied.baseUrl, 'POST', '/payments', merchant.auth, body));
    expect(res.status).toBe(503);
    expect(res.body).toMatchObject({
      code: 'service_unavailable',
      details: { payment: { externalId: body.externalId, status: 'created', amount: 7 } },
    });
    expect(res.headers.get('retry-after')).toBeTruthy();
    const paymentId = (res.body.details as { payment: { id: string } }).payment.id;

    const again = await eventually(
      () => call(stack.api.baseUrl, 'POST', '/payments', merchant.auth, body),
      (r) => r.status === 200,
      30_000,
      500,
    );
    expect(again.body).toMatchObject({ id: paymentId, status: 'succeeded' });
    expect(await stack.ledger('capture', paymentId)).toHaveLength(1);
  });

  it('refund: 503 service_unavailable with details.refund; the refund proceeds', async () => {
    const paid = await call(stack.api.baseUrl, 'POST', '/payments', merchant.auth, {
      amount: 10,
      currency: 'USD',
      externalId: `cut-paid-${Date.now()}`,
      customer: { email: 'c@example.com' },
      cardToken: 'tok_success',
    });
    expect(paid.body).toMatchObject({ status: 'succeeded' });
    const paymentId = paid.body.id as string;
    const externalId = `cut-ref-${Date.now()}`;
    const res = await cutMidCall(() =>
      call(proxied.baseUrl, 'POST', `/payments/${paymentId}/refund`, merchant.auth, { externalId, amount: 4 }),
    );
    expect(res.status).toBe(503);
    expect(res.body).toMatchObject({
      code: 'service_unavailable',
      details: { refund: { externalId, paymentId, status: 'pending', amount: 4 } },
    });
    const refundId = (res.body.details as { refund: { id: string } }).refund.id;
    // Cut before its workflow started: the sweeper starts it (a no-op if it is running).
    await new Promise((r) => setTimeout(r, 1100));
    await stack.worker.client.workflow.execute(sweepOrphansWorkflow, {
      taskQueue: stack.taskQueue,
      workflowId: `sweep-cut-${Date.now()}`,
      args: [{ graceSeconds: 1, pageSize: 100, maxRows: 1000, kinds: ['refunds'], merchantId: merchant.merchantId }],
    });

    const settled = await eventually(
      () => call(stack.api.baseUrl, 'GET', `/refunds/${refundId}`, merchant.auth),
      (r) => r.body.status !== 'pending',
      60_000,
      500,
    );
    expect(settled.body).toMatchObject({ status: 'succeeded', paymentAmountRefunded: 4 });
    expect(await stack.ledger('refund', paymentId)).toHaveLength(1);
  });
});
