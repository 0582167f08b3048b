import { subscriptionTaskQueue } from '../../src/temporal/taskQueues';
import { subscriptionWorkflowId } from '../../workflows/subscriptionApi';
import { call, eventually } from '../helpers/http';
import { createTestMerchant, startPaymentStack, type PaymentStack, type TestMerchant } from '../helpers/stack';
import { sleep, subscriptionClient, succeededByInvoice } from '../helpers/subscriptions';

/** A billing day in this file: a daily subscription renews every 3 s. */
const DAY_S = 3;

/**
 * Subscriptions live on a task queue of their own, so a renewal backlog never stands in front of
 * a checkout (src/temporal/taskQueues.ts); a subscription's first run (its creation and first
 * charge) runs on the main queue and moves to the subscription queue at its first wait, so a
 * create does not stand behind renewals either. A worker of role `payments` creates and
 * activates subscriptions while no worker serves renewals; a `subscriptions` worker renews them.
 */
describe('task queues: renewals apart from checkout and creation', () => {
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
  const handleOf = (workflowId: string, runId?: string) => stack.api.client.workflow.getHandle(workflowId, runId);
  const taskQueueOf = async (workflowId: string) => (await handleOf(workflowId).describe()).taskQueue;
  /** The subscription's current run, once it moved to the subscription queue, and the run it came from. */
  const movedRun = async (subscriptionId: string) => {
    const workflowId = subscriptionWorkflowId(subscriptionId);
    const current = await eventually(
      () => handleOf(workflowId).describe(),
      (d) => d.taskQueue === subscriptionTaskQueue(stack.taskQueue),
      10_000,
      100,
    );
    const history = await handleOf(workflowId, current.runId).fetchHistory();
    const started = history.events?.[0]?.workflowExecutionStartedEventAttributes;
    const first = await handleOf(workflowId, started?.continuedExecutionRunId ?? undefined).describe();
    return { current, first };
  };

  beforeAll(async () => {
    stack = await startPaymentStack('queues', { billingDaySeconds: DAY_S });
    merchant = await createTestMerchant(stack.orm, 'Queues merchant');
  });
  afterAll(() => stack.close());

  it('runs payments, refunds and a first run on the main queue, and renewals on the subscription queue', async () => {
    const payment = await pay();
    expect(payment.body).toMatchObject({ status: 'succeeded' });
    const refunded = await refund(payment.body.id as string);
    expect(refunded.body).toMatchObject({ status: 'succeeded' });
    const subscription = await subscriptionClient(stack, merchant).create({ cardToken: 'tok_success' });
    expect(subscription.body).toMatchObject({ status: 'active' });

    // What an operator reads in the Temporal UI.
    expect(await taskQueueOf(`payment-${payment.body.id as string}`)).toBe(stack.taskQueue);
    expect(await taskQueueOf(`refund-${refunded.body.id as string}`)).toBe(stack.taskQueue);
    const { current, first } = await movedRun(subscription.body.id as string);
    expect(first.taskQueue).toBe(stack.taskQueue);
    expect(first.status.name).toBe('CONTINUED_AS_NEW');
    // The subscription is still found by merchant, externalId and status.
    expect(current.searchAttributes).toMatchObject({
      MerchantId: [merchant.merchantId],
      ExternalId: [subscription.body.externalId],
      SubscriptionStatus: ['active'],
    });
  });

  it('creates and activates subscriptions while no worker serves renewals, which a subscriptions worker then bills once', async () => {
    await stack.worker.stop();
    await stack.restartWorker('payments');
    const subs = subscriptionClient(stack, merchant);

    // Created and charged for their first period by the checkout worker alone.
    const created = await Promise.all(
      [1, 2, 3].map(() => subs.create({ amount: 7.5, billingIntervalDays: 1, cardToken: 'tok_success' })),
    );
    const ids = created.map((res) => {
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ status: 'active' });
      return res.body.id as string;
    });
    for (const id of ids) {
      expect(await subs.captures(id)).toEqual([expect.objectContaining({ status: 'succeeded', amount: 7.5 })]);
      expect((await movedRun(id)).first.taskQueue).toBe(stack.taskQueue);
    }

    // Checkout goes on: a payment and its refund settle, each captured or refunded once.
    const payment = await pay();
    expect(payment.body).toMatchObject({ status: 'succeeded', amountRefunded: 0 });
    const refunded = await refund(payment.body.id as string);
    expect(refunded.body).toMatchObject({ status: 'succeeded', amount: 5 });
    expect(await stack.ledger('capture', payment.body.id as string)).toEqual([
      expect.objectContaining({ status: 'succeeded', amount: 20 }),
    ]);
    expect(await stack.ledger('refund', payment.body.id as string)).toEqual([
      expect.objectContaining({ status: 'succeeded', amount: 5 }),
    ]);

    // A period ends with no worker on the subscription queue: nothing renews meanwhile.
    await sleep(DAY_S * 1000 + 1000);
    for (const id of ids) expect(await subs.captures(id)).toHaveLength(1);

    // A worker for the subscription queue bills what came due, each invoice once.
    await stack.worker.stop();
    await stack.restartWorker('subscriptions');
    for (const id of ids) {
      await subs.untilPaid(id, 2);
      const captures = await subs.captures(id);
      expect(captures.length).toBeGreaterThanOrEqual(2);
      expect([...succeededByInvoice(captures).values()].every((n) => n === 1)).toBe(true);
    }
  });
});
