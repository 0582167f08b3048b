import http from 'node:http';
import type { AddressInfo } from 'node:net';
import fs from 'node:fs';
import path from 'node:path';
import { MockActivityEnvironment } from '@temporalio/testing';
import { lookupResume } from '../../activities/lookupProgress';
import { ProviderError } from '../../src/providers/errors';
import { StripeProvider } from '../../src/providers/stripe/client';
import type { CreatePaymentInput, LookupProgress, PaymentLookup } from '../../src/providers/types';

/**
 * A lookup of several Stripe calls resumes where an earlier attempt of its activity stopped
 * (decision 0064): what it learned between calls is heartbeated, and a retried attempt starts
 * from the last heartbeat details (activities/lookupProgress.ts). The activity context is
 * Temporal's MockActivityEnvironment (each attempt one environment, given the details the
 * server would hand the retry); Stripe is a stand-in that records every request, since
 * stripe-mock can neither fail one call of a lookup nor answer a key conflict.
 */
const fixture = (name: string) =>
  JSON.parse(fs.readFileSync(path.join(__dirname, '../fixtures/stripe', `${name}.json`), 'utf8')) as Record<
    string,
    unknown
  >;

const KEY = 'pay_01J0RESUME';
const PI = 'pi_1PgafyB7WZ01zgkWSjxsAJo3';
const SESSION = 'cs_test_resume1';
const pi = { ...fixture('payment_intent'), id: PI, status: 'succeeded', metadata: { idempotencyKey: KEY } };
const session = {
  ...fixture('checkout_session'),
  id: SESSION,
  status: 'complete',
  payment_status: 'paid',
  amount_total: 1099,
  currency: 'usd',
  payment_intent: pi,
  metadata: { idempotencyKey: KEY },
};

const refund = {
  ...fixture('refund'),
  status: 'succeeded',
  amount: 100,
  currency: 'usd',
  payment_intent: PI,
  metadata: { idempotencyKey: 'rf_01J0RESUME' },
};

