import { Writable } from 'node:stream';
import { createLogger } from '../../src/logger';
import { createTestMerchant, startPaymentStack, type PaymentStack, type TestMerchant } from '../helpers/stack';
import { eventually } from '../helpers/http';
import { startCallbackReceiver } from '../helpers/callbackReceiver';
import { paymentWorkflowId } from '../../workflows/paymentApi';
import { refundWorkflowId } from '../../workflows/refundApi';
import { subscriptionWorkflowId } from '../../workflows/subscriptionApi';
import { eventDeliveriesWorkflowId } from '../../workflows/eventDeliveriesApi';
import { deliveryTaskQueue } from '../../src/temporal/taskQueues';
import { MerchantEvent } from '../../src/db/entities';
import {
  MerchantIdKey,
  PaymentStatusKey,
  RefundStatusKey,
  SubscriptionStatusKey,
} from '../../workflows/searchAttributes';

/**
 * Issue 13, item 3: a workflow explains itself in the Temporal UI without its history (a static
 * summary and details, status search attributes), and one id ties the API request, the workflow
 * it started and the worker's log lines for it. Real API, worker, PostgreSQL and Temporal; the
 * log lines are captured from the real pino logger of the API and the worker.
 */
interface LogLine {
  msg: string;
  requestId?: string;
  workflowId?: string;
  [key: string]: unknown;
}

function capturedLogger() {
  const lines: LogLine[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString('utf8').split('\n').filter(Boolean)) lines.push(JSON.parse(line) as LogLine);
      done();
    },
  });
  return { logger: createLogger('info', 'test', destination), lines };
}

