import http from 'node:http';
import type { AddressInfo } from 'node:net';
import Stripe from 'stripe';
import { createKey } from '../../src/domain/merchants';
import { paymentWorkflowId } from '../../workflows/paymentApi';
import { refundWorkflowId } from '../../workflows/refundApi';
import { subscriptionWorkflowId } from '../../workflows/subscriptionApi';
import { testStack } from '../setup/stackInfo';
import { runCli } from '../helpers/cli';
import { call, eventually } from '../helpers/http';
import { startCallbackReceiver } from '../helpers/callbackReceiver';
import {
  basicAuth,
  createTestMerchant,
  startPaymentStack,
  type PaymentStack,
  type TestMerchant,
} from '../helpers/stack';
import { subscriptionClient } from '../helpers/subscriptions';

/**
 * Stripe webhooks for refunds and subscription invoice charges wake only the verifying secret's
 * merchant's records, in its mode (decision 0058, issue 42 item 8), and a Stripe payment decided
 * later by routed `payment_intent.*` webhooks (item 5), through the API, on stripe-mock.
 *
 * stripe-mock validates every request and answers fixtures (settled: a PaymentIntent succeeded, a
 * refund succeeded). A refund that stays pending, or a PaymentIntent processing, is something only
 * Stripe decides: a small proxy in front of stripe-mock sets the `status` of refunds (always
 * `pending` here) and, when a test says so, of PaymentIntents in its answers, as Stripe would answer
 * them. Everything else is stripe-mock's. "Woken" is observed where it happens: the signal in the
 * record's workflow history (a refund's or subscription's workflow reads Stripe on its own poll
 * too, so reads would not tell).
 */
const STRIPE_KEY = 'sk_test_4eC39HqLyjWDarjtT1zdp7dc';
const LIVE_KEY = 'sk_live_4eC39HqLyjWDarjtT1zdp7dc';
const SECRET_A = 'whsec_scoping_merchant_a';
const SECRET_A_TEST = 'whsec_scoping_merchant_a_test';
const SECRET_B = 'whsec_scoping_merchant_b';
const AMOUNT = 10.99; // stripe-mock's fixtures are 10.99 USD: reads answer that amount

