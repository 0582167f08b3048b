import { newId } from '../../src/ids';
import Stripe from 'stripe';
import { createKey } from '../../src/domain/merchants';
import { testStack } from '../setup/stackInfo';
import { runCli } from '../helpers/cli';
import { call, eventually } from '../helpers/http';
import { startRecordingProxy } from '../helpers/recordingProxy';
import {
  basicAuth,
  createTestMerchant,
  startPaymentStack,
  type PaymentStack,
  type TestMerchant,
} from '../helpers/stack';
import { subscriptionClient } from '../helpers/subscriptions';

/**
 * Going live (issue 11): a merchant's live key, configured for Stripe with the operator CLI,
 * through the whole product to Stripe's own mock server. stripe-mock validates every request
 * against Stripe's OpenAPI spec (an invalid one is a 400, which would surface as our 400
 * `provider_rejected`), and is stateless: one instance answers its bundled fixtures (a card
 * payment comes back declined, a Checkout Session open), the other the settled fixtures of
 * dev/infra/stripeMock.ts (a PaymentIntent succeeded, a session a completed card authorization), so a payment can be captured and refunded.
 * A recording proxy in front of each keeps what was really sent.
 */
const STRIPE_KEY = 'sk_test_4eC39HqLyjWDarjtT1zdp7dc';
/**
 * The live key the merchants are configured with (a test key is refused for live): the recording
 * proxies hand stripe-mock, which takes test keys only, STRIPE_KEY in its place.
 */
const LIVE_KEY = 'sk_live_4eC39HqLyjWDarjtT1zdp7dc';
const WEBHOOK_SECRET = 'whsec_merchant_test_secret';
// stripe-mock's fixtures are 10.99 USD: reads (not creates) of a PaymentIntent answer that amount.
const AMOUNT = 10.99;

/** A Stripe event about a Checkout Session, as Stripe posts it (the object trimmed). */
function sessionCompleted(session: Record<string, unknown>): string {
  return JSON.stringify({
    id: 'evt_test_1',
    object: 'event',
    type: 'checkout.session.completed',
    api_version: '2026-10-28.endive',
    created: Math.floor(Date.now() / 1000),
    livemode: true,
    data: {
      object: {
        id: 'cs_test_a1',
        object: 'checkout.session',
        mode: 'payment',
        status: 'complete',
        payment_status: 'paid',
        amount_total: 1099,
        currency: 'usd',
        url: null,
        payment_intent: 'pi_test_1',
        customer: null,
        setup_intent: null,
        ...session,
      },
    },
  });
}

