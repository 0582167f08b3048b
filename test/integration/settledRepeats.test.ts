import { createTestMerchant, startPaymentStack, type PaymentStack, type TestMerchant } from '../helpers/stack';
import { call, eventually } from '../helpers/http';
import { paymentWorkflowId } from '../../workflows/paymentApi';
import { refundWorkflowId } from '../../workflows/refundApi';
import { PaymentStatusKey, RefundStatusKey } from '../../workflows/searchAttributes';

/**
 * Repeats of a settled payment or refund are answered from PostgreSQL: the workflow's Update
 * validator rejects them, so they add nothing to its history. Operators see the status as a
 * search attribute.
 */
describe('repeats of settled records', () => {
  let stack: PaymentStack;
  let merchant: TestMerchant;

  beforeAll(async () => {
    stack = await startPaymentStack('settled-repeats');
    merchant = await createTestMerchant(stack.orm, 'Repeat merchant');
  });
  afterAll(() => stack.close());

  const updateEvents = async (workflowId: string) => {
    const history = await stack.api.client.workflow.getHandle(workflowId).fetchHistory();
    return (history.events ?? []).filter((e) => e.workflowExecutionUpdateAcceptedEventAttributes).length;
  };
  const statusAttribute = async (workflowId: string, key: typeof PaymentStatusKey) =>
    (await stack.api.client.workflow.getHandle(workflowId).describe()).typedSearchAttributes.get(key);

  it('payment and refund: repeats answer 200 from PostgreSQL and write nothing to history', async () => {
    const body = {
      amount: 20,
      currency: 'USD',
      externalId: `settled-${Date.now()}`,
      customer: { email: 'c@example.com' },
      cardToken: 'tok_success',
      // Nothing listens: the callbacks are retried, by the delivery workflow (decision 0069).
      callbackUrl: 'http://127.0.0.1:9/callbacks',
    };
    const first = await call(stack.api.baseUrl, 'POST', '/payments', merchant.auth, body);
    expect(first.body).toMatchObject({ status: 'succeeded' });
    const paymentId = first.body.id as string;
    const paymentWf = paymentWorkflowId(paymentId);
    await eventually(
      () => statusAttribute(paymentWf, PaymentStatusKey),
      (v) => v === 'settled',
      15_000,
      200,
    );

    // The run ends once settled (its events are the delivery workflow's): the answers below
    // cannot come from it.
    await eventually(
      async () => (await stack.api.client.workflow.getHandle(paymentWf).describe()).status.name,
      (s) => s === 'COMPLETED',
      15_000,
      200,
    );
    const before = await updateEvents(paymentWf);
    for (let i = 0; i < 3; i++) {
      const again = await call(stack.api.baseUrl, 'POST', '/payments', merchant.auth, body);
      expect(again.status).toBe(200);
      expect(again.body).toMatchObject({ id: paymentId, status: 'succeeded' });
    }
    expect(await updateEvents(paymentWf)).toBe(before);

    const refundBody = { externalId: `settled-r-${Date.now()}`, amount: 5 };
    const refund = await call(stack.api.baseUrl, 'POST', `/payments/${paymentId}/refund`, merchant.auth, refundBody);
    expect(refund.body).toMatchObject({ status: 'succeeded' });
    const refundWf = refundWorkflowId(refund.body.id as string);
    await eventually(
      () => statusAttribute(refundWf, RefundStatusKey),
      (v) => v === 'settled',
      15_000,
      200,
    );
    await eventually(
      async () => (await stack.api.client.workflow.getHandle(refundWf).describe()).status.name,
      (s) => s === 'COMPLETED',
      15_000,
      200,
    );
    const refundUpdates = await updateEvents(refundWf);
    const replay = await call(stack.api.baseUrl, 'POST', `/payments/${paymentId}/refund`, merchant.auth, refundBody);
    expect(replay.status).toBe(200);
    expect(replay.body).toMatchObject({ id: refund.body.id, status: 'succeeded' });
    expect(await updateEvents(refundWf)).toBe(refundUpdates);
  });
});