describe('workflows in the Temporal UI: summaries, status, and the request id', () => {
  const { logger, lines } = capturedLogger();
  let stack: PaymentStack;
  let merchant: TestMerchant;
  let seq = 0;
  const unique = (prefix: string) => `${prefix}-${Date.now()}-${++seq}`;

  /** A JSON call with an optional X-Request-Id. */
  async function send(method: string, path: string, body: unknown, requestId?: string) {
    const res = await fetch(`${stack.api.baseUrl}${path}`, {
      method,
      headers: {
        authorization: merchant.auth,
        'content-type': 'application/json',
        ...(requestId ? { 'x-request-id': requestId } : {}),
      },
      body: JSON.stringify(body),
    });
    return {
      status: res.status,
      requestId: res.headers.get('x-request-id'),
      // eslint-disable-next-line @typescript-eslint/no-explicit-any -- assertions read nested fields
      body: (await res.json()) as Record<string, any>,
    };
  }

  const describeWorkflow = async (workflowId: string) => {
    const d = await stack.api.client.workflow.getHandle(workflowId).describe();
    return { d, summary: await d.staticSummary(), details: await d.staticDetails() };
  };

  /** The workflow's status search attribute reaches `value` (it follows the record). */
  const statusBecomes = (workflowId: string, key: typeof PaymentStatusKey, value: string) =>
    eventually(
      async () => (await stack.api.client.workflow.getHandle(workflowId).describe()).typedSearchAttributes.get(key),
      (current) => current === value,
    );

  const linesFor = (requestId: string) => lines.filter((l) => l.requestId === requestId);

  beforeAll(async () => {
    stack = await startPaymentStack('workflow-observability', {}, 1500, {}, { logger });
    merchant = await createTestMerchant(stack.orm, 'Observability merchant');
  });
  afterAll(() => stack?.close());

  it("a payment: summary and details, its status search attribute, and one request id in the answer, the memo and the worker log lines; its event delivered by the merchant's delivery workflow", async () => {
    const requestId = unique('req-payment');
    const externalId = unique('order');
    // The first delivery fails: the delivery step logs it, then delivers on its retry.
    const receiver = await startCallbackReceiver([500]);
    try {
      const res = await send(
        'POST',
        '/payments',
        {
          amount: 12.5,
          currency: 'EUR',
          externalId,
          customer: { email: 'customer@example.com' },
          cardToken: 'tok_success',
          callbackUrl: receiver.url,
        },
        requestId,
      );
      expect(res.status).toBe(200);
      expect(res.body.status).toBe('succeeded');
      expect(res.requestId).toBe(requestId);
      const paymentId = res.body.id as string;
      const workflowId = paymentWorkflowId(paymentId);

      const { d, summary, details } = await describeWorkflow(workflowId);
      expect(summary).toBe(`Payment 12.50 EUR · test · merchant ${merchant.merchantId} · externalId ${externalId}`);
      expect(details).toContain(`**Payment ${paymentId} · test**`);
      expect(details).toContain('- Amount: 12.50 EUR');
      expect(details).toContain('- Merchant callbacks: yes');
      // Nothing of the customer, the card or the callback URL.
      expect(`${summary}\n${details}`).not.toMatch(/tok_success|customer@example\.com|127\.0\.0\.1/);
      expect(d.memo).toEqual({ requestId });
      // The answer may come from the record before the workflow's next task moves the attribute.
      await statusBecomes(workflowId, PaymentStatusKey, 'settled');

      // The event is delivered by the merchant's delivery workflow on the delivery queue, woken by
      // the delivery kicker, not by the request (decision 0069): its lines carry no request id.
      const failed = await eventually(
        async () => lines.filter((l) => l.msg === 'event delivery failed' && l.failure === 'HTTP 500'),
        (found) => found.length > 0,
      );
      expect(failed[0]).toMatchObject({ type: 'payment.succeeded', final: false });
      expect(failed[0]!.requestId).toBeUndefined();
      const event = await stack.orm.em.fork().findOneOrFail(MerchantEvent, { id: failed[0]!.eventId as string });
      expect(event.resourceId).toBe(paymentId);
      await eventually(
        async () => receiver.received.length,
        (n) => n >= 2,
      );
      const deliveriesId = eventDeliveriesWorkflowId(merchant.merchantId);
      const deliveries = await describeWorkflow(deliveriesId);
      expect(deliveries.d.type).toBe('eventDeliveriesWorkflow');
      expect(deliveries.d.taskQueue).toBe(deliveryTaskQueue(stack.taskQueue));
      expect(deliveries.summary).toBe(`Event deliveries · merchant ${merchant.merchantId}`);
      expect(deliveries.details).toContain(`- Merchant: ${merchant.merchantId}`);
      expect(deliveries.d.typedSearchAttributes.get(MerchantIdKey)).toBe(merchant.merchantId);
      // Nothing of the event, its body or its destination.
      expect(`${deliveries.summary}\n${deliveries.details}`).not.toMatch(/127\.0\.0\.1|pay_/);
      // And the API's own line about the request.
      expect(linesFor(requestId)).toContainEqual(
        expect.objectContaining({ msg: 'request', method: 'POST', path: '/payments', status: 200 }),
      );
    } finally {
      await receiver.close();
    }
  });

  it('a token the provider refuses: the 400, the workflow memo and the worker line "rejected" share the request id', async () => {
    const requestId = unique('req-refused');
    const res = await send(
      'POST',
      '/payments',
      {
        amount: 3,
        currency: 'USD',
        externalId: unique('refused'),
        customer: { email: 'customer@example.com' },
        cardToken: 'tok_unknown_to_the_sandbox',
      },
      requestId,
    );
    expect(res.status).toBe(400);
    expect(res.body.code).toBe('invalid_card_token');
    expect(res.requestId).toBe(requestId);
    // The answer may come from the record (its deletion) a moment before the worker's line.
    const rejected = await eventually(
      async () => linesFor(requestId).find((l) => l.msg === 'provider rejected the payment; discarded'),
      (line) => line !== undefined,
    );
    expect(rejected).toMatchObject({ requestId, workflowId: `payment-${rejected?.paymentId as string}` });
    const { d } = await describeWorkflow(rejected!.workflowId!);
    expect(d.memo).toEqual({ requestId });
    await statusBecomes(rejected!.workflowId!, PaymentStatusKey, 'discarded');
  });

  it('a refund and a subscription: their summaries, status attributes and request ids; an id the API made up is carried too', async () => {
    const paid = await send('POST', '/payments', {
      amount: 20,
      currency: 'EUR',
      externalId: unique('refundable'),
      customer: { email: 'customer@example.com' },
      cardToken: 'tok_success',
    });
    expect(paid.body.status).toBe('succeeded');
    // No X-Request-Id sent: the API's own id is the one in the answer and in the workflow.
    expect(paid.requestId).toMatch(/^req_/);
    expect((await describeWorkflow(paymentWorkflowId(paid.body.id as string))).d.memo).toEqual({
      requestId: paid.requestId,
    });

    const refundRequestId = unique('req-refund');
    const refundExternalId = unique('refund');
    const refund = await send(
      'POST',
      `/payments/${paid.body.id as string}/refund`,
      { externalId: refundExternalId, amount: 5 },
      refundRequestId,
    );
    expect(refund.body.status).toBe('succeeded');
    const refunded = await describeWorkflow(refundWorkflowId(refund.body.id as string));
    expect(refunded.summary).toBe(
      `Refund 5.00 EUR of ${paid.body.id as string} · merchant ${merchant.merchantId} · externalId ${refundExternalId}`,
    );
    expect(refunded.d.memo).toEqual({ requestId: refundRequestId });
    await statusBecomes(refundWorkflowId(refund.body.id as string), RefundStatusKey, 'settled');

    const subscriptionRequestId = unique('req-subscription');
    const subscriptionExternalId = unique('plan');
    const subscription = await send(
      'POST',
      '/subscriptions',
      {
        amount: 9.99,
        currency: 'EUR',
        billingIntervalDays: 30,
        externalId: subscriptionExternalId,
        customer: { email: 'customer@example.com', name: 'Ada' },
        cardToken: 'tok_success',
      },
      subscriptionRequestId,
    );
    expect(subscription.body.status).toBe('active');
    const subscribed = await describeWorkflow(subscriptionWorkflowId(subscription.body.id as string));
    expect(subscribed.summary).toBe(
      `Subscription 9.99 EUR every 30 days · test · merchant ${merchant.merchantId} · externalId ${subscriptionExternalId}`,
    );
    expect(subscribed.details).toContain('- Card: token given by the merchant');
    expect(subscribed.d.memo).toEqual({ requestId: subscriptionRequestId });
    await statusBecomes(subscriptionWorkflowId(subscription.body.id as string), SubscriptionStatusKey, 'active');
  });
});
