import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { removeProvider } from '../../src/domain/merchantProviders';
import { subscriptionWorkflowId } from '../../workflows/subscriptionApi';
import { testStack } from '../setup/stackInfo';
import { runCli } from '../helpers/cli';
import { call, eventually } from '../helpers/http';
import { createTestMerchant, startPaymentStack, type PaymentStack, type TestMerchant } from '../helpers/stack';
import { subscriptionClient } from '../helpers/subscriptions';

/**
 * A merchant's provider configuration removed with the operator CLI (`providers:remove`, PRODUCT.md
 * "Providers") while its Stripe subscriptions are mid-way: records keep the processor that served
 * them, so theirs is gone. The hosted card authorization of a new subscription and a card update
 * are retried, never failed (issue 42, F2); the API answers with its codes, never a 500; once the
 * configuration is set again (`providers:set`) they go on. Stripe is stripe-mock (settled fixtures)
 * behind a proxy that can answer 429 (Stripe's "rate limited: nothing done"), to hold a request
 * before the removal, and can show a Checkout Session still open (the customer not done yet).
 */
const STRIPE_KEY = 'sk_test_4eC39HqLyjWDarjtT1zdp7dc';
const WEBHOOK_SECRET = 'whsec_provider_removed';
const AMOUNT = 10.99;
const AUTHORIZATION_EXPIRY_SECONDS = 4;