/** A stand-in Stripe: `fail` answers a request 503 (Stripe's 5xx: ambiguous) while it says so. */
async function standIn(fail: (req: string) => boolean) {
  const seen: string[] = [];
  const server = http.createServer((req, res) => {
    const line = `${req.method} ${(req.url ?? '').split('?')[0]}`;
    seen.push(line);
    res.setHeader('content-type', 'application/json');
    if (fail(line)) {
      res.writeHead(503);
      res.end(JSON.stringify({ error: { type: 'api_error', message: 'try again' } }));
      return;
    }
    if (req.method === 'POST') {
      res.writeHead(400);
      res.end(
        JSON.stringify({
          error: {
            type: 'idempotency_error',
            message: 'Keys for idempotent requests can only be used with the same parameters.',
          },
        }),
      );
      return;
    }
    const list = (data: unknown[], object = 'list') => JSON.stringify({ object, data, has_more: false, url: '/' });
    if (line === 'GET /v1/payment_intents/search') res.end(list([pi], 'search_result'));
    else if (line === 'GET /v1/checkout/sessions') res.end(list([{ ...session, payment_intent: PI }]));
    else if (line === `GET /v1/checkout/sessions/${SESSION}`) res.end(JSON.stringify(session));
    else if (line === `GET /v1/payment_intents/${PI}`) res.end(JSON.stringify(pi));
    else if (line === 'GET /v1/refunds') res.end(list([refund]));
    else {
      res.writeHead(404);
      res.end(JSON.stringify({ error: { type: 'invalid_request_error', message: `no ${line}` } }));
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const provider = new StripeProvider({
    secretKey: 'sk_test_123',
    webhookSecret: null,
    apiBase: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    timeoutMs: 3000,
  });
  return { seen, provider, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

/** One attempt of an activity that looks the payment up, as activities/payments.ts does. */
async function attempt(provider: StripeProvider, lookup: PaymentLookup, heartbeatDetails?: unknown) {
  const env = new MockActivityEnvironment(heartbeatDetails === undefined ? {} : { heartbeatDetails });
  const heartbeats: LookupProgress[] = [];
  env.on('heartbeat', (details: LookupProgress) => heartbeats.push(details));
  try {
    const found = await env.run(() => provider.findPayment({ ...lookup, resume: lookupResume() }));
    return { found, heartbeats, error: null };
  } catch (error) {
    return { found: undefined, heartbeats, error };
  }
}

const request = (mode: 'card' | 'checkout'): CreatePaymentInput => ({
  idempotencyKey: KEY,
  amountMinor: 1099,
  currency: 'USD',
  mode,
  ...(mode === 'card' ? { cardToken: 'pm_1Pgc75B7WZ01zgkWlHVgdEGJ' } : { returnUrl: 'https://shop.example/back' }),
  metadata: { paymentId: KEY },
});

describe('a provider lookup heartbeats what it learned; a retried attempt resumes from it', () => {
  it('a hosted payment past the replay window: its PaymentIntent found, the session list fails; the retry lists sessions of that PaymentIntent, no search again', async () => {
    let listFails = true;
    const stripe = await standIn((line) => listFails && line === 'GET /v1/checkout/sessions');
    try {
      const lookup: PaymentLookup = {
        idempotencyKey: KEY,
        mode: 'checkout',
        notBefore: new Date(Date.now() - 30 * 3_600_000),
        request: request('checkout'),
      };
      const first = await attempt(stripe.provider, lookup);
      expect(first.error).toBeInstanceOf(ProviderError);
      expect(first.error).toMatchObject({ kind: 'timeout' });
      // Alive at the start, then each fact: the replay window has passed, the PaymentIntent found.
      expect(first.heartbeats).toEqual([{}, { replayPassed: true }, { replayPassed: true, objectId: PI }]);
      expect(stripe.seen).toEqual(['GET /v1/payment_intents/search', 'GET /v1/checkout/sessions']);

      listFails = false;
      stripe.seen.length = 0;
      const retry = await attempt(stripe.provider, lookup, first.heartbeats.at(-1));
      expect(retry.error).toBeNull();
      expect(retry.found).toMatchObject({ transactionId: SESSION, status: 'succeeded', amountMinor: 1099 });
      // Nothing asked twice: no replay, no search; the session list of the PaymentIntent, then the session.
      expect(stripe.seen).toEqual(['GET /v1/checkout/sessions', `GET /v1/checkout/sessions/${SESSION}`]);
      expect(retry.heartbeats.at(-1)).toEqual({ replayPassed: true, objectId: SESSION });

      // A third attempt (say the database failed after the lookup) reads the session by its id.
      stripe.seen.length = 0;
      const third = await attempt(stripe.provider, lookup, retry.heartbeats.at(-1));
      expect(third.found).toMatchObject({ transactionId: SESSION, status: 'succeeded' });
      expect(stripe.seen).toEqual([`GET /v1/checkout/sessions/${SESSION}`]);
    } finally {
      await stripe.close();
    }
  });

  it('a card charge whose replay conflicts (idempotency_error) and whose search fails: the retry searches at once, no replay', async () => {
    let searchFails = true;
    const stripe = await standIn((line) => searchFails && line === 'GET /v1/payment_intents/search');
    try {
      const lookup: PaymentLookup = {
        idempotencyKey: KEY,
        mode: 'card',
        notBefore: new Date(Date.now() - 60_000),
        request: request('card'),
      };
      const first = await attempt(stripe.provider, lookup);
      expect(first.error).toMatchObject({ kind: 'timeout' });
      expect(first.heartbeats.at(-1)).toEqual({ replayPassed: true });
      expect(stripe.seen).toEqual(['POST /v1/payment_intents', 'GET /v1/payment_intents/search']);

      searchFails = false;
      stripe.seen.length = 0;
      const retry = await attempt(stripe.provider, lookup, first.heartbeats.at(-1));
      expect(retry.found).toMatchObject({ transactionId: PI, status: 'succeeded' });
      expect(stripe.seen).toEqual(['GET /v1/payment_intents/search']);
      expect(retry.heartbeats.at(-1)).toEqual({ replayPassed: true, objectId: PI });
    } finally {
      await stripe.close();
    }
  });

  it("a refund of a hosted payment: the session's PaymentIntent found, the refund list fails; the retry lists at once", async () => {
    let listFails = true;
    const stripe = await standIn((line) => listFails && line === 'GET /v1/refunds');
    try {
      const run = async (heartbeatDetails?: unknown) => {
        const env = new MockActivityEnvironment(heartbeatDetails === undefined ? {} : { heartbeatDetails });
        const heartbeats: LookupProgress[] = [];
        env.on('heartbeat', (details: LookupProgress) => heartbeats.push(details));
        const lookup = () =>
          stripe.provider.findRefund({
            idempotencyKey: 'rf_01J0RESUME',
            transactionId: SESSION,
            resume: lookupResume(),
          });
        return { found: await env.run(lookup).catch((err: unknown) => err), heartbeats };
      };
      const first = await run();
      expect(first.found).toMatchObject({ kind: 'timeout' });
      expect(first.heartbeats.at(-1)).toEqual({ objectId: PI });
      expect(stripe.seen).toEqual([`GET /v1/checkout/sessions/${SESSION}`, 'GET /v1/refunds']);

      listFails = false;
      stripe.seen.length = 0;
      const retry = await run(first.heartbeats.at(-1));
      expect(retry.found).toMatchObject({ transactionId: SESSION, status: 'succeeded', amountMinor: 100 });
      expect(stripe.seen).toEqual(['GET /v1/refunds']);
    } finally {
      await stripe.close();
    }
  });

  it('details it does not know (another shape, an older version) are ignored: the lookup starts over', async () => {
    const stripe = await standIn(() => false);
    try {
      const lookup: PaymentLookup = {
        idempotencyKey: KEY,
        mode: 'card',
        notBefore: new Date(Date.now() - 60_000),
        request: request('card'),
      };
      const retry = await attempt(stripe.provider, lookup, { objectId: 42, replayPassed: 'yes' });
      expect(retry.found).toMatchObject({ transactionId: PI });
      expect(stripe.seen).toEqual(['POST /v1/payment_intents', 'GET /v1/payment_intents/search']);
    } finally {
      await stripe.close();
    }
  });

  it('outside an activity (a script, a test calling the factory) or in a local one: no resume, nothing to heartbeat', async () => {
    expect(lookupResume()).toBeUndefined();
    const local = new MockActivityEnvironment({ isLocal: true, heartbeatDetails: { objectId: PI } });
    const heartbeats: unknown[] = [];
    local.on('heartbeat', (d: unknown) => heartbeats.push(d));
    expect(await local.run(async () => lookupResume())).toBeUndefined();
    expect(heartbeats).toEqual([]);
  });
});
