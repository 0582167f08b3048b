import Stripe from 'stripe';
import fs from 'node:fs';
import path from 'node:path';
import { ProviderError, ProviderWebhookError } from '../../src/providers/errors';
import {
  checkoutExpiresAt,
  fromStripeAmount,
  mapAttachDecline,
  mapAttachedPaymentMethod,
  mapCardDecline,
  mapCheckoutSession,
  mapEvent,
  mapPaymentIntent,
  mapRefund,
  mapSetupIntent,
  mapStripeError,
  parseCardToken,
  refundReason,
  stripeKeyMode,
  toStripeAmount,
} from '../../src/providers/stripe/mapping';

/**
 * The Stripe mapping, fed with Stripe's own object shapes: test/fixtures/stripe/ holds objects
 * served by stripe-mock (generated from Stripe's OpenAPI), trimmed; each test changes only the
 * fields the case is about. Errors are built by stripe-node's own classes, the way its request
 * sender builds them from a response.
 */
type Json = Record<string, unknown>;
const fixture = (name: string, overrides: Json = {}): Json => ({
  ...(JSON.parse(fs.readFileSync(path.join(__dirname, '../fixtures/stripe', `${name}.json`), 'utf8')) as Json),
  ...overrides,
});

const providerError = (fn: () => unknown): ProviderError => {
  try {
    fn();
  } catch (err) {
    if (err instanceof ProviderError) return err;
    throw err;
  }
  throw new Error('expected a ProviderError');
};

describe('amounts', () => {
  it.each([
    [1234, 'USD', 1234],
    [500, 'JPY', 500],
    [7, 'ISK', 700], // ISO zero-decimal, two-decimal in Stripe's API (whole kronur)
    [12340, 'KWD', 12340],
    [1200, 'MGA', 12], // ISO two-decimal, zero-decimal for Stripe
    [50, 'UGX', 50],
  ])('%d minor units of %s are %d for Stripe, and back', (minor, currency, stripe) => {
    expect(toStripeAmount(minor, currency)).toBe(stripe);
    expect(fromStripeAmount(stripe, currency.toLowerCase())).toBe(minor);
  });

  it.each([
    [12345, 'KWD', 'the last decimal must be 0'],
    [1250, 'MGA', 'Stripe takes 0 decimals'],
  ])('refuses %d of %s, which Stripe cannot represent', (minor, currency, why) => {
    const err = providerError(() => toStripeAmount(minor, currency));
    expect(err.kind).toBe('rejected');
    expect(err.code).toBe('amount_not_supported');
    expect(err.message).toContain(why);
  });

  it('an answer in a currency we do not know is invalid', () => {
    expect(providerError(() => fromStripeAmount(100, 'zzz')).kind).toBe('invalid_response');
  });
});

