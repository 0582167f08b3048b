import http from 'node:http';
import net from 'node:net';
import fs from 'node:fs';
import path from 'node:path';
import util from 'node:util';
import Stripe from 'stripe';
import { ProviderError, ProviderWebhookError } from '../../src/providers/errors';
import { StripeProvider } from '../../src/providers/stripe/client';
import type { CreatePaymentInput } from '../../src/providers/types';
import { testStack } from '../setup/stackInfo';
import { startRecordingProxy, type RecordedRequest } from '../helpers/recordingProxy';

/**
 * The Stripe adapter against stripe-mock (started by globalSetup): it validates every request
 * against Stripe's OpenAPI spec (a 400 would mean our request shape is wrong), so each call that
 * passes proves the shape. stripe-mock is stateless: it answers fixtures, reflecting some request
 * parameters (amount, currency, ids). Outcomes it cannot produce (declines, 3DS, completed
 * sessions, pending refunds) are covered by test/unit/stripeMapping.test.ts.
 */
const WEBHOOK_SECRET = 'whsec_test_adapter';
const provider = (opts: Partial<ConstructorParameters<typeof StripeProvider>[0]> = {}) =>
  new StripeProvider({
    secretKey: 'sk_test_123',
    webhookSecret: WEBHOOK_SECRET,
    apiBase: testStack().stripeApiBase,
    timeoutMs: 5000,
    ...opts,
  });

const rejection = async (promise: Promise<unknown>): Promise<ProviderError> => {
  try {
    await promise;
  } catch (err) {
    if (err instanceof ProviderError) return err;
    throw err;
  }
  throw new Error('expected a ProviderError');
};

const metadata = { paymentId: 'pay_01J0STRIPE', merchantId: 'mer_01J0STRIPE' };

const fixture = (name: string) =>
  JSON.parse(fs.readFileSync(path.join(__dirname, '../fixtures/stripe', `${name}.json`), 'utf8')) as Record<
    string,
    unknown
  >;

