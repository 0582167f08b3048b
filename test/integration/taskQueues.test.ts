import { subscriptionTaskQueue } from '../../src/temporal/taskQueues';
import { subscriptionWorkflowId } from '../../workflows/subscriptionApi';
import { call } from '../helpers/http';
import { createTestMerchant, startPaymentStack, type PaymentStack, type TestMerchant } from '../helpers/stack';
import { sleep, subscriptionClient } from '../helpers/subscriptions';

/**
 * Subscriptions run on a task queue of their own, so a renewal backlog never stands in front of
 * a checkout (src/temporal/taskQueues.ts): a worker of role `payments` serves payments and refunds
 * while no worker serves subscriptions, and a `subscriptions` worker charges them later.
 */
describe('task queues: subscriptions apart from checkout', () => {
  let stack: PaymentStack;
  let merchant: TestMerchant;
  let seq = 0;
  const ext = (kind: string) => `${kind}-${Date.now()}-${++seq}`;
  const pay = () =>
    call(stack.api.baseUrl, 'POST', '/payments', merchant.auth, {
      amount: 20,
      currency: 'EUR',
      externalId: ext('order'),
      customer: { email: 'buyer@example.com', name: 'Buyer' },
      cardToken: 'tok_success',
    });
  const refund = (paymentId: string) =>
    call(stack.api.baseUrl, 'POST', `/payments/${paymentId}/refund`, merchant.auth, {
      amount: 5,
      externalId: ext('refund'),
    });
  const taskQueueOf = async (workflowId: string) =>
    (await stack.api.client.workflow.getHandle(workflowId).describe()).taskQueue;

  beforeAll(async () => {
    // A short bounded wait: a subscription create with no worker for its queue answers soon.
    stack = await startPaymentStack('queues', { paymentWaitMs: 1500, billingDaySeconds: 3600 });
    merchant = await createTestMerchant(stack.orm, 'Queues merchant');
  });
  afterAll(() => stack.close());

  it('runs payments and refunds on the main queue and each subscription on the subscription queue', async () => {
    const payment = await pay();
    expect(payment.body).toMatchObject({ status: 'succeeded' });
    const refunded = await refund(payment.body.id as string);
    expect(refunded.body).toMatchObject({ status: 'succeeded' });
    const subscription = await subscriptionClient(stack, merchant).create({ cardToken: 'tok_success' });
    expect(subscription.body).toMatchObject({ status: 'active' });

    // What an operator reads in the Temporal UI.
    expect(await taskQueueOf(`payment-${payment.body.id as string}`)).toBe(stack.taskQueue);
    expect(await taskQueueOf(`refund-${refunded.body.id as string}`)).toBe(stack.taskQueue);
    expect(await taskQueueOf(subscriptionWorkflowId(subscription.body.id as string))).toBe(
      subscriptionTaskQueue(stack.taskQueue),
    );
  });

  it('serves checkout while no worker serves subscriptions, which a subscriptions worker then charges once', async () => {
    await stack.worker.stop();
    await stack.restartWorker('payments');
    const subs = subscriptionClient(stack, merchant);

    // Three subscriptions whose first charge waits on a queue nobody polls.
    const created = await Promise.all([1, 2, 3].map(() => subs.create({ amount: 7.5, cardToken: 'tok_success' })));
    const ids = created.map((res) => {
      expect(res.status).toBe(503);
      expect(res.body).toMatchObject({ code: 'provider_unavailable' });
      return (res.body.details as { subscription: { id: string } }).subscription.id;
    });

    // Checkout goes on: a payment and its refund settle, each captured or refunded once.
    const payment = await pay();
    expect(payment.status).toBe(200);
    expect(payment.body).toMatchObject({ status: 'succeeded', amountRefunded: 0 });
    const refunded = await refund(payment.body.id as string);
    expect(refunded.status).toBe(200);
    expect(refunded.body).toMatchObject({ status: 'succeeded', amount: 5 });
    expect(await stack.ledger('capture', payment.body.id as string)).toEqual([
      expect.objectContaining({ status: 'succeeded', amount: 20 }),
    ]);
    expect(await stack.ledger('refund', payment.body.id as string)).toEqual([
      expect.objectContaining({ status: 'succeeded', amount: 5 }),
    ]);

    // Nothing charged the subscriptions meanwhile.
    await sleep(500);
    for (const id of ids) expect(await subs.captures(id)).toEqual([]);

    // A worker for the subscription queue charges each first period, once.
    await stack.worker.stop();
    await stack.restartWorker('subscriptions');
    for (const id of ids) {
      await subs.until(id, (s) => s.status === 'active');
      expect(await subs.captures(id)).toEqual([expect.objectContaining({ status: 'succeeded', amount: 7.5 })]);
    }
  });
});