describe('PaymentIntent', () => {
  it('succeeded', () => {
    const p = mapPaymentIntent(fixture('payment_intent', { status: 'succeeded', last_payment_error: null }));
    expect(p).toEqual({
      transactionId: 'pi_1PgafyB7WZ01zgkWSjxsAJo3',
      status: 'succeeded',
      amountMinor: 1099,
      currency: 'USD',
      failureCode: null,
      failureMessage: null,
      redirectUrl: null,
      savedCardToken: null,
      actionUrl: null,
    });
  });

  it('processing is processing (decided later), never pending', () => {
    expect(mapPaymentIntent(fixture('payment_intent', { status: 'processing' }))).toMatchObject({
      status: 'processing',
      failureCode: null,
      actionUrl: null,
    });
  });

  it('requires_action is no decline: requires_action, actionUrl the redirect_to_url page', () => {
    const url = 'https://hooks.stripe.com/3d_secure_2/hosted?merchant=acct_1&payment_intent=pi_1';
    const p = mapPaymentIntent(
      fixture('payment_intent', {
        status: 'requires_action',
        next_action: { type: 'redirect_to_url', redirect_to_url: { url, return_url: 'https://shop.example/r' } },
      }),
    );
    expect(p).toMatchObject({ status: 'requires_action', actionUrl: url, failureCode: null, redirectUrl: null });
    // Another next action (use_stripe_sdk: no page to send the customer to): still no decline.
    expect(
      mapPaymentIntent(
        fixture('payment_intent', { status: 'requires_action', next_action: { type: 'use_stripe_sdk' } }),
      ),
    ).toMatchObject({ status: 'requires_action', actionUrl: null });
  });

  it('a failed authentication (back to requires_payment_method) is authentication_failed', () => {
    const error = { type: 'invalid_request_error', code: 'payment_intent_authentication_failure', message: 'No.' };
    expect(
      mapPaymentIntent(fixture('payment_intent', { status: 'requires_payment_method', last_payment_error: error })),
    ).toMatchObject({ status: 'failed', failureCode: 'authentication_failed' });
  });

  it.each(['requires_confirmation', 'requires_capture', 'requires_reauthorization', 'a_status_from_2030'])(
    '%s (never asked for, or unknown) is invalid_response: ambiguous, asked again, never a decline',
    (status) => {
      const err = providerError(() => mapPaymentIntent(fixture('payment_intent', { status })));
      expect(err.kind).toBe('invalid_response');
      expect(err.ambiguous).toBe(true);
      expect(err.message).toContain(status);
    },
  );

  it('requires_payment_method: failed with the decline code, else the code, else payment_failed', () => {
    const error = { type: 'card_error', code: 'card_declined', decline_code: 'insufficient_funds', message: 'No.' };
    const status = 'requires_payment_method';
    expect(mapPaymentIntent(fixture('payment_intent', { status, last_payment_error: error }))).toMatchObject({
      status: 'failed',
      failureCode: 'insufficient_funds',
      failureMessage: 'No.',
    });
    const noDecline = { ...error, decline_code: undefined, code: 'expired_card' };
    expect(mapPaymentIntent(fixture('payment_intent', { status, last_payment_error: noDecline })).failureCode).toBe(
      'expired_card',
    );
    // stripe-mock's own fixture: an error with a type only.
    expect(mapPaymentIntent(fixture('payment_intent', { status })).failureCode).toBe('payment_failed');
  });

  it('canceled, with its cancellation reason', () => {
    const p = mapPaymentIntent(fixture('payment_intent', { status: 'canceled', cancellation_reason: 'abandoned' }));
    expect(p).toMatchObject({ status: 'canceled', failureCode: 'abandoned' });
  });

  it('amounts follow the currency: a zero-decimal one is taken as is', () => {
    expect(mapPaymentIntent(fixture('payment_intent', { amount: 500, currency: 'jpy' }))).toMatchObject({
      amountMinor: 500,
      currency: 'JPY',
    });
  });

  it.each([
    ['no status', { status: undefined }],
    ['a missing amount', { amount: undefined }],
    ['another object', { object: 'charge' }],
  ])('%s is invalid_response', (_name, overrides) => {
    expect(providerError(() => mapPaymentIntent(fixture('payment_intent', overrides))).kind).toBe('invalid_response');
  });
});

describe("SetupIntent (a subscription's new card, confirmed with a token)", () => {
  it('succeeded: verified, the card kept as cus_...:pm_..., amount 0 in our currency', () => {
    const p = mapSetupIntent(
      fixture('setup_intent', {
        status: 'succeeded',
        customer: 'cus_1',
        payment_method: 'pm_1',
        last_setup_error: null,
      }),
      'eur',
    );
    expect(p).toEqual({
      transactionId: expect.stringMatching(/^seti_/),
      status: 'succeeded',
      amountMinor: 0,
      currency: 'EUR',
      redirectUrl: null,
      savedCardToken: 'cus_1:pm_1',
      failureCode: null,
      failureMessage: null,
      actionUrl: null,
    });
  });

  it("not succeeded: failed with Stripe's code, nothing kept", () => {
    const p = mapSetupIntent(
      fixture('setup_intent', {
        status: 'requires_payment_method',
        last_setup_error: { type: 'card_error', code: 'card_declined', decline_code: 'do_not_honor', message: 'No.' },
      }),
      'USD',
    );
    expect(p).toMatchObject({
      status: 'failed',
      failureCode: 'do_not_honor',
      failureMessage: 'No.',
      savedCardToken: null,
    });
  });
});