/** stripe-mock behind a proxy that sets statuses Stripe decides (and hands it test keys only). */
async function stripeDeciding(target: string) {
  const statuses = { refund: 'pending', paymentIntent: null as string | null };
  const requests: string[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const headers = Object.fromEntries(
        Object.entries(req.headers).filter(([k]) => !['host', 'connection', 'content-length'].includes(k)),
      ) as Record<string, string>;
      if (headers.authorization === `Bearer ${LIVE_KEY}`) headers.authorization = `Bearer ${STRIPE_KEY}`;
      const body = Buffer.concat(chunks);
      const path = (req.url ?? '').split('?')[0]!;
      requests.push(`${req.method} ${path}`);
      fetch(`${target}${req.url}`, { method: req.method, headers, body: body.length > 0 ? body : undefined }).then(
        async (answer) => {
          let text = await answer.text();
          const status = path.startsWith('/v1/refunds')
            ? statuses.refund
            : path.startsWith('/v1/payment_intents') && !path.includes('/search')
              ? statuses.paymentIntent
              : null;
          if (answer.ok && status) {
            const json = JSON.parse(text) as { status?: string; data?: Array<{ status?: string }> };
            if (json.data) for (const item of json.data) item.status = status;
            else json.status = status;
            text = JSON.stringify(json);
          }
          res.writeHead(answer.status, { 'content-type': 'application/json' });
          res.end(text);
        },
        () => {
          res.writeHead(502);
          res.end();
        },
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    statuses,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

const sign = (payload: string, secret: string) => Stripe.webhooks.generateTestHeaderString({ payload, secret });

/** A Stripe event as Stripe posts it (the object trimmed to what the mapping reads). */
const stripeEvent = (type: string, object: Record<string, unknown>, livemode: boolean) =>
  JSON.stringify({
    id: `evt_${type.replace(/\W/g, '_')}_${Date.now()}`,
    object: 'event',
    type,
    api_version: '2026-10-28.endive',
    created: Math.floor(Date.now() / 1000),
    livemode,
    data: { object },
  });

const refundObject = (refundId: string, paymentId: string, status = 'succeeded') => ({
  id: 're_3PgafyB7WZ01zgkW0sWYuUz9',
  object: 'refund',
  amount: 100,
  currency: 'usd',
  status,
  payment_intent: 'pi_1PgafyB7WZ01zgkWSjxsAJo3',
  charge: 'ch_3PgafyB7WZ01zgkW0ZQcmvjC',
  reason: null,
  failure_reason: null,
  created: Math.floor(Date.now() / 1000),
  metadata: { refundId, paymentId, reference_id: 'r' },
});

const paymentIntentObject = (status: string, metadata: Record<string, string>) => ({
  id: 'pi_1PgafyB7WZ01zgkWSjxsAJo3',
  object: 'payment_intent',
  amount: 1099,
  amount_received: status === 'succeeded' ? 1099 : 0,
  currency: 'usd',
  status,
  next_action: null,
  last_payment_error: null,
  metadata,
});

describe('Stripe webhooks for refunds and invoice charges; a payment decided by routed webhooks', () => {
  let stack: PaymentStack;
  let stripe: Awaited<ReturnType<typeof stripeDeciding>>;
  let a: TestMerchant; // test-mode key
  let aLive: TestMerchant;
  let b: TestMerchant;
  let seq = 0;
  const ext = (what: string) => `scope-${what}-${Date.now()}-${++seq}`;

  const configure = (merchantId: string, secretKey: string, webhookSecret: string, environment: 'live' | 'test') =>
    runCli([
      'providers:set',
      '--merchant',
      merchantId,
      '--environment',
      environment,
      '--processor',
      'stripe',
      '--secret-key',
      secretKey,
      '--webhook-secret',
      webhookSecret,
    ]);
  const post = (merchantId: string, payload: string, secret: string) =>
    fetch(`${stack.api.baseUrl}/webhooks/stripe/${merchantId}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'stripe-signature': sign(payload, secret) },
      body: payload,
    });
  const pay = (who: TestMerchant, body: Record<string, unknown> = {}) =>
    call(stack.api.baseUrl, 'POST', '/payments', who.auth, {
      amount: AMOUNT,
      currency: 'USD',
      externalId: ext('pay'),
      customer: { email: 'customer@example.com' },
      cardToken: 'pm_1Pgc75B7WZ01zgkWlHVgdEGJ',
      ...body,
    });
  /** A captured Stripe payment of `who` with a refund Stripe holds pending (its workflow running). */
  const pendingRefund = async (who: TestMerchant) => {
    const paid = await pay(who);
    expect(paid.body).toMatchObject({ status: 'succeeded', processor: 'stripe' });
    const refund = await call(stack.api.baseUrl, 'POST', `/payments/${paid.body.id as string}/refund`, who.auth, {
      externalId: ext('refund'),
      amount: 1,
    });
    expect(refund.status).toBe(200);
    expect(refund.body).toMatchObject({ status: 'pending' });
    return { paymentId: paid.body.id as string, refundId: refund.body.id as string };
  };
  /** The signals named `name` in a workflow's history: each is a webhook that woke it. */
  const signals = async (workflowId: string, name: string) => {
    const history = await stack.api.client.workflow.getHandle(workflowId).fetchHistory();
    return (history.events ?? []).filter((e) => e.workflowExecutionSignaledEventAttributes?.signalName === name).length;
  };
  const signalled = (workflowId: string, name: string, before: number) =>
    eventually(
      () => signals(workflowId, name),
      (n) => n > before,
      10_000,
      100,
    );
  /** Long enough for a routed event to have been signalled (the route signals before answering). */
  const quiet = () => new Promise((resolve) => setTimeout(resolve, 500));
  const acknowledged = async (res: Response) => {
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ received: true });
  };

  beforeAll(async () => {
    stripe = await stripeDeciding(testStack().settledStripeApiBase);
    stack = await startPaymentStack('stripe-scoping', { callbackRetryInitialSeconds: 1 }, 3000, {
      stripeApiBase: stripe.url,
    });
    a = await createTestMerchant(stack.orm, 'Stripe merchant A');
    b = await createTestMerchant(stack.orm, 'Stripe merchant B');
    const { apiKey, secretKey } = await createKey(stack.orm.em.fork(), a.merchantId, {
      environment: 'live',
      role: 'merchant',
    });
    aLive = { ...a, publicKey: apiKey.publicKey, secretKey, auth: basicAuth(apiKey.publicKey, secretKey) };
    for (const [merchantId, key, secret, environment] of [
      [a.merchantId, LIVE_KEY, SECRET_A, 'live'],
      [a.merchantId, STRIPE_KEY, SECRET_A_TEST, 'test'],
      [b.merchantId, STRIPE_KEY, SECRET_B, 'test'],
    ] as const) {
      expect((await configure(merchantId, key, secret, environment)).code).toBe(0);
    }
  });
  afterAll(async () => {
    await stack?.close();
    await stripe?.close();
  });

  describe('refund events (refund.*, charge.refund.updated)', () => {
    it("merchant A's secret naming merchant B's refund: acknowledged, routed nowhere; B's refund is not woken and unchanged", async () => {
      const { paymentId, refundId } = await pendingRefund(b);
      const workflowId = refundWorkflowId(refundId);
      const before = await signals(workflowId, 'providerRefundEvent');
      for (const type of ['refund.updated', 'charge.refund.updated', 'refund.created']) {
        const payload = stripeEvent(type, refundObject(refundId, paymentId), false);
        // A's endpoint, A's test secret: B's refund is not A's.
        await acknowledged(await post(a.merchantId, payload, SECRET_A_TEST));
        // B's secret at A's endpoint does not verify: 400, nothing routed.
        expect((await post(a.merchantId, payload, SECRET_B)).status).toBe(400);
      }
      await quiet();
      expect(await signals(workflowId, 'providerRefundEvent')).toBe(before);
      const refund = await call(stack.api.baseUrl, 'GET', `/refunds/${refundId}`, b.auth);
      expect(refund.body).toMatchObject({ id: refundId, status: 'pending' });
      // The same event at B's endpoint with B's secret wakes B's refund.
      const own = stripeEvent('refund.updated', refundObject(refundId, paymentId), false);
      await acknowledged(await post(b.merchantId, own, SECRET_B));
      await signalled(workflowId, 'providerRefundEvent', before);
    });

    it('a test-mode refund event under the live secret (or a live refund under the test secret): routed nowhere', async () => {
      const { paymentId, refundId } = await pendingRefund(aLive);
      const workflowId = refundWorkflowId(refundId);
      const before = await signals(workflowId, 'providerRefundEvent');
      const testMode = stripeEvent('charge.refund.updated', refundObject(refundId, paymentId), false);
      const liveMode = stripeEvent('charge.refund.updated', refundObject(refundId, paymentId), true);
      for (const [payload, secret] of [
        [testMode, SECRET_A], // livemode false, verified by the live secret
        [liveMode, SECRET_A_TEST], // livemode true, verified by the test secret
        [testMode, SECRET_A_TEST], // test mode and test secret: but the refund is live
      ] as const) {
        await acknowledged(await post(a.merchantId, payload, secret));
      }
      await quiet();
      expect(await signals(workflowId, 'providerRefundEvent')).toBe(before);
      const refund = await call(stack.api.baseUrl, 'GET', `/refunds/${refundId}`, aLive.auth);
      expect(refund.body).toMatchObject({ id: refundId, status: 'pending' });
      await acknowledged(await post(a.merchantId, liveMode, SECRET_A));
      await signalled(workflowId, 'providerRefundEvent', before);
    });
  });

  it("a subscription invoice charge's payment_intent.* event under another merchant's secret: routed nowhere", async () => {
    const subs = subscriptionClient(stack, b);
    const created = await subs.create({
      amount: AMOUNT,
      billingIntervalDays: 30,
      cardToken: 'cus_QXg1o8vcGmoR32:pm_1Pgc75B7WZ01zgkWlHVgdEGJ',
    });
    expect(created.status).toBe(200);
    expect(created.body).toMatchObject({ status: 'active', processor: 'stripe' });
    const subscriptionId = created.body.id as string;
    const [invoice] = await subs.invoices(subscriptionId);
    expect(invoice).toMatchObject({ status: 'paid' });
    const workflowId = subscriptionWorkflowId(subscriptionId);
    const before = await signals(workflowId, 'providerInvoiceEvent');
    const metadata = { subscriptionId, invoiceId: invoice!.id, merchantId: b.merchantId };
    for (const type of ['payment_intent.succeeded', 'payment_intent.payment_failed', 'payment_intent.processing']) {
      const status = { 'payment_intent.payment_failed': 'requires_payment_method' }[type] ?? type.split('.')[1]!;
      const payload = stripeEvent(type, paymentIntentObject(status, metadata), false);
      await acknowledged(await post(a.merchantId, payload, SECRET_A_TEST));
    }
    // And live: A's live secret, a live event, B's test subscription.
    const live = stripeEvent('payment_intent.succeeded', paymentIntentObject('succeeded', metadata), true);
    await acknowledged(await post(a.merchantId, live, SECRET_A));
    await quiet();
    expect(await signals(workflowId, 'providerInvoiceEvent')).toBe(before);
    expect((await subs.get(subscriptionId)).body).toMatchObject({ status: 'active' });
    expect((await subs.invoices(subscriptionId)).map((i) => i.status)).toEqual(['paid']);
    // B's own secret at B's endpoint wakes B's subscription about its invoice.
    const own = stripeEvent('payment_intent.succeeded', paymentIntentObject('succeeded', metadata), false);
    await acknowledged(await post(b.merchantId, own, SECRET_B));
    await signalled(workflowId, 'providerInvoiceEvent', before);
    expect((await subs.invoices(subscriptionId)).map((i) => i.status)).toEqual(['paid']);
    expect((await subs.cancel(subscriptionId)).body.status).toBe('cancelled');
  });

  describe('a token payment Stripe decides later (item 5, API level)', () => {
    let receiver: Awaited<ReturnType<typeof startCallbackReceiver>>;
    beforeAll(async () => {
      receiver = await startCallbackReceiver();
    });
    afterAll(async () => {
      stripe.statuses.paymentIntent = null;
      await receiver.close();
    });
    const eventsOf = (id: string) => {
      const seen = new Map<string, string>();
      for (const r of receiver.received) {
        if ((r.json.data as { id?: unknown }).id === id) seen.set(r.json.id as string, r.json.type as string);
      }
      return [...seen.values()];
    };

    it('answered processing: 200 processing, payment.processing; the routed payment_intent.processing keeps it; payment_intent.succeeded settles it, with payment.succeeded', async () => {
      stripe.statuses.paymentIntent = 'processing';
      const created = await pay(a, { callbackUrl: receiver.url });
      expect(created.status).toBe(200);
      expect(created.body).toMatchObject({ status: 'processing', processor: 'stripe', amount: AMOUNT });
      const id = created.body.id as string;
      const workflowId = paymentWorkflowId(id);
      await eventually(
        async () => eventsOf(id),
        (types) => types.includes('payment.processing'),
        20_000,
        200,
      );
      const metadata = { paymentId: id, merchantId: a.merchantId };
      // Stripe says processing, and so does the PaymentIntent when the workflow asks.
      const before = await signals(workflowId, 'providerPaymentEvent');
      const processing = stripeEvent('payment_intent.processing', paymentIntentObject('processing', metadata), false);
      await acknowledged(await post(a.merchantId, processing, SECRET_A_TEST));
      await signalled(workflowId, 'providerPaymentEvent', before);
      await quiet();
      expect((await call(stack.api.baseUrl, 'GET', `/payments/${id}`, a.auth)).body).toMatchObject({
        status: 'processing',
      });
      // Stripe decides: the PaymentIntent succeeded; its webhook is routed to the payment, whose
      // workflow asks Stripe at once (its own poll is a minute away).
      stripe.statuses.paymentIntent = 'succeeded';
      const reads = stripe.requests.filter((r) => r.startsWith('GET /v1/payment_intents/')).length;
      const succeeded = stripeEvent('payment_intent.succeeded', paymentIntentObject('succeeded', metadata), false);
      const sentAt = Date.now();
      await acknowledged(await post(a.merchantId, succeeded, SECRET_A_TEST));
      const done = await eventually(
        () => call(stack.api.baseUrl, 'GET', `/payments/${id}`, a.auth),
        (r) => r.body.status !== 'processing',
        20_000,
        100,
      );
      expect(Date.now() - sentAt).toBeLessThan(30_000);
      expect(done.body).toMatchObject({ id, status: 'succeeded', amount: AMOUNT });
      expect(stripe.requests.filter((r) => r.startsWith('GET /v1/payment_intents/')).length).toBeGreaterThan(reads);
      const types = await eventually(
        async () => eventsOf(id),
        (t) => t.includes('payment.succeeded'),
        20_000,
        200,
      );
      expect(types.filter((t) => t === 'payment.processing')).toHaveLength(1);
      expect(types.filter((t) => t === 'payment.succeeded')).toHaveLength(1);
      expect(types.indexOf('payment.processing')).toBeLessThan(types.indexOf('payment.succeeded'));
    });
  });
});