const postStripeWebhook = (apiBase: string, merchantId: string, payload: string, signature: string) =>
  fetch(`${apiBase}/webhooks/stripe/${merchantId}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'stripe-signature': signature },
    body: payload,
  });
const sign = (payload: string, secret = WEBHOOK_SECRET) =>
  Stripe.webhooks.generateTestHeaderString({ payload, secret });

describe('Stripe for a live key (through stripe-mock)', () => {
  let settled: PaymentStack;
  let bundled: PaymentStack;
  let settledProxy: Awaited<ReturnType<typeof startRecordingProxy>>;
  let bundledProxy: Awaited<ReturnType<typeof startRecordingProxy>>;
  let merchant: TestMerchant;
  let live: TestMerchant;
  let counter = 0;
  const externalId = (what: string) => `stripe-${what}-${Date.now()}-${++counter}`;

  const configure = (
    merchantId: string,
    secretKey = LIVE_KEY,
    webhookSecret = WEBHOOK_SECRET,
    environment: 'live' | 'test' = 'live',
  ) =>
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
  const liveKeyOf = async (m: TestMerchant): Promise<TestMerchant> => {
    const { apiKey, secretKey } = await createKey(settled.orm.em.fork(), m.merchantId, {
      environment: 'live',
      role: 'merchant',
    });
    return { ...m, publicKey: apiKey.publicKey, secretKey, auth: basicAuth(apiKey.publicKey, secretKey) };
  };
  const pay = (stack: PaymentStack, who: TestMerchant, body: Record<string, unknown>) =>
    call(stack.api.baseUrl, 'POST', '/payments', who.auth, {
      amount: AMOUNT,
      currency: 'USD',
      externalId: externalId('pay'),
      customer: { email: 'customer@example.com' },
      ...body,
    });
  const sent = (proxy: typeof settledProxy, path: string, key: string) =>
    proxy.requests.filter((r) => r.method === 'POST' && r.path === path && r.headers['idempotency-key'] === key);

  beforeAll(async () => {
    [settledProxy, bundledProxy] = await Promise.all([
      startRecordingProxy(testStack().settledStripeApiBase, { [LIVE_KEY]: STRIPE_KEY }),
      startRecordingProxy(testStack().stripeApiBase, { [LIVE_KEY]: STRIPE_KEY }),
    ]);
    [settled, bundled] = await Promise.all([
      startPaymentStack('stripe-settled', {}, 3000, { stripeApiBase: settledProxy.url }),
      startPaymentStack('stripe-bundled', {}, 3000, { stripeApiBase: bundledProxy.url }),
    ]);
    merchant = await createTestMerchant(settled.orm, 'Stripe merchant');
    live = await liveKeyOf(merchant);
    const set = await configure(merchant.merchantId);
    expect(set.code).toBe(0);
    expect(set.stdout).not.toContain(LIVE_KEY);
    expect(set.json.provider).toMatchObject({
      merchantId: merchant.merchantId,
      environment: 'live',
      processor: 'stripe',
    });
  });
  afterAll(async () => {
    await Promise.all([settled?.close(), bundled?.close()]);
    await Promise.all([settledProxy?.close(), bundledProxy?.close()]);
  });

  it('takes a token payment off-session with our id as the idempotency key, and answers a repeat with it', async () => {
    const ext = externalId('token');
    const paid = await pay(settled, live, {
      externalId: ext,
      cardToken: 'cus_QXg1o8vcGmoR32:pm_1Pgc75B7WZ01zgkWlHVgdEGJ',
    });
    expect(paid.status).toBe(200);
    expect(paid.body).toMatchObject({ status: 'succeeded', processor: 'stripe', amount: AMOUNT, currency: 'USD' });
    const id = paid.body.id as string;

    const [create, ...more] = sent(settledProxy, '/v1/payment_intents', id);
    expect(more).toEqual([]);
    expect(create!.status).toBe(200);
    expect(create!.form).toMatchObject({
      amount: '1099',
      currency: 'usd',
      customer: 'cus_QXg1o8vcGmoR32',
      payment_method: 'pm_1Pgc75B7WZ01zgkWlHVgdEGJ',
      confirm: 'true',
      off_session: 'true',
      'metadata[paymentId]': id,
      'metadata[merchantId]': merchant.merchantId,
      'metadata[reference_id]': ext,
    });

    const repeat = await pay(settled, live, {
      externalId: ext,
      cardToken: 'cus_QXg1o8vcGmoR32:pm_1Pgc75B7WZ01zgkWlHVgdEGJ',
    });
    expect(repeat.status).toBe(200);
    expect(repeat.body).toMatchObject({ id, status: 'succeeded' });
    expect(sent(settledProxy, '/v1/payment_intents', id)).toHaveLength(1);
  });

  it('a token payment whose answer was lost: 503; found again by replaying the same request under the same key, no list', async () => {
    const ext = externalId('lost');
    settledProxy.loseNextAnswer((r) => r.method === 'POST' && r.path === '/v1/payment_intents');
    const first = await pay(settled, live, { externalId: ext, cardToken: 'pm_1Pgc75B7WZ01zgkWlHVgdEGJ' });
    expect(first.status).toBe(503);
    expect(first.body).toMatchObject({ code: 'provider_unavailable' });
    const id = (first.body.details as { payment: { id: string } }).payment.id;
    // The workflow asks Stripe what became of it by sending the very same request under the same
    // key (Stripe answers the original outcome within 24 h): the payment follows, no list scanned.
    const done = await eventually(
      () => call(settled.api.baseUrl, 'GET', `/payments/${id}`, live.auth),
      (r) => r.body.status !== 'created',
      20_000,
      250,
    );
    expect(done.body).toMatchObject({ id, status: 'succeeded', processor: 'stripe' });
    const repeated = await pay(settled, live, { externalId: ext, cardToken: 'pm_1Pgc75B7WZ01zgkWlHVgdEGJ' });
    expect(repeated.body).toMatchObject({ id, status: 'succeeded' });
    const lists = settledProxy.requests.filter(
      (r) => r.method === 'GET' && (r.path.startsWith('/v1/payment_intents?') || r.path.includes('created')),
    );
    expect(lists).toEqual([]);
    const creates = sent(settledProxy, '/v1/payment_intents', id);
    expect(creates).toHaveLength(2);
    expect(creates[1]!.form).toEqual(creates[0]!.form);
  });

  it('refunds through Stripe Refunds, idempotent by our refund id, with reference_id and our ids in metadata', async () => {
    const paid = await pay(settled, live, { cardToken: 'pm_1Pgc75B7WZ01zgkWlHVgdEGJ' });
    expect(paid.body.status).toBe('succeeded');
    const paymentId = paid.body.id as string;
    const ext = externalId('refund');
    const refund = await call(settled.api.baseUrl, 'POST', `/payments/${paymentId}/refund`, live.auth, {
      externalId: ext,
      amount: 1,
    });
    expect(refund.status).toBe(200);
    expect(refund.body).toMatchObject({ status: 'succeeded', amount: 1, paymentAmountRefunded: 1 });
    const refundId = refund.body.id as string;
    const [create, ...more] = sent(settledProxy, '/v1/refunds', refundId);
    expect(more).toEqual([]);
    expect(create!.status).toBe(200);
    expect(create!.form).toMatchObject({
      amount: '100',
      'metadata[refundId]': refundId,
      'metadata[paymentId]': paymentId,
      'metadata[reference_id]': ext,
    });
    expect(create!.form.payment_intent).toMatch(/^pi_/);

    const again = await call(settled.api.baseUrl, 'POST', `/payments/${paymentId}/refund`, live.auth, {
      externalId: ext,
      amount: 1,
    });
    expect(again.body).toMatchObject({ id: refundId, status: 'succeeded' });
    expect(sent(settledProxy, '/v1/refunds', refundId)).toHaveLength(1);
    const payment = await call(settled.api.baseUrl, 'GET', `/payments/${paymentId}`, live.auth);
    expect(payment.body).toMatchObject({ status: 'partially_refunded', amountRefunded: 1 });
  });

  it('runs a subscription whose charges are off-session PaymentIntents keyed by invoice attempt', async () => {
    const subs = subscriptionClient(settled, live);
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
    const charges = settledProxy.requests.filter(
      (r) => r.path === '/v1/payment_intents' && r.form['metadata[subscriptionId]'] === subscriptionId,
    );
    expect(charges).toHaveLength(1);
    expect(charges[0]!.form).toMatchObject({
      off_session: 'true',
      'metadata[invoiceId]': invoice!.id,
      customer: 'cus_QXg1o8vcGmoR32',
    });
    expect(charges[0]!.headers['idempotency-key']).toContain(invoice!.id);

    const cancelled = await subs.cancel(subscriptionId);
    expect(cancelled.status).toBe(200);
    expect(cancelled.body.status).toBe('cancelled');
  });

  it('authorizes a subscription card on a Checkout Session in setup mode, then charges the saved card', async () => {
    const subs = subscriptionClient(settled, live);
    const created = await subs.create({
      amount: AMOUNT,
      billingIntervalDays: 30,
      returnUrl: 'https://shop.example.com/sub',
    });
    expect(created.status).toBe(200);
    const subscriptionId = created.body.id as string;
    const [customer] = settledProxy.requests.filter(
      (r) => r.path === '/v1/customers' && r.headers['idempotency-key'] === `${subscriptionId}:customer`,
    );
    expect(customer?.status).toBe(200);
    const [session] = sent(settledProxy, '/v1/checkout/sessions', subscriptionId);
    expect(session?.status).toBe(200);
    expect(session!.form).toMatchObject({ mode: 'setup', 'metadata[subscriptionId]': subscriptionId });
    // The customer completes the page; Stripe's webhook wakes the workflow, which reads the
    // session: stripe-mock's settled SetupIntent holds a PaymentMethod of a Customer, so the card
    // is saved as `cus_...:pm_...` and the first period is charged with it, off-session.
    const payload = sessionCompleted({
      mode: 'setup',
      payment_status: 'no_payment_required',
      amount_total: null,
      payment_intent: null,
      customer: 'cus_QXg1o8vcGmoR32',
      setup_intent: 'seti_1',
      metadata: { subscriptionId },
    });
    const hook = await postStripeWebhook(settled.api.baseUrl, merchant.merchantId, payload, sign(payload));
    expect(hook.status).toBe(200);
    const active = await subs.until(subscriptionId, (b) => b.status === 'active');
    expect(active).toMatchObject({ processor: 'stripe' });
    const charges = settledProxy.requests.filter(
      (r) => r.path === '/v1/payment_intents' && r.form['metadata[subscriptionId]'] === subscriptionId,
    );
    expect(charges.map((c) => [c.form.customer, c.form.payment_method, c.form.off_session])).toEqual([
      ['cus_QXg1o8vcGmoR32', 'pm_1Pgc75B7WZ01zgkWlHVgdEGJ', 'true'],
    ]);
    expect((await subs.cancel(subscriptionId)).body.status).toBe('cancelled');
  });

  it("a customer's card: a Stripe Customer and the PaymentMethod attached to it, then charged by customerId (decision 0087)", async () => {
    const created = await call(settled.api.baseUrl, 'POST', '/customers', live.auth, {
      externalId: externalId('customer'),
      email: 'ada@example.com',
      name: 'Ada',
    });
    expect(created.status).toBe(200);
    const customerId = created.body.id as string;
    const attached = await call(settled.api.baseUrl, 'POST', `/customers/${customerId}/payment-methods`, live.auth, {
      cardToken: 'pm_1Pgc75B7WZ01zgkWlHVgdEGJ',
    });
    expect(attached.status).toBe(200);
    expect(attached.body).toMatchObject({
      id: expect.stringMatching(/^pm_[0-9A-HJKMNP-TV-Z]{26}$/),
      customerId,
      processor: 'stripe',
      card: { brand: expect.any(String), last4: expect.stringMatching(/^\d{4}$/) },
    });
    const pmId = attached.body.id as string;
    const [customerCreate] = sent(settledProxy, '/v1/customers', `${customerId}:customer`);
    expect(customerCreate!.form).toMatchObject({
      email: 'ada@example.com',
      name: 'Ada',
      'metadata[customerId]': customerId,
    });
    expect(sent(settledProxy, '/v1/payment_methods/pm_1Pgc75B7WZ01zgkWlHVgdEGJ/attach', pmId)).toHaveLength(1);

    const paid = await pay(settled, live, { customer: undefined, customerId });
    expect(paid.status).toBe(200);
    expect(paid.body).toMatchObject({
      status: 'succeeded',
      processor: 'stripe',
      customerId,
      paymentMethodId: pmId,
      customer: { email: 'ada@example.com', name: 'Ada' },
    });
    const [charge] = sent(settledProxy, '/v1/payment_intents', paid.body.id as string);
    expect(charge!.form).toMatchObject({
      customer: expect.stringMatching(/^cus_/),
      payment_method: expect.stringMatching(/^pm_/),
      off_session: 'true',
      'metadata[paymentMethodId]': pmId,
    });

    const deleted = await call(
      settled.api.baseUrl,
      'DELETE',
      `/customers/${customerId}/payment-methods/${pmId}`,
      live.auth,
    );
    expect(deleted.body).toMatchObject({ id: pmId, deleted: true });
    expect(
      settledProxy.requests.filter((r) => r.method === 'POST' && r.path.endsWith('/detach')).length,
    ).toBeGreaterThan(0);
  });

  it('creates a hosted payment as a Checkout Session: redirectUrl is its URL, success and cancel go to returnUrl', async () => {
    const created = await pay(bundled, live, { returnUrl: 'https://shop.example.com/done' });
    expect(created.status).toBe(200);
    expect(created.body).toMatchObject({ status: 'created', processor: 'stripe' });
    expect(created.body.redirectUrl).toMatch(/^https:\/\/checkout\.stripe\.com\//);
    const id = created.body.id as string;
    const [session] = sent(bundledProxy, '/v1/checkout/sessions', id);
    expect(session!.status).toBe(200);
    expect(session!.form).toMatchObject({
      mode: 'payment',
      success_url: 'https://shop.example.com/done',
      cancel_url: 'https://shop.example.com/done',
      'line_items[0][price_data][unit_amount]': '1099',
      'line_items[0][price_data][currency]': 'usd',
      'metadata[paymentId]': id,
      'payment_intent_data[metadata][paymentId]': id,
    });
    // Within Stripe's 30 min .. 24 h, from the payment's own expiry.
    const expiresAt = Number(session!.form.expires_at) * 1000;
    expect(expiresAt).toBeGreaterThan(Date.now() + 29 * 60_000);
    expect(expiresAt).toBeLessThanOrEqual(Date.now() + 24 * 3600_000);
  });

  it('answers a declined card payment as failed with Stripe decline information', async () => {
    // stripe-mock's bundled PaymentIntent is `requires_payment_method` after the confirmation.
    const declined = await pay(bundled, live, { cardToken: 'pm_1Pgc75B7WZ01zgkWlHVgdEGJ' });
    expect(declined.status).toBe(200);
    expect(declined.body).toMatchObject({ status: 'failed', processor: 'stripe', failureCode: 'payment_failed' });
  });

  it('a token payment with a returnUrl is confirmed on-session with it as return_url (3-D Secure can redirect)', async () => {
    const paid = await pay(settled, live, {
      cardToken: 'cus_QXg1o8vcGmoR32:pm_1Pgc75B7WZ01zgkWlHVgdEGJ',
      returnUrl: 'https://shop.example.com/after-3ds',
    });
    expect(paid.status).toBe(200);
    expect(paid.body).toMatchObject({ status: 'succeeded', processor: 'stripe' });
    const [create] = sent(settledProxy, '/v1/payment_intents', paid.body.id as string);
    expect(create!.status).toBe(200);
    expect(create!.form).toMatchObject({ confirm: 'true', return_url: 'https://shop.example.com/after-3ds' });
    expect(create!.form.off_session).toBeUndefined();
  });

  it('refuses a card token that is not a Stripe PaymentMethod with 400 invalid_card_token, keeping nothing', async () => {
    const ext = externalId('badtoken');
    const bad = await pay(settled, live, { externalId: ext, cardToken: 'tok_success' });
    expect(bad.status).toBe(400);
    expect(bad.body).toMatchObject({ code: 'invalid_card_token' });
    const good = await pay(settled, live, { externalId: ext, cardToken: 'pm_1Pgc75B7WZ01zgkWlHVgdEGJ' });
    expect(good.body).toMatchObject({ status: 'succeeded' });
  });

  it('a Stripe key refused by Stripe is 500 provider_not_configured; the externalId stays free', async () => {
    const m = await createTestMerchant(settled.orm, 'Stripe merchant, bad key');
    const who = await liveKeyOf(m);
    // stripe-mock refuses live keys (401), as Stripe refuses a revoked or mistyped one.
    expect((await configure(m.merchantId, 'sk_live_revoked')).code).toBe(0);
    const ext = externalId('badkey');
    const refused = await pay(settled, who, { externalId: ext, cardToken: 'pm_1Pgc75B7WZ01zgkWlHVgdEGJ' });
    expect(refused.status).toBe(500);
    expect(refused.body).toMatchObject({ code: 'provider_not_configured' });
    expect(JSON.stringify(refused.body)).not.toContain('sk_live');

    expect((await configure(m.merchantId)).code).toBe(0);
    const fixed = await pay(settled, who, { externalId: ext, cardToken: 'pm_1Pgc75B7WZ01zgkWlHVgdEGJ' });
    expect(fixed.status).toBe(200);
    expect(fixed.body).toMatchObject({ status: 'succeeded', processor: 'stripe' });
  });

  describe('webhooks at /webhooks/stripe/{merchantId}', () => {
    const event = (metadata: Record<string, string>) => sessionCompleted({ metadata });
    const post = (merchantId: string, payload: string, signature: string) =>
      postStripeWebhook(bundled.api.baseUrl, merchantId, payload, signature);

    it('verifies the raw body with the merchant webhook secret and signals the payment workflow', async () => {
      const created = await pay(bundled, live, { returnUrl: 'https://shop.example.com/done' });
      const session = created.body.providerTransactionId as string;
      const reads = () =>
        bundledProxy.requests.filter(
          (r) => r.method === 'GET' && r.path.startsWith(`/v1/checkout/sessions/${session}`),
        );
      const before = reads().length;
      const payload = event({ paymentId: created.body.id as string, merchantId: merchant.merchantId });
      const res = await post(merchant.merchantId, payload, sign(payload));
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual({ received: true });
      // The event is a hint: the payment's workflow reads the session from Stripe itself.
      await eventually(
        async () => reads().length,
        (n) => n > before,
        10_000,
        100,
      );
      expect(reads().every((r) => r.status === 200)).toBe(true);
    });

    /** Reads of a Checkout Session at Stripe: what a woken payment workflow does first. */
    const sessionReads = (session: string) =>
      bundledProxy.requests.filter((r) => r.method === 'GET' && r.path.startsWith(`/v1/checkout/sessions/${session}`))
        .length;
    const woken = (session: string, before: number) =>
      eventually(
        async () => sessionReads(session),
        (n) => n > before,
        10_000,
        100,
      );
    /** Long enough for a signalled workflow to have read its session (it does within ~100 ms). */
    const quiet = () => new Promise((resolve) => setTimeout(resolve, 1500));

    describe("only records of the verifying secret's merchant, environment and mode", () => {
      let other: TestMerchant;
      const OTHER_SECRET = 'whsec_other_merchant_secret';
      const TEST_SECRET = 'whsec_merchant_test_mode_secret';

      beforeAll(async () => {
        const m = await createTestMerchant(settled.orm, 'Stripe merchant B');
        other = await liveKeyOf(m);
        expect((await configure(m.merchantId, LIVE_KEY, OTHER_SECRET)).code).toBe(0);
        // Merchant A's test environment on Stripe too, with its own endpoint secret.
        expect((await configure(merchant.merchantId, STRIPE_KEY, TEST_SECRET, 'test')).code).toBe(0);
      });

      it("merchant A's secret naming merchant B's payment: acknowledged, B's workflow is not woken", async () => {
        const created = await pay(bundled, other, { returnUrl: 'https://shop.example.com/b' });
        expect(created.status).toBe(200);
        const session = created.body.providerTransactionId as string;
        await quiet();
        const before = sessionReads(session);
        const payload = event({ paymentId: created.body.id as string, merchantId: other.merchantId });
        // A's endpoint and secret: B's payment is not A's.
        const res = await post(merchant.merchantId, payload, sign(payload));
        expect(res.status).toBe(200);
        expect(await res.json()).toEqual({ received: true });
        // B's secret at A's endpoint does not even verify.
        expect((await post(merchant.merchantId, payload, sign(payload, OTHER_SECRET))).status).toBe(400);
        await quiet();
        expect(sessionReads(session)).toBe(before);
        // The same event at B's endpoint with B's secret wakes it.
        const own = await post(other.merchantId, payload, sign(payload, OTHER_SECRET));
        expect(own.status).toBe(200);
        await woken(session, before);
      });

      it('a test-mode event under the live secret, or a live record named under the test secret: routed nowhere', async () => {
        const created = await pay(bundled, live, { returnUrl: 'https://shop.example.com/a' });
        const session = created.body.providerTransactionId as string;
        await quiet();
        const before = sessionReads(session);
        const testMode = JSON.stringify({
          ...JSON.parse(event({ paymentId: created.body.id as string })),
          livemode: false,
        });
        const liveMode = event({ paymentId: created.body.id as string });
        for (const [payload, secret] of [
          [testMode, WEBHOOK_SECRET], // livemode false, verified by the live secret
          [liveMode, TEST_SECRET], // livemode true, verified by the test secret
          [testMode, TEST_SECRET], // test mode and test secret: but the payment is live
        ] as const) {
          const res = await post(merchant.merchantId, payload, sign(payload, secret));
          expect(res.status).toBe(200);
          expect(await res.json()).toEqual({ received: true });
        }
        await quiet();
        expect(sessionReads(session)).toBe(before);
        const res = await post(merchant.merchantId, liveMode, sign(liveMode));
        expect(res.status).toBe(200);
        await woken(session, before);
      });

      it('a replayed event is harmless: acknowledged again; the workflow asks Stripe again, nothing else', async () => {
        const created = await pay(bundled, live, { returnUrl: 'https://shop.example.com/replay' });
        const id = created.body.id as string;
        const session = created.body.providerTransactionId as string;
        const payload = event({ paymentId: id });
        const signature = sign(payload);
        const before = sessionReads(session);
        for (let i = 0; i < 3; i++) {
          const res = await post(merchant.merchantId, payload, signature);
          expect(res.status).toBe(200);
        }
        await woken(session, before);
        const creates = bundledProxy.requests.filter((r) => r.method === 'POST' && r.headers['idempotency-key'] === id);
        expect(creates).toHaveLength(1);
        const payment = await call(bundled.api.baseUrl, 'GET', `/payments/${id}`, live.auth);
        // stripe-mock's session stays open: the payment stays created, with its one session.
        expect(payment.body).toMatchObject({ id, status: 'created', providerTransactionId: session });
      });
    });

    it("charge.dispute.created: the dispute of the verified merchant's payment, idempotent; another merchant's secret touches nothing", async () => {
      const m = await createTestMerchant(settled.orm, 'Stripe merchant, disputed');
      const who = await liveKeyOf(m);
      expect((await configure(m.merchantId)).code).toBe(0);
      const paid = await pay(settled, who, { cardToken: 'pm_1Pgc75B7WZ01zgkWlHVgdEGJ' });
      expect(paid.body).toMatchObject({ status: 'succeeded', processor: 'stripe' });
      const payload = JSON.stringify({
        id: 'evt_dispute_1',
        object: 'event',
        type: 'charge.dispute.created',
        api_version: '2026-10-28.endive',
        created: Math.floor(Date.now() / 1000),
        livemode: true,
        data: {
          object: {
            id: 'dp_live_dispute_1',
            object: 'dispute',
            amount: 1099,
            currency: 'usd',
            status: 'needs_response',
            reason: 'fraudulent',
            charge: 'ch_live_1',
            payment_intent: paid.body.providerTransactionId,
            evidence_details: { due_by: Math.floor(Date.now() / 1000) + 7 * 86_400 },
            created: Math.floor(Date.now() / 1000),
            metadata: {},
          },
        },
      });
      // Another Stripe merchant (same test secret): verified for it, but none of its payments is disputed.
      expect((await postStripeWebhook(settled.api.baseUrl, merchant.merchantId, payload, sign(payload))).status).toBe(
        200,
      );
      for (let i = 0; i < 2; i++) {
        const res = await postStripeWebhook(settled.api.baseUrl, m.merchantId, payload, sign(payload));
        expect(res.status).toBe(200);
      }
      const listed = await call(settled.api.baseUrl, 'GET', '/disputes', who.auth);
      expect(listed.body.disputes).toEqual([
        expect.objectContaining({
          paymentId: paid.body.id,
          providerDisputeId: 'dp_live_dispute_1',
          amount: AMOUNT,
          status: 'needs_response',
          reason: 'fraudulent',
        }),
      ]);
      expect((await call(settled.api.baseUrl, 'GET', '/disputes', live.auth)).body.disputes).toEqual([]);
      expect(
        (await call(settled.api.baseUrl, 'GET', `/payments/${paid.body.id as string}`, who.auth)).body,
      ).toMatchObject({ disputed: true, amountDisputed: AMOUNT, amountRefundable: 0 });
    });

    it('evidence or accept on a dispute Stripe closed before our record knew: 409 dispute_not_updatable, the record follows', async () => {
      const m = await createTestMerchant(settled.orm, 'Stripe merchant, closed dispute');
      const who = await liveKeyOf(m);
      expect((await configure(m.merchantId)).code).toBe(0);
      const paid = await pay(settled, who, { cardToken: 'pm_1Pgc75B7WZ01zgkWlHVgdEGJ' });
      expect(paid.body).toMatchObject({ status: 'succeeded', processor: 'stripe' });
      const now = Math.floor(Date.now() / 1000);
      const stripeDispute = (id: string, status: string) => ({
        id,
        object: 'dispute',
        amount: 1099,
        currency: 'usd',
        status,
        reason: 'fraudulent',
        charge: 'ch_live_1',
        payment_intent: paid.body.providerTransactionId,
        evidence_details: { due_by: now + 7 * 86_400 },
        created: now,
        metadata: {},
      });
      const open = async (id: string) => {
        const payload = JSON.stringify({
          id: `evt_${id}`,
          object: 'event',
          type: 'charge.dispute.created',
          api_version: '2026-10-28.endive',
          created: now,
          livemode: true,
          data: { object: stripeDispute(id, 'needs_response') },
        });
        expect((await postStripeWebhook(settled.api.baseUrl, m.merchantId, payload, sign(payload))).status).toBe(200);
        const listed = await call(settled.api.baseUrl, 'GET', '/disputes', who.auth);
        const ours = (listed.body.disputes as Array<{ id: string; providerDisputeId: string; status: string }>).find(
          (d) => d.providerDisputeId === id,
        );
        expect(ours).toMatchObject({ status: 'needs_response' });
        return ours!.id;
      };
      // Stripe's refusal of a closed dispute: an invalid_request_error with no code of its own.
      const closedAtStripe = { error: { type: 'invalid_request_error', message: 'This dispute is already closed.' } };

      // Evidence on a dispute Stripe decided lost; its webhook has not come.
      const lostId = await open('dp_live_closed_lost');
      settledProxy.answerNext(
        (r) => r.method === 'POST' && r.path === '/v1/disputes/dp_live_closed_lost',
        400,
        closedAtStripe,
      );
      // Every look at it (the dispute's workflow may look too, before or after the API) finds it lost.
      for (let look = 0; look < 3; look++) {
        settledProxy.answerNext(
          (r) => r.method === 'GET' && r.path.startsWith('/v1/disputes/dp_live_closed_lost'),
          200,
          stripeDispute('dp_live_closed_lost', 'lost'),
        );
      }
      const evidence = await call(settled.api.baseUrl, 'POST', `/disputes/${lostId}/evidence`, who.auth, {
        text: 'Delivered.',
        submit: true,
      });
      expect(evidence.status).toBe(409);
      expect(evidence.body).toMatchObject({ code: 'dispute_not_updatable', details: { status: 'lost' } });
      expect((await call(settled.api.baseUrl, 'GET', `/disputes/${lostId}`, who.auth)).body).toMatchObject({
        status: 'lost',
        evidence: null,
        closedAt: expect.any(String),
      });

      // Accept on a dispute Stripe decided won.
      const wonId = await open('dp_live_closed_won');
      settledProxy.answerNext(
        (r) => r.method === 'POST' && r.path === '/v1/disputes/dp_live_closed_won/close',
        400,
        closedAtStripe,
      );
      // Every look at it (the dispute's workflow may look too, before or after the API) finds it won.
      for (let look = 0; look < 3; look++) {
        settledProxy.answerNext(
          (r) => r.method === 'GET' && r.path.startsWith('/v1/disputes/dp_live_closed_won'),
          200,
          stripeDispute('dp_live_closed_won', 'won'),
        );
      }
      const accepted = await call(settled.api.baseUrl, 'POST', `/disputes/${wonId}/accept`, who.auth);
      expect(accepted.status).toBe(409);
      expect(accepted.body).toMatchObject({ code: 'dispute_not_updatable', details: { status: 'won' } });
      expect((await call(settled.api.baseUrl, 'GET', `/disputes/${wonId}`, who.auth)).body).toMatchObject({
        status: 'won',
        closedAt: expect.any(String),
      });
      expect(
        (await call(settled.api.baseUrl, 'GET', `/payments/${paid.body.id as string}`, who.auth)).body,
      ).toMatchObject({ disputed: false, amountDisputed: AMOUNT, amountRefundable: 0 });
    });

    it('refuses a wrong signature, another merchant, or a tampered body with 400 invalid_signature', async () => {
      const payload = event({ paymentId: 'pay_unknown' });
      const signed = sign(payload);
      const cases: Array<[string, string, string]> = [
        [merchant.merchantId, payload, sign(payload, 'whsec_other')],
        // Another merchant (a well-formed id; a malformed one is 404 before anything: decision 0081).
        [newId('merchant'), payload, signed],
        [merchant.merchantId, payload.replace('1099', '1'), signed],
        [merchant.merchantId, payload, 'garbage'],
      ];
      for (const [merchantId, body, signature] of cases) {
        const res = await post(merchantId, body, signature);
        expect(res.status).toBe(400);
        expect(await res.json()).toMatchObject({ code: 'invalid_signature' });
      }
    });
  });
});