describe('Checkout Session', () => {
  const pi = (overrides: Json = {}) => fixture('payment_intent', overrides);
  const session = (overrides: Json) =>
    fixture('checkout_session', { amount_total: 2500, currency: 'eur', ...overrides });

  it('open: pending, with the hosted page', () => {
    expect(mapCheckoutSession(session({ status: 'open', payment_status: 'unpaid' }))).toEqual({
      transactionId: 'cs_test_a1YS1URlnyQCN5fUUduORoQ7Pw41PJqDWkIVQCpJPqkfIhd6tVY8XB1OLY',
      status: 'pending',
      amountMinor: 2500,
      currency: 'EUR',
      failureCode: null,
      failureMessage: null,
      redirectUrl:
        'https://checkout.stripe.com/pay/c/cs_test_a1YS1URlnyQCN5fUUduORoQ7Pw41PJqDWkIVQCpJPqkfIhd6tVY8XB1OLY',
      savedCardToken: null,
      actionUrl: null,
    });
  });

  it.each([
    ['open', 'unpaid', 'pending'],
    ['open', 'paid', 'pending'],
    ['complete', 'paid', 'succeeded'],
    ['complete', 'no_payment_required', 'succeeded'],
    ['complete', 'unpaid', 'processing'], // an asynchronous payment method, decided later
    ['expired', 'unpaid', 'canceled'],
    [null, 'unpaid', 'pending'],
  ])('status %s, payment_status %s: %s', (status, paymentStatus, ours) => {
    const p = mapCheckoutSession(session({ status, payment_status: paymentStatus, url: null }));
    expect(p.status).toBe(ours);
    if (ours === 'canceled') expect(p.failureCode).toBe('expired');
  });

  it('complete and paid with the card saved: savedCardToken cus_...:pm_...', () => {
    const p = mapCheckoutSession(
      session({
        status: 'complete',
        payment_status: 'paid',
        url: null,
        customer: 'cus_QXg1o8vcGmoR32',
        payment_intent: pi({ status: 'succeeded', setup_future_usage: 'off_session', payment_method: 'pm_1Pgag2' }),
      }),
    );
    expect(p).toMatchObject({ status: 'succeeded', savedCardToken: 'cus_QXg1o8vcGmoR32:pm_1Pgag2' });
    // The PaymentMethod not expanded: its card is unknown, not blank.
    expect(p).not.toHaveProperty('savedCard');
  });

  it('complete and paid with the card saved, its PaymentMethod expanded: the card it names', () => {
    const p = mapCheckoutSession(
      session({
        status: 'complete',
        payment_status: 'paid',
        customer: 'cus_QXg1o8vcGmoR32',
        payment_intent: pi({
          status: 'succeeded',
          setup_future_usage: 'off_session',
          payment_method: fixture('payment_method'),
        }),
      }),
    );
    expect(p).toMatchObject({
      savedCardToken: 'cus_QXg1o8vcGmoR32:pm_1PgafzB7WZ01zgkW',
      savedCard: { brand: 'visa', last4: '4242', expMonth: 8, expYear: 2030 },
    });
  });

  it('complete and paid without saving: no token', () => {
    const p = mapCheckoutSession(
      session({ status: 'complete', payment_status: 'paid', payment_intent: pi({ payment_method: 'pm_1' }) }),
    );
    expect(p.savedCardToken).toBeNull();
  });

  it('without an amount (nullable in the spec): what we asked for on create, else the PaymentIntent', () => {
    const bare = session({ amount_total: null, currency: null, status: 'open', payment_status: 'unpaid' });
    expect(mapCheckoutSession(bare, { amountMinor: 1234, currency: 'GBP' })).toMatchObject({
      amountMinor: 1234,
      currency: 'GBP',
    });
    expect(mapCheckoutSession({ ...bare, payment_intent: pi() })).toMatchObject({
      amountMinor: 1099,
      currency: 'USD',
    });
    expect(providerError(() => mapCheckoutSession(bare)).kind).toBe('invalid_response');
  });

  it('setup mode, complete: succeeded with the SetupIntent card as cus_...:pm_...', () => {
    const si = fixture('setup_intent', {
      status: 'succeeded',
      customer: 'cus_QXg1o8vcGmoR32',
      payment_method: 'pm_1PgafzB7WZ01zgkW',
      last_setup_error: null,
    });
    const p = mapCheckoutSession(
      session({
        mode: 'setup',
        status: 'complete',
        payment_status: 'no_payment_required',
        amount_total: null,
        payment_intent: null,
        setup_intent: si,
      }),
    );
    expect(p).toMatchObject({
      status: 'succeeded',
      amountMinor: 0,
      currency: 'EUR',
      savedCardToken: 'cus_QXg1o8vcGmoR32:pm_1PgafzB7WZ01zgkW',
    });
  });

  it('setup mode, complete, the SetupIntent PaymentMethod expanded: the card it names', () => {
    const si = fixture('setup_intent', {
      status: 'succeeded',
      customer: 'cus_QXg1o8vcGmoR32',
      payment_method: fixture('payment_method', { card: { brand: 'mastercard', last4: '4444', exp_month: 12 } }),
      last_setup_error: null,
    });
    const p = mapCheckoutSession(
      session({ mode: 'setup', status: 'complete', payment_status: 'no_payment_required', setup_intent: si }),
    );
    expect(p).toMatchObject({
      savedCardToken: 'cus_QXg1o8vcGmoR32:pm_1PgafzB7WZ01zgkW',
      savedCard: { brand: 'mastercard', last4: '4444', expMonth: 12, expYear: null },
    });
  });

  it('setup mode: the session customer when the SetupIntent names none; open is pending', () => {
    const si = fixture('setup_intent', {
      status: 'succeeded',
      payment_method: { id: 'pm_9', object: 'payment_method' },
    });
    const base = { mode: 'setup', amount_total: null, customer: 'cus_1', setup_intent: si };
    expect(
      mapCheckoutSession(session({ ...base, status: 'complete', payment_status: 'no_payment_required' })),
    ).toMatchObject({ savedCardToken: 'cus_1:pm_9' });
    expect(mapCheckoutSession(session({ ...base, status: 'open', payment_status: 'no_payment_required' })).status).toBe(
      'pending',
    );
    expect(
      mapCheckoutSession(session({ ...base, status: 'expired', payment_status: 'no_payment_required' })).status,
    ).toBe('canceled');
  });

  it('a Stripe subscription session or an unknown status is invalid_response', () => {
    expect(providerError(() => mapCheckoutSession(session({ mode: 'subscription' }))).kind).toBe('invalid_response');
    expect(providerError(() => mapCheckoutSession(session({ status: 'paused' }))).kind).toBe('invalid_response');
  });

  it('expires_at is the payment expiry, clamped to 30 min..24 h from now (with a margin)', () => {
    const now = new Date('2026-01-01T00:00:00Z');
    const at = (ms: number) => checkoutExpiresAt(new Date(now.getTime() + ms), now) - now.getTime() / 1000;
    expect(at(3_600_000)).toBe(3600);
    expect(at(60_000)).toBe(33 * 60);
    expect(at(48 * 3_600_000)).toBe(24 * 3600 - 120);
  });

  it('expires_at is the same for a create replayed within the minute (Stripe refuses other parameters)', () => {
    const expiresAt = new Date('2026-01-03T00:00:00Z');
    const first = checkoutExpiresAt(expiresAt, new Date('2026-01-01T00:00:00.100Z'));
    expect(checkoutExpiresAt(expiresAt, new Date('2026-01-01T00:00:59.900Z'))).toBe(first);
    // Still inside Stripe's 24 h from the later moment.
    expect(first * 1000).toBeLessThan(Date.parse('2026-01-01T00:00:59.900Z') + 24 * 3_600_000);
  });
});

