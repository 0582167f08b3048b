import net from 'node:net';
import fs from 'node:fs';
import path from 'node:path';
import util from 'node:util';
import Stripe from 'stripe';
import { ProviderError, ProviderWebhookError } from '../../src/providers/errors';
import { StripeProvider } from '../../src/providers/stripe/client';
import { testStack } from '../setup/stackInfo';

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

describe('Stripe adapter against stripe-mock', () => {
  const stripe = provider();

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

  describe('lookups', () => {
    it('by transaction: a PaymentIntent and a Checkout Session (expanded), mapped', async () => {
      const pi = await stripe.findPayment({ transactionId: 'pi_1PgafyB7WZ01zgkWSjxsAJo3' });
      expect(pi).toMatchObject({ transactionId: 'pi_1PgafyB7WZ01zgkWSjxsAJo3', currency: 'USD', status: 'failed' });
      const cs = await stripe.findPayment({ transactionId: 'cs_test_a1' });
      // The session fixture has no amount; the expanded PaymentIntent's is used.
      expect(cs).toMatchObject({ transactionId: 'cs_test_a1', status: 'pending', amountMinor: 1099, currency: 'USD' });
    });

    it.each(['card', 'checkout', 'setup'] as const)(
      'by idempotency key (%s): lists since notBefore and matches metadata; none carries ours here',
      async (mode) => {
        const found = await stripe.findPayment({ idempotencyKey: 'pay_01J0STRIPE', mode, notBefore: new Date() });
        expect(found).toBeNull();
      },
    );
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
    const fixture = (name: string) =>
      JSON.parse(fs.readFileSync(path.join(__dirname, '../fixtures/stripe', `${name}.json`), 'utf8')) as Record<
        string,
        unknown
      >;
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