async function stripeProxy(target: string) {
  const state = { rateLimited: false, openSessions: false };
  const requests: string[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      requests.push(`${req.method} ${(req.url ?? '').split('?')[0]}`);
      if (state.rateLimited) {
        res.writeHead(429, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { type: 'invalid_request_error', code: 'rate_limit', message: 'Too many' } }));
        return;
      }
      const headers = Object.fromEntries(
        Object.entries(req.headers).filter(([k]) => !['host', 'connection', 'content-length'].includes(k)),
      ) as Record<string, string>;
      const body = Buffer.concat(chunks);
      fetch(`${target}${req.url}`, { method: req.method, headers, body: body.length > 0 ? body : undefined }).then(
        async (answer) => {
          let text = await answer.text();
          if (answer.ok && state.openSessions && (req.url ?? '').startsWith('/v1/checkout/sessions')) {
            // Not completed yet by the customer (stripe-mock's settled session is complete).
            const session = JSON.parse(text) as Record<string, unknown>;
            text = JSON.stringify({ ...session, status: 'open', setup_intent: null });
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
    state,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

describe('a Stripe configuration removed with providers:remove mid-way', () => {
  let stack: PaymentStack;
  let stripe: Awaited<ReturnType<typeof stripeProxy>>;
  let merchant: TestMerchant;
  let subs: ReturnType<typeof subscriptionClient>;

  const set = async () => {
    const r = await runCli([
      'providers:set',
      '--merchant',
      merchant.merchantId,
      '--environment',
      'test',
      '--processor',
      'stripe',
      '--secret-key',
      STRIPE_KEY,
      '--webhook-secret',
      WEBHOOK_SECRET,
    ]);
    expect(r.code).toBe(0);
  };
  const remove = async () => {
    const r = await runCli(['providers:remove', '--merchant', merchant.merchantId, '--environment', 'test']);
    expect(r.code).toBe(0);
    expect(r.json).toEqual({ removed: true });
  };
  const describeWorkflow = (id: string) => stack.api.client.workflow.getHandle(subscriptionWorkflowId(id)).describe();
  const history = async (id: string) =>
    (await stack.api.client.workflow.getHandle(subscriptionWorkflowId(id)).fetchHistory()).events ?? [];

  beforeAll(async () => {
    stripe = await stripeProxy(testStack().settledStripeApiBase);
    stack = await startPaymentStack(
      'provider-removed',
      { subscriptionAuthorizationExpirySeconds: AUTHORIZATION_EXPIRY_SECONDS },
      3000,
      // No provider cache (15 s in production), so the removal takes effect at once.
      { stripeApiBase: stripe.url, cacheTtlMs: 0 },
    );
    merchant = await createTestMerchant(stack.orm, 'Provider removed merchant');
    subs = subscriptionClient(stack, merchant);
  });
  afterAll(async () => {
    await stack?.close();
    await stripe?.close();
  });

  it('the hosted card authorization of a new subscription: retried while removed (no 500, never failed), then the page is created and it goes on', async () => {
    await set();
    // Stripe holds the first request (429: nothing done), so the page is still to be requested
    // when the configuration goes: the create answers 503 with the subscription, asked again later.
    stripe.state.rateLimited = true;
    const created = await subs.create({ amount: AMOUNT, billingIntervalDays: 30, returnUrl: 'https://shop.example/s' });
    expect(created.status).toBe(503);
    expect(created.body).toMatchObject({
      code: 'provider_unavailable',
      details: { subscription: { status: 'created', processor: 'stripe', redirectUrl: null } },
    });
    const id = (created.body.details as { subscription: { id: string } }).subscription.id;
    stripe.state.rateLimited = false;
    await remove();
    const asked = stripe.requests.length;

    // Its next tries find no provider (nothing reaches Stripe): retried at growing intervals.
    await eventually(
      async () => (await history(id)).filter((e) => e.timerStartedEventAttributes).length,
      (timers) => timers >= 2,
      30_000,
      250,
    );
    expect(stripe.requests.length).toBe(asked);
    const waiting = await subs.get(id);
    expect(waiting.status).toBe(200);
    expect(waiting.body).toMatchObject({ id, status: 'created', processor: 'stripe', redirectUrl: null });
    expect((await describeWorkflow(id)).status.name).toBe('RUNNING');
    // The same create again: the subscription as it is, never a 500.
    const again = await subs.create({
      amount: AMOUNT,
      billingIntervalDays: 30,
      returnUrl: 'https://shop.example/s',
      externalId: created.body.details.subscription.externalId,
    });
    expect(again.status).toBe(503);
    expect(again.body).toMatchObject({
      code: 'provider_unavailable',
      details: { subscription: { id, status: 'created' } },
    });

    // Configured again: the page is requested under the same key, then (stripe-mock's setup
    // sessions are complete) the card found authorized at the page's expiry and charged.
    await set();
    const active = await subs.until(id, (s) => s.status === 'active', 60_000);
    expect(active.latestInvoice).toMatchObject({ status: 'paid', attempts: 1 });
    const sessions = stripe.requests.slice(asked).filter((r) => r === 'POST /v1/checkout/sessions');
    expect(sessions).toHaveLength(1);
    expect((await subs.cancel(id)).body.status).toBe('cancelled');
  }, 120_000);

  it('a card update: answered without a 500 and retried while removed, never failed; then the page is closed and it goes on', async () => {
    await set();
    const created = await subs.create({
      amount: AMOUNT,
      billingIntervalDays: 30,
      cardToken: 'cus_QXg1o8vcGmoR32:pm_1Pgc75B7WZ01zgkWlHVgdEGJ',
      returnUrl: 'https://shop.example/card',
    });
    expect(created.body).toMatchObject({ status: 'active', processor: 'stripe' });
    const id = created.body.id as string;
    const update = (body: Record<string, unknown>) =>
      call(stack.api.baseUrl, 'POST', `/subscriptions/${id}/payment-method`, merchant.auth, body);
    stripe.state.openSessions = true;
    const hosted = await update({});
    expect(hosted.status).toBe(200);
    expect(hosted.body).toMatchObject({ id, status: 'active', redirectUrl: expect.any(String) });
    // Removed in-process (what providers:remove does), well inside the page's 4 s: the CLI's own
    // start can outlast it on a loaded machine, and the page would close with the provider still there.
    expect(await removeProvider(stack.orm.em.fork(), merchant.merchantId, 'test')).toBe(true);

    // A new card by token while the configuration is gone: nothing can verify it, nothing
    // changes; 503 provider_unavailable with the subscription (retry later), never a 500.
    const token = await update({ cardToken: 'pm_1Pgc75B7WZ01zgkWlHVgdEGJ' });
    expect(token.status).toBe(503);
    expect(token.headers.get('retry-after')).toBe('1');
    expect(token.body).toMatchObject({
      code: 'provider_unavailable',
      details: { subscription: { id, status: 'active', redirectUrl: hosted.body.redirectUrl } },
    });
    const asked = stripe.requests.length;

    // The page's time is up: closing it needs the provider; asked again and again, never failed.
    const closing = await eventually(
      async () =>
        (await describeWorkflow(id)).raw.pendingActivities?.find((a) => a.activityType?.name === 'closeCardUpdate'),
      (a) => (a?.attempt ?? 0) >= 2,
      30_000,
      250,
    );
    expect(closing!.lastFailure?.message).toContain('no provider');
    expect((await describeWorkflow(id)).status.name).toBe('RUNNING');
    expect(stripe.requests.length).toBe(asked);
    const waiting = await subs.get(id);
    expect(waiting.status).toBe(200);
    expect(waiting.body).toMatchObject({ id, status: 'active' });

    // Configured again (the customer had completed the page meanwhile): the page is closed at
    // Stripe (read: complete, so its card is kept), and the subscription goes on, active.
    stripe.state.openSessions = false;
    await set();
    await eventually(
      async () => (await describeWorkflow(id)).raw.pendingActivities ?? [],
      (pending) => !pending.some((a) => a.activityType?.name === 'closeCardUpdate'),
      60_000,
      250,
    );
    expect(stripe.requests.slice(asked).some((r) => r.startsWith('GET /v1/checkout/sessions/'))).toBe(true);
    const after = await subs.get(id);
    expect(after.body).toMatchObject({ id, status: 'active', processor: 'stripe' });
    expect((await describeWorkflow(id)).status.name).toBe('RUNNING');
    expect((await subs.cancel(id)).body.status).toBe('cancelled');
  }, 120_000);
});