describe('Refund', () => {
  const refund = (overrides: Json) =>
    fixture('refund', {
      payment_intent: 'pi_1PgafyB7WZ01zgkWSjxsAJo3',
      metadata: { reference_id: 'ext-1' },
      ...overrides,
    });

  it.each([
    ['succeeded', 'succeeded'],
    ['pending', 'pending'],
    ['requires_action', 'pending'],
    [null, 'pending'],
  ])('%s is %s', (status, ours) => {
    expect(mapRefund(refund({ status })).status).toBe(ours);
  });

  it.each([
    ['failed', 'insufficient_funds', 'insufficient_funds'],
    ['failed', 'expired_or_canceled_card', 'expired_or_canceled_card'],
    ['canceled', null, 'canceled'],
  ])('%s (failure_reason %s) is failed with %s', (status, reason, code) => {
    expect(mapRefund(refund({ status, failure_reason: reason }))).toMatchObject({
      status: 'failed',
      failureCode: code,
    });
  });

  it('maps amount, currency, reference, and the PaymentIntent as its transaction', () => {
    expect(mapRefund(refund({ status: 'succeeded' }))).toEqual({
      refundId: 're_1PgafuB7WZ01zgkWdzQ6ZC3Y',
      transactionId: 'pi_1PgafyB7WZ01zgkWSjxsAJo3',
      status: 'succeeded',
      amountMinor: 100,
      currency: 'USD',
      referenceId: 'ext-1',
      failureCode: null,
      failureMessage: null,
    });
  });

  it('within a Checkout payment: reported under our cs_ transaction only when it refunds that PaymentIntent', () => {
    const within = { transactionId: 'cs_test_1', paymentIntentId: 'pi_1PgafyB7WZ01zgkWSjxsAJo3' };
    expect(mapRefund(refund({}), within).transactionId).toBe('cs_test_1');
    expect(mapRefund(refund({ payment_intent: 'pi_other' }), within).transactionId).toBe('pi_other');
  });

  it('reason: Stripe enum values go as reason, anything else into metadata', () => {
    expect(refundReason('duplicate')).toEqual({ reason: 'duplicate', metadata: {} });
    expect(refundReason('customer changed their mind')).toEqual({
      metadata: { reason: 'customer changed their mind' },
    });
    expect(refundReason(undefined)).toEqual({ metadata: {} });
  });
});