describe('Stripe adapter against stripe-mock', () => {
  const stripe = provider();
  /** The adapter behind a recording proxy: what it really sent. */
  const recorded = {} as {
    proxy: Awaited<ReturnType<typeof startRecordingProxy>>;
    provider: StripeProvider;
    sent: (method: string, path: string, key: string) => RecordedRequest[];
  };
  beforeAll(async () => {
    recorded.proxy = await startRecordingProxy(testStack().stripeApiBase);
    recorded.provider = provider({ apiBase: recorded.proxy.url });
    recorded.sent = (method, path, key) =>
      recorded.proxy.requests.filter(
        (r) => r.method === method && r.path === path && r.headers['idempotency-key'] === key,
      );
  });
  afterAll(() => recorded.proxy?.close());

  describe('card payments (off-session PaymentIntent, confirmed at once)', () => {
    it('with cus_...:pm_...: the request passes validation; amount and currency reflected; status mapped', async () => {
      const p = await stripe.createPayment({
        idempotencyKey: 'pay_01J0STRIPE',
        amountMinor: 1234,
        currency: 'USD',
        mode: 'card',
        cardToken: 'cus_QXg1o8vcGmoR32:pm_1PgafzB7WZ01zgkW',
        description: 'Order 42',
        metadata,
      });
      expect(p.transactionId).toMatch(/^pi_/);
      expect(p).toMatchObject({ amountMinor: 1234, currency: 'USD', redirectUrl: null, savedCardToken: null });
      // stripe-mock's fixture is requires_payment_method with no code: a failed confirm.
      expect(p).toMatchObject({ status: 'failed', failureCode: 'payment_failed' });
    });

    it('with a returnUrl: confirmed on-session with return_url (3-D Secure can redirect), not off_session', async () => {
      const p = await recorded.provider.createPayment({
        idempotencyKey: 'pay_01J0STRIPE_3DS',
        amountMinor: 1234,
        currency: 'EUR',
        mode: 'card',
        cardToken: 'cus_QXg1o8vcGmoR32:pm_1PgafzB7WZ01zgkW',
        returnUrl: 'https://shop.example/back?order=42',
        metadata,
      });
      expect(p.transactionId).toMatch(/^pi_/);
      const [sent] = recorded.sent('POST', '/v1/payment_intents', 'pay_01J0STRIPE_3DS');
      expect(sent!.status).toBe(200);
      expect(sent!.form).toMatchObject({ confirm: 'true', return_url: 'https://shop.example/back?order=42' });
      expect(sent!.form.off_session).toBeUndefined();
      // Without one (a renewal, an invoice retry): off-session as before, no return_url.
      await recorded.provider.createPayment({
        idempotencyKey: 'pay_01J0STRIPE_OFF',
        amountMinor: 1234,
        currency: 'EUR',
        mode: 'card',
        cardToken: 'pm_1PgafzB7WZ01zgkW',
        metadata,
      });
      const [off] = recorded.sent('POST', '/v1/payment_intents', 'pay_01J0STRIPE_OFF');
      expect(off!.form).toMatchObject({ confirm: 'true', off_session: 'true' });
      expect(off!.form.return_url).toBeUndefined();
    });

    it('with pm_... alone, in a zero-decimal currency', async () => {
      const p = await stripe.createPayment({
        idempotencyKey: 'pay_01J0STRIPE_JPY',
        amountMinor: 500,
        currency: 'JPY',
        mode: 'card',
        cardToken: 'pm_1PgafzB7WZ01zgkW',
        metadata,
      });
      expect(p).toMatchObject({ amountMinor: 500, currency: 'JPY' });
    });

    it('an amount Stripe cannot represent is rejected before anything is sent', async () => {
      const err = await rejection(
        stripe.createPayment({
          idempotencyKey: 'pay_x',
          amountMinor: 12345,
          currency: 'KWD',
          mode: 'card',
          cardToken: 'pm_1',
          metadata,
        }),
      );
      expect(err).toMatchObject({ kind: 'rejected', code: 'amount_not_supported' });
    });
  });

  describe('hosted payments (Checkout Session)', () => {
    it('creates a session: cs_ id, pending, the hosted page, what we asked for', async () => {
      const p = await stripe.createPayment({
        idempotencyKey: 'pay_01J0STRIPE_HOSTED',
        amountMinor: 1234,
        currency: 'EUR',
        mode: 'checkout',
        returnUrl: 'https://merchant.example/return?order=42',
        saveCard: true,
        description: 'Order 42',
        expiresAt: new Date(Date.now() + 3_600_000),
        metadata,
      });
      expect(p.transactionId).toMatch(/^cs_/);
      expect(p).toMatchObject({ status: 'pending', amountMinor: 1234, currency: 'EUR' });
      expect(p.redirectUrl).toMatch(/^https:\/\/checkout\.stripe\.com\//);
    });

    it('without saveCard, description or expiry', async () => {
      const p = await stripe.createPayment({
        idempotencyKey: 'pay_01J0STRIPE_HOSTED2',
        amountMinor: 100,
        currency: 'USD',
        mode: 'checkout',
        returnUrl: 'https://merchant.example/return',
        metadata,
      });
      expect(p).toMatchObject({ status: 'pending', amountMinor: 100, currency: 'USD' });
    });

    it('without returnUrl: rejected (Stripe needs somewhere to send the customer back)', async () => {
      const err = await rejection(
        stripe.createPayment({
          idempotencyKey: 'pay_y',
          amountMinor: 100,
          currency: 'USD',
          mode: 'checkout',
          metadata,
        }),
      );
      expect(err).toMatchObject({ kind: 'rejected', code: 'return_url_required' });
    });

    it('setup (subscription card authorization): a Customer, then a setup session', async () => {
      const p = await stripe.createPayment({
        idempotencyKey: 'sub_01J0STRIPE',
        amountMinor: 0,
        currency: 'EUR',
        mode: 'setup',
        returnUrl: 'https://merchant.example/subscribed',
        description: 'Gold plan',
        metadata: { subscriptionId: 'sub_01J0STRIPE', merchantId: 'mer_01J0STRIPE' },
      });
      expect(p.transactionId).toMatch(/^cs_/);
      expect(p).toMatchObject({ status: 'pending', amountMinor: 0, currency: 'EUR', savedCardToken: null });
      expect(p.redirectUrl).toMatch(/^https:\/\/checkout\.stripe\.com\//);
    });
  });

  describe("a subscription's new card (setup with a token: a confirmed off-session SetupIntent)", () => {
    it('the request passes validation; a seti_ transaction, no page, amount 0 in our currency', async () => {
      const p = await stripe.createPayment({
        idempotencyKey: 'sub_01J0STRIPE.card-abc',
        amountMinor: 0,
        currency: 'EUR',
        mode: 'setup',
        cardToken: 'cus_QXg1o8vcGmoR32:pm_1PgafzB7WZ01zgkW',
        description: 'Gold plan',
        metadata: { subscriptionId: 'sub_01J0STRIPE', merchantId: 'mer_01J0STRIPE' },
      });
      expect(p.transactionId).toMatch(/^seti_/);
      expect(p).toMatchObject({ amountMinor: 0, currency: 'EUR', redirectUrl: null });
      // stripe-mock's fixture is requires_payment_method: not verified (a succeeded one is mapped
      // in test/unit/stripeMapping.test.ts).
      expect(p).toMatchObject({ status: 'failed', savedCardToken: null });
    });

    it('a token that is not ours to parse is invalid_card_token before anything is sent', async () => {
      const err = await rejection(
        stripe.createPayment({
          idempotencyKey: 'sub_x.card-x',
          amountMinor: 0,
          currency: 'EUR',
          mode: 'setup',
          cardToken: 'tok_success',
          metadata,
        }),
      );
      expect(err).toMatchObject({ kind: 'rejected', code: 'invalid_card_token' });
    });
  });

  describe('payment methods (a Customer, then the PaymentMethod attached to it; decision 0087)', () => {
    const customer = { id: 'cus_01J0OURS', email: 'ada@example.com', name: 'Ada' };
    const attachInput = (key: string, providerCustomerId: string | null) => ({
      idempotencyKey: key,
      cardToken: 'pm_1PgafzB7WZ01zgkW',
      customer: { ...customer, providerCustomerId },
      metadata: { customerId: customer.id, paymentMethodId: key },
    });

    it('a first attach creates the Customer under its own key, then attaches under ours', async () => {
      const key = `pm_01J0ATTACH${Date.now()}`;
      const result = await recorded.provider.attachPaymentMethod(attachInput(key, null));
      expect(result).toMatchObject({
        status: 'attached',
        reference: expect.stringMatching(/^cus_[A-Za-z0-9]+:pm_[A-Za-z0-9]+$/),
        providerCustomerId: expect.stringMatching(/^cus_/),
        card: { brand: expect.any(String), last4: expect.stringMatching(/^\d{4}$/) },
      });
      expect(recorded.sent('POST', '/v1/customers', `${customer.id}:customer`)).toHaveLength(1);
      expect(recorded.sent('POST', '/v1/payment_methods/pm_1PgafzB7WZ01zgkW/attach', key)).toHaveLength(1);
    });

    it("a later attach uses the customer's Customer; a detach passes validation", async () => {
      const key = `pm_01J0AGAIN${Date.now()}`;
      const result = await recorded.provider.attachPaymentMethod(attachInput(key, 'cus_QXg1o8vcGmoR32'));
      expect(result).toMatchObject({ status: 'attached' });
      expect(recorded.proxy.requests.filter((r) => r.headers['idempotency-key'] === key)).toHaveLength(1);
      await expect(stripe.detachPaymentMethod('cus_QXg1o8vcGmoR32:pm_1PgafzB7WZ01zgkW')).resolves.toBeUndefined();
    });

    it('a token that is not a PaymentMethod is invalid_card_token before anything is sent', async () => {
      const err = await rejection(stripe.attachPaymentMethod({ ...attachInput('pm_x', null), cardToken: 'tok_visa' }));
      expect(err).toMatchObject({ kind: 'rejected', code: 'invalid_card_token' });
    });
  });

  describe('lookups', () => {
    it('by transaction: a PaymentIntent and a Checkout Session (expanded), mapped', async () => {
      const pi = await stripe.findPayment({ transactionId: 'pi_1PgafyB7WZ01zgkWSjxsAJo3' });
      expect(pi).toMatchObject({ transactionId: 'pi_1PgafyB7WZ01zgkWSjxsAJo3', currency: 'USD', status: 'failed' });
      const cs = await stripe.findPayment({ transactionId: 'cs_test_a1' });
      // The session fixture has no amount; the expanded PaymentIntent's is used.
      expect(cs).toMatchObject({ transactionId: 'cs_test_a1', status: 'pending', amountMinor: 1099, currency: 'USD' });
    });

    const request = (mode: 'card' | 'checkout' | 'setup', idempotencyKey: string): CreatePaymentInput => ({
      idempotencyKey,
      amountMinor: 1099,
      currency: 'USD',
      mode,
      ...(mode === 'card' ? { cardToken: 'pm_1PgafzB7WZ01zgkW' } : { returnUrl: 'https://merchant.example/r' }),
      expiresAt: new Date(Date.now() + 2 * 3_600_000),
      metadata,
    });
    const hoursAgo = (h: number) => new Date(Date.now() - h * 3_600_000);
    /** What a lookup did at Stripe: never a list of everything created since a date. */
    const scans = () => recorded.proxy.requests.filter((r) => r.method === 'GET' && /created/.test(r.path));

    it.each(['card', 'checkout', 'setup'] as const)(
      'by key within the idempotency window (%s): the same request replayed under the same key, nothing listed',
      async (mode) => {
        const key = `pay_01J0REPLAY_${mode}`;
        const sentAt = new Date(Date.now() - 60_000);
        const first = await recorded.provider.createPayment(request(mode, key));
        const found = await recorded.provider.findPayment({
          idempotencyKey: key,
          mode,
          notBefore: sentAt,
          request: request(mode, key),
        });
        expect(found!.transactionId).toMatch(mode === 'card' ? /^pi_/ : /^cs_/);
        expect(found).toMatchObject({ status: first.status, amountMinor: first.amountMinor });
        const creates = recorded.proxy.requests.filter(
          (r) => r.method === 'POST' && r.headers['idempotency-key'] === key,
        );
        expect(creates).toHaveLength(2);
        expect(creates.every((c) => c.status === 200)).toBe(true);
        // Byte for byte the same parameters (Stripe refuses a key reused with others); stripe-mock,
        // stateless, makes a new Customer for the replayed `<key>:customer` (Stripe answers the same).
        const params = ({ form }: RecordedRequest) => ({ ...form, customer: mode === 'setup' ? 'cus' : form.customer });
        expect(params(creates[1]!)).toEqual(params(creates[0]!));
        expect(scans()).toEqual([]);
      },
    );

    it.each([
      ['card', '/v1/payment_intents/search'],
      ['checkout', '/v1/payment_intents/search'],
      ['setup', '/v1/customers/search'],
    ] as const)(
      'past the window (%s): searched by our key in metadata (one page), none carries ours here: null',
      async (mode, path) => {
        const key = `pay_01J0OLD_${mode}`;
        const before = recorded.proxy.requests.length;
        const found = await recorded.provider.findPayment({
          idempotencyKey: key,
          mode,
          notBefore: hoursAgo(30),
          request: request(mode, key),
        });
        expect(found).toBeNull();
        const asked = recorded.proxy.requests.slice(before);
        expect(asked).toHaveLength(1);
        expect(asked[0]!.method).toBe('GET');
        expect(asked[0]!.status).toBe(200);
        const url = new URL(asked[0]!.path, 'http://x');
        expect(url.pathname).toBe(path);
        expect(url.searchParams.get('query')).toBe(`metadata['idempotencyKey']:'${key}'`);
        expect(scans()).toEqual([]);
      },
    );

    it('a replay Stripe refuses outright (nothing is kept of a refused request): null, never performed', async () => {
      const refused = { ...request('card', 'pay_01J0REFUSED'), amountMinor: 12345, currency: 'KWD' };
      const found = await recorded.provider.findPayment({
        idempotencyKey: 'pay_01J0REFUSED',
        mode: 'card',
        notBefore: new Date(),
        request: refused,
      });
      expect(found).toBeNull();
    });

    it('a replay answered idempotency_error (the key holds other parameters): asked by search instead', async () => {
      // A stand-in for Stripe: stripe-mock cannot answer a key conflict.
      const pi = {
        ...fixture('payment_intent'),
        status: 'succeeded',
        metadata: { idempotencyKey: 'inv_1.attempt-2' },
      };
      const seen: string[] = [];
      const server = http.createServer((req, res) => {
        seen.push(`${req.method} ${req.url}`);
        res.setHeader('content-type', 'application/json');
        if (req.method === 'POST') {
          res.writeHead(400);
          res.end(
            JSON.stringify({
              error: {
                type: 'idempotency_error',
                message:
                  'Keys for idempotent requests can only be used with the same parameters they were first used with.',
              },
            }),
          );
          return;
        }
        res.end(
          JSON.stringify({ object: 'search_result', data: [{ ...pi, metadata: {} }, pi], has_more: false, url: '/' }),
        );
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      try {
        const standIn = provider({ apiBase: `http://127.0.0.1:${(server.address() as net.AddressInfo).port}` });
        const found = await standIn.findPayment({
          idempotencyKey: 'inv_1.attempt-2',
          mode: 'card',
          notBefore: new Date(),
          request: request('card', 'inv_1.attempt-2'),
        });
        expect(found).toMatchObject({ transactionId: 'pi_1PgafyB7WZ01zgkWSjxsAJo3', status: 'succeeded' });
        expect(seen.map((r) => r.split('?')[0])).toEqual([
          'POST /v1/payment_intents',
          'GET /v1/payment_intents/search',
        ]);
      } finally {
        await new Promise<void>((resolve) => server.close(() => resolve()));
      }
    });

    it('a search that finds nothing right after the call is no answer yet: timeout (ambiguous, asked again)', async () => {
      // No request to replay (a caller that cannot rebuild it): searched; Stripe's search may
      // not show a new object for a while, so "nothing" is not "never performed" yet.
      const err = await rejection(
        stripe.findPayment({ idempotencyKey: 'inv_1.attempt-1', mode: 'card', notBefore: new Date() }),
      );
      expect(err).toMatchObject({ kind: 'timeout' });
      expect(err.ambiguous).toBe(true);
      expect(
        await stripe.findPayment({ idempotencyKey: 'inv_1.attempt-1', mode: 'card', notBefore: hoursAgo(1) }),
      ).toBeNull();
    });
  });

  describe('cancel', () => {
    it('a Checkout Session is expired (stripe-mock answers its open fixture)', async () => {
      const p = await stripe.cancelPayment('cs_test_a1');
      expect(p.transactionId).toBe('cs_test_a1');
    });

    it('a PaymentIntent is canceled', async () => {
      const p = await stripe.cancelPayment('pi_1PgafyB7WZ01zgkWSjxsAJo3');
      expect(p.transactionId).toBe('pi_1PgafyB7WZ01zgkWSjxsAJo3');
    });
  });

  describe('refunds', () => {
    it('of a card payment: re_ id, amount reflected, our transaction and reference', async () => {
      const r = await stripe.createRefund({
        idempotencyKey: 'ref_01J0STRIPE',
        transactionId: 'pi_1PgafyB7WZ01zgkWSjxsAJo3',
        amountMinor: 500,
        currency: 'USD',
        referenceId: 'refund-ext-1',
        reason: 'requested_by_customer',
        metadata: { refundId: 'ref_01J0STRIPE', paymentId: 'pay_01J0STRIPE' },
      });
      expect(r.refundId).toMatch(/^re_/);
      expect(r).toMatchObject({
        transactionId: 'pi_1PgafyB7WZ01zgkWSjxsAJo3',
        amountMinor: 500,
        currency: 'USD',
        referenceId: 'refund-ext-1',
        status: 'succeeded',
      });
    });

    it('of a hosted payment: the session resolved to its PaymentIntent, reported under our cs_ id', async () => {
      const r = await stripe.createRefund({
        idempotencyKey: 'ref_01J0STRIPE2',
        transactionId: 'cs_test_a1',
        amountMinor: 250,
        currency: 'USD',
        referenceId: 'refund-ext-2',
        reason: 'the customer changed their mind',
        metadata: { refundId: 'ref_01J0STRIPE2', paymentId: 'pay_01J0STRIPE_HOSTED' },
      });
      expect(r).toMatchObject({ transactionId: 'cs_test_a1', amountMinor: 250 });
    });

    it('found by id; by our key or by reference within the transaction (none carries ours here)', async () => {
      const byId = await stripe.findRefund({ refundId: 're_1PgafuB7WZ01zgkWdzQ6ZC3Y' });
      expect(byId).toMatchObject({ refundId: 're_1PgafuB7WZ01zgkWdzQ6ZC3Y', status: 'succeeded' });
      expect(await stripe.findRefund({ idempotencyKey: 'ref_01J0STRIPE', transactionId: 'pi_1' })).toBeNull();
      expect(await stripe.findRefund({ referenceId: 'refund-ext-1', transactionId: 'cs_test_a1' })).toBeNull();
    });
  });

  describe('failures', () => {
    it('a key stripe-mock refuses (not a test-mode secret key): misconfigured', async () => {
      for (const secretKey of ['sk_live_123', 'not-a-key']) {
        const err = await rejection(provider({ secretKey }).findPayment({ transactionId: 'pi_1' }));
        expect(err.kind).toBe('misconfigured');
        expect(err.message).not.toContain(secretKey);
      }
    });

    it('the provider never shows its secrets (a log line or JSON that includes it)', () => {
      const p = provider({ secretKey: 'sk_test_SHOULDNOTSHOW', webhookSecret: 'whsec_SHOULDNOTSHOW' });
      expect(JSON.stringify(p)).not.toContain('SHOULDNOTSHOW');
      expect(util.inspect(p, { depth: 10 })).not.toContain('SHOULDNOTSHOW');
    });

    it('nothing listening: unavailable (nothing was sent)', async () => {
      const server = net.createServer();
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      const port = (server.address() as net.AddressInfo).port;
      await new Promise<void>((resolve) => server.close(() => resolve()));
      const err = await rejection(
        provider({ apiBase: `http://127.0.0.1:${port}` }).createPayment({
          idempotencyKey: 'pay_z',
          amountMinor: 100,
          currency: 'USD',
          mode: 'card',
          cardToken: 'pm_1',
          metadata,
        }),
      );
      expect(err.kind).toBe('unavailable');
    });

    it('no answer within timeoutMs: timeout (it may have acted)', async () => {
      const sockets: net.Socket[] = [];
      const server = net.createServer((s) => sockets.push(s));
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      const port = (server.address() as net.AddressInfo).port;
      try {
        const started = Date.now();
        const err = await rejection(
          provider({ apiBase: `http://127.0.0.1:${port}`, timeoutMs: 300 }).createPayment({
            idempotencyKey: 'pay_t',
            amountMinor: 100,
            currency: 'USD',
            mode: 'card',
            cardToken: 'pm_1',
            metadata,
          }),
        );
        expect(err.kind).toBe('timeout');
        expect(Date.now() - started).toBeLessThan(5000);
      } finally {
        for (const s of sockets) s.destroy();
        await new Promise<void>((resolve) => server.close(() => resolve()));
      }
    });
  });

  describe('disputes', () => {
    it('found by id: an inquiry needing a response is needs_response, due when Stripe says', async () => {
      const d = await stripe.findDispute('dp_1PgbQ8B7WZ01zgkW');
      expect(d).toEqual({
        disputeId: 'dp_1PgbQ8B7WZ01zgkW',
        transactionId: 'ch_1PgafuB7WZ01zgkWXYmPNZs8', // stripe-mock's fixture names no PaymentIntent
        status: 'needs_response',
        amountMinor: 1000,
        currency: 'USD',
        reason: 'general',
        evidenceDueBy: new Date(1723679999 * 1000),
      });
    });

    it('evidence and acceptance: the requests pass validation and the answers map', async () => {
      const sent = await stripe.submitDisputeEvidence('dp_1PgbQ8B7WZ01zgkW', 'Signed delivery receipt.');
      expect(sent).toMatchObject({ disputeId: 'dp_1PgbQ8B7WZ01zgkW', amountMinor: 1000, currency: 'USD' });
      const accepted = await stripe.acceptDispute('dp_1PgbQ8B7WZ01zgkW');
      expect(accepted).toMatchObject({ disputeId: 'dp_1PgbQ8B7WZ01zgkW', amountMinor: 1000 });
    });
  });

  describe('webhooks', () => {
    const payload = JSON.stringify({
      ...fixture('event'),
      type: 'payment_intent.succeeded',
      data: { object: { ...fixture('payment_intent'), status: 'succeeded', metadata } },
    });
    const sign = (secret: string) => Stripe.webhooks.generateTestHeaderString({ payload, secret });

    it('a signed event verifies and maps, with the object metadata the route routes by', () => {
      const event = stripe.parseWebhook(payload, { 'stripe-signature': sign(WEBHOOK_SECRET) });
      expect(event).toMatchObject({
        kind: 'payment',
        type: 'payment_intent.succeeded',
        payment: { transactionId: 'pi_1PgafyB7WZ01zgkWSjxsAJo3', status: 'succeeded' },
        metadata,
      });
    });

    it.each([
      ['payment_intent.requires_action', 'requires_action'],
      ['payment_intent.processing', 'processing'],
      ['payment_intent.succeeded', 'succeeded'],
      ['payment_intent.payment_failed', 'requires_payment_method'],
      ['payment_intent.canceled', 'canceled'],
    ])('a signed %s verifies and maps to the payment status, with livemode', (type, status) => {
      const url = 'https://hooks.stripe.com/3d_secure_2/hosted?payment_intent=pi_1';
      const body = JSON.stringify({
        ...fixture('event'),
        type,
        livemode: true,
        data: {
          object: {
            ...fixture('payment_intent'),
            status,
            next_action: status === 'requires_action' ? { type: 'redirect_to_url', redirect_to_url: { url } } : null,
            metadata,
          },
        },
      });
      const event = stripe.parseWebhook(body, {
        'stripe-signature': Stripe.webhooks.generateTestHeaderString({ payload: body, secret: WEBHOOK_SECRET }),
      });
      const ours = { requires_payment_method: 'failed' }[status as 'requires_payment_method'] ?? status;
      expect(event).toMatchObject({ kind: 'payment', type, payment: { status: ours }, metadata, livemode: true });
      if (event.kind === 'payment') expect(event.payment.actionUrl).toBe(status === 'requires_action' ? url : null);
    });

    it('charge.dispute.*: a dispute of the PaymentIntent, its status mapped (a closed one lost)', () => {
      for (const [type, status, ours] of [
        ['charge.dispute.created', 'needs_response', 'needs_response'],
        ['charge.dispute.updated', 'under_review', 'under_review'],
        ['charge.dispute.closed', 'lost', 'lost'],
        ['charge.dispute.closed', 'won', 'won'],
      ] as const) {
        const body = JSON.stringify({ ...fixture('event'), type, data: { object: { ...fixture('dispute'), status } } });
        const event = stripe.parseWebhook(body, {
          'stripe-signature': Stripe.webhooks.generateTestHeaderString({ payload: body, secret: WEBHOOK_SECRET }),
        });
        expect(event).toEqual({
          kind: 'dispute',
          type,
          dispute: {
            disputeId: 'dp_1PgbQ8B7WZ01zgkWdisput01',
            transactionId: 'pi_1PgafyB7WZ01zgkWSjxsAJo3',
            status: ours,
            amountMinor: 1000,
            currency: 'USD',
            reason: 'fraudulent',
            evidenceDueBy: new Date(1723679999 * 1000),
          },
          metadata: {},
          livemode: false,
        });
      }
    });

    it('a wrong secret, a changed body, no signature, or no configured secret: ProviderWebhookError', () => {
      expect(() => stripe.parseWebhook(payload, { 'stripe-signature': sign('whsec_other') })).toThrow(
        ProviderWebhookError,
      );
      expect(() =>
        stripe.parseWebhook(payload.replace('succeeded', 'canceled'), { 'stripe-signature': sign(WEBHOOK_SECRET) }),
      ).toThrow(ProviderWebhookError);
      expect(() => stripe.parseWebhook(payload, {})).toThrow(ProviderWebhookError);
      expect(() =>
        provider({ webhookSecret: null }).parseWebhook(payload, { 'stripe-signature': sign(WEBHOOK_SECRET) }),
      ).toThrow(ProviderWebhookError);
    });
  });
});