describe('key modes', () => {
  it.each([
    ['sk_live_abc', 'live'],
    ['rk_live_abc', 'live'],
    ['sk_test_abc', 'test'],
    ['rk_test_abc', 'test'],
    ['pk_live_abc', null],
    ['whsec_abc', null],
    ['sk_abc', null],
    ['xsk_live_abc', null],
  ])('%s is %s', (key, mode) => {
    expect(stripeKeyMode(key)).toBe(mode);
  });
});

describe('card tokens', () => {
  it('pm_... alone or cus_...:pm_...', () => {
    expect(parseCardToken('pm_1')).toEqual({ paymentMethod: 'pm_1' });
    expect(parseCardToken('cus_1:pm_1')).toEqual({ customer: 'cus_1', paymentMethod: 'pm_1' });
    for (const bad of ['a:b:c', 'tok_success', 'cus_1:', ':pm_1', 'pm_1:cus_1', 'cus_1:pm_1:x', 'card_1', 'pm_1 ']) {
      expect(providerError(() => parseCardToken(bad))).toMatchObject({ kind: 'rejected', code: 'invalid_card_token' });
    }
  });
});

describe('webhook events', () => {
  const event = (type: string, object: Json) => fixture('event', { type, data: { object } });
  const meta = { paymentId: 'pay_1', idempotencyKey: 'pay_1' };

  it.each([
    ['payment_intent.requires_action', 'requires_action', 'requires_action'],
    ['payment_intent.processing', 'processing', 'processing'],
    ['payment_intent.succeeded', 'succeeded', 'succeeded'],
    ['payment_intent.payment_failed', 'requires_payment_method', 'failed'],
    ['payment_intent.canceled', 'canceled', 'canceled'],
  ])('%s is a payment event (%s: %s) with the metadata and livemode', (type, status, ours) => {
    const e = mapEvent(event(type, fixture('payment_intent', { status, metadata: meta })));
    expect(e).toMatchObject({ kind: 'payment', type, payment: { status: ours }, metadata: meta, livemode: false });
    const live = mapEvent({ ...event(type, fixture('payment_intent', { status, metadata: meta })), livemode: true });
    expect(live.livemode).toBe(true);
  });

  it.each(['checkout.session.completed', 'checkout.session.expired', 'checkout.session.async_payment_succeeded'])(
    '%s is a payment event',
    (type) => {
      const s = fixture('checkout_session', { amount_total: 100, currency: 'usd', metadata: meta });
      expect(mapEvent(event(type, s))).toMatchObject({ kind: 'payment', type, metadata: meta });
    },
  );

  it.each(['refund.created', 'refund.updated', 'refund.failed', 'charge.refund.updated'])(
    '%s is a refund event',
    (type) => {
      const r = fixture('refund', { payment_intent: 'pi_1', metadata: { refundId: 'ref_1' } });
      expect(mapEvent(event(type, r))).toMatchObject({
        kind: 'refund',
        type,
        refund: { refundId: 're_1PgafuB7WZ01zgkWdzQ6ZC3Y', transactionId: 'pi_1' },
        metadata: { refundId: 'ref_1' },
      });
    },
  );

  it('any other event type is ignored', () => {
    expect(mapEvent(fixture('event', { data: { object: fixture('customer') } }))).toEqual({
      kind: 'ignored',
      type: 'plan.created',
      livemode: false,
    });
    expect(mapEvent(event('setup_intent.succeeded', fixture('setup_intent')))).toEqual({
      kind: 'ignored',
      type: 'setup_intent.succeeded',
      livemode: false,
    });
  });

  it('a verified event whose object we cannot read (an unknown status) is ignored with the reason, never an error', () => {
    const e = mapEvent(event('payment_intent.succeeded', fixture('payment_intent', { status: 'x_new' })));
    expect(e).toMatchObject({ kind: 'ignored', type: 'payment_intent.succeeded', livemode: false });
    expect(e.kind === 'ignored' && e.reason).toContain('x_new');
  });

  it('what is not a Stripe event (or has no livemode) is a webhook error', () => {
    expect(() => mapEvent({ hello: 'world' })).toThrow(ProviderWebhookError);
    expect(() => mapEvent({ ...fixture('event'), livemode: undefined })).toThrow(ProviderWebhookError);
  });
});

describe('payment methods attached to a Customer (decision 0087)', () => {
  it('its reference is the saved-card token charges send (cus_...:pm_...), with the card shown', () => {
    const pm = {
      object: 'payment_method',
      id: 'pm_1Q0',
      customer: 'cus_Q0',
      card: { brand: 'visa', last4: '4242', exp_month: 8, exp_year: 2030, funding: 'credit' },
    };
    expect(mapAttachedPaymentMethod(pm, 'cus_Q0')).toEqual({
      status: 'attached',
      reference: 'cus_Q0:pm_1Q0',
      providerCustomerId: 'cus_Q0',
      card: { brand: 'visa', last4: '4242', expMonth: 8, expYear: 2030 },
    });
    expect(mapAttachedPaymentMethod({ ...pm, customer: null, card: null }, 'cus_Q1')).toEqual({
      status: 'attached',
      reference: 'cus_Q1:pm_1Q0',
      providerCustomerId: 'cus_Q1',
      card: { brand: null, last4: null, expMonth: null, expYear: null },
    });
    expect(() => mapAttachedPaymentMethod({ object: 'customer', id: 'cus_Q0' }, 'cus_Q0')).toThrow(ProviderError);
  });
});

describe('errors', () => {
  /** The way stripe-node's request sender turns an error response into an error. */
  const fromResponse = (statusCode: number, error: Json) =>
    Stripe.errors.StripeError.generate({ ...error, statusCode } as Parameters<
      typeof Stripe.errors.StripeError.generate
    >[0]);
  const mapped = (err: unknown) => mapStripeError(err) as ProviderError;
  const cardError = (fixture('card_error').error as Json) ?? {};

  it('a card decline on confirm is a failed payment with the decline code, not an error', () => {
    const err = fromResponse(402, cardError);
    expect(err).toBeInstanceOf(Stripe.errors.StripeCardError);
    expect(mapCardDecline(err, { amountMinor: 1099, currency: 'USD' })).toEqual({
      transactionId: 'pi_1PgafyB7WZ01zgkWSjxsAJo3',
      status: 'failed',
      amountMinor: 1099,
      currency: 'USD',
      failureCode: 'insufficient_funds',
      failureMessage: 'Your card has insufficient funds.',
      redirectUrl: null,
      savedCardToken: null,
      actionUrl: null,
    });
  });

  it('a card error naming only the PaymentIntent id; one naming none is no payment', () => {
    const idOnly = fromResponse(402, { ...cardError, payment_intent: 'pi_9', decline_code: undefined });
    expect(mapCardDecline(idOnly, { amountMinor: 500, currency: 'EUR' })).toMatchObject({
      transactionId: 'pi_9',
      failureCode: 'card_declined',
      amountMinor: 500,
    });
    const none = fromResponse(402, { ...cardError, payment_intent: undefined });
    expect(mapCardDecline(none, { amountMinor: 500, currency: 'EUR' })).toBeNull();
    expect(mapped(none)).toMatchObject({ kind: 'rejected', code: 'insufficient_funds' });
    expect(mapCardDecline(new Error('x'), { amountMinor: 1, currency: 'EUR' })).toBeNull();
  });

  it("a card refused while attaching it to a Customer is a declined verification with Stripe's code", () => {
    const err = fromResponse(402, { ...cardError, decline_code: 'lost_card', payment_intent: undefined });
    expect(mapAttachDecline(err)).toEqual({
      status: 'declined',
      declineCode: 'lost_card',
      message: 'Your card has insufficient funds.',
    });
    expect(mapAttachDecline(fromResponse(402, { ...cardError, decline_code: undefined }))).toMatchObject({
      declineCode: 'card_declined',
    });
    expect(mapAttachDecline(new Error('x'))).toBeNull();
  });

  it('connection refused before sending: unavailable; any other connection failure: timeout', () => {
    const refused = new Stripe.errors.StripeConnectionError({
      message: 'An error occurred with our connection to Stripe.',
      detail: Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:9'), { code: 'ECONNREFUSED' }),
    });
    expect(mapped(refused).kind).toBe('unavailable');
    const timedOut = new Stripe.errors.StripeConnectionError({
      message: 'Request aborted due to timeout being reached (2000ms)',
      detail: Object.assign(new TypeError('ETIMEDOUT'), { code: 'ETIMEDOUT' }),
    });
    expect(mapped(timedOut).kind).toBe('timeout');
    const reset = new Stripe.errors.StripeConnectionError({
      message: 'An error occurred with our connection to Stripe.',
      detail: Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' }),
    });
    expect(mapped(reset).kind).toBe('timeout');
  });

  it('5xx (StripeAPIError): timeout, ambiguous; 409 (key in use): timeout too', () => {
    const e500 = fromResponse(500, { type: 'api_error', message: 'Something went wrong.' });
    expect(e500).toBeInstanceOf(Stripe.errors.StripeAPIError);
    expect(mapped(e500).kind).toBe('timeout');
    expect(mapped(e500).ambiguous).toBe(true);
    const e409 = fromResponse(409, { type: 'invalid_request_error', code: 'idempotency_key_in_use' });
    expect(mapped(e409).kind).toBe('timeout');
  });

  it('a body that is not JSON: invalid_response', () => {
    const err = new Stripe.errors.StripeAPIError({
      message: 'Invalid JSON received from the Stripe API',
      exception: new SyntaxError('Unexpected token < in JSON'),
    } as ConstructorParameters<typeof Stripe.errors.StripeAPIError>[0]);
    expect(mapped(err).kind).toBe('invalid_response');
  });

  it('429: unavailable (nothing done)', () => {
    const err = fromResponse(429, { type: 'invalid_request_error', code: 'rate_limit', message: 'Too many requests' });
    expect(err).toBeInstanceOf(Stripe.errors.StripeRateLimitError);
    expect(mapped(err).kind).toBe('unavailable');
  });

  it('401 / 403: misconfigured, and the message carries no key', () => {
    const e401 = fromResponse(401, {
      type: 'invalid_request_error',
      message: 'Invalid API Key provided: sk_live_****abcd',
    });
    expect(e401).toBeInstanceOf(Stripe.errors.StripeAuthenticationError);
    expect(mapped(e401).kind).toBe('misconfigured');
    expect(mapped(e401).message).not.toContain('sk_live');
    const e403 = fromResponse(403, { type: 'invalid_request_error', message: 'restricted key' });
    expect(e403).toBeInstanceOf(Stripe.errors.StripePermissionError);
    expect(mapped(e403).kind).toBe('misconfigured');
  });

  it('400 invalid request: rejected with its code; idempotency errors are a conflict', () => {
    const invalid = fromResponse(400, {
      type: 'invalid_request_error',
      code: 'amount_too_small',
      param: 'amount',
      message: 'Amount must be at least $0.50 usd',
    });
    expect(invalid).toBeInstanceOf(Stripe.errors.StripeInvalidRequestError);
    expect(mapped(invalid)).toMatchObject({ kind: 'rejected', code: 'amount_too_small', conflict: false });
    for (const param of ['payment_method', 'customer']) {
      const unknownCard = fromResponse(400, {
        type: 'invalid_request_error',
        code: 'resource_missing',
        param,
        message: `No such ${param}: 'x'`,
      });
      // The merchant's cardToken names nothing Stripe has: the same answer as for the sandbox.
      expect(mapped(unknownCard)).toMatchObject({ kind: 'rejected', code: 'invalid_card_token', conflict: false });
    }
    const idem = fromResponse(400, {
      type: 'idempotency_error',
      message: 'Keys for idempotent requests can only be used with the same parameters they were first used with.',
    });
    expect(idem).toBeInstanceOf(Stripe.errors.StripeIdempotencyError);
    expect(mapped(idem)).toMatchObject({ kind: 'rejected', code: 'idempotency_error', conflict: true });
  });

  it('our own errors pass through; what is not a Stripe error is returned as is', () => {
    const ours = new ProviderError('rejected', 'x', 'y');
    expect(mapStripeError(ours)).toBe(ours);
    const bug = new TypeError('bug');
    expect(mapStripeError(bug)).toBe(bug);
  });
});
