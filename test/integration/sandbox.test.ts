import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createHmac, randomUUID } from 'node:crypto';
import { createSandbox, type RunningSandbox } from '../../dev/sandbox/server';
import type { Faults } from '../../dev/sandbox/state';

/** The provider sandbox over real HTTP (docs/provider-sandbox.md); no database, no Temporal. */

const API_KEY = 'sk_sandbox_test';
const SECRET = 'whsec_sandbox_test';

interface ReceivedHook {
  signature: string;
  body: string;
  event: { id: string; type: string; createdAt: string; data: Record<string, unknown> };
}

/** A local receiver for webhooks; answers 500 to the next `failures` deliveries. */
class HookReceiver {
  received: ReceivedHook[] = [];
  failures = 0;
  url = '';
  private readonly server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      this.received.push({
        signature: String(req.headers['sandbox-signature'] ?? ''),
        body,
        event: JSON.parse(body) as ReceivedHook['event'],
      });
      if (this.failures > 0) {
        this.failures -= 1;
        res.statusCode = 500;
      }
      res.end();
    });
  });

  async start(): Promise<void> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/hooks`;
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise((resolve) => this.server.close(resolve));
  }

  async waitFor(count: number, timeoutMs = 3000): Promise<ReceivedHook[]> {
    const deadline = Date.now() + timeoutMs;
    while (this.received.length < count) {
      if (Date.now() > deadline) throw new Error(`expected ${count} webhooks, got ${this.received.length}`);
      await new Promise((r) => setTimeout(r, 20));
    }
    return this.received;
  }
}

function verifySignature(hook: ReceivedHook): boolean {
  const match = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(hook.signature);
  if (!match) return false;
  const [, t, v1] = match;
  const expected = createHmac('sha256', SECRET).update(`${t}.${hook.body}`).digest('hex');
  return expected === v1 && Math.abs(Date.now() / 1000 - Number(t)) < 60;
}

interface Answer {
  status: number;
  headers: Headers;
  text: string;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- answers are checked field by field
  json: any;
}

let sandbox: RunningSandbox;
let base: string;
const hooks = new HookReceiver();

async function call(
  method: string,
  path: string,
  opts: { body?: unknown; headers?: Record<string, string>; auth?: boolean; signal?: AbortSignal } = {},
): Promise<Answer> {
  const headers: Record<string, string> = { ...opts.headers };
  if (opts.auth !== false && path.startsWith('/v1')) headers.authorization = `Bearer ${API_KEY}`;
  if (opts.body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(`${base}${path}`, {
    method,
    headers,
    body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
    redirect: 'manual',
    signal: opts.signal,
  });
  const text = await res.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.status, headers: res.headers, text, json };
}

const newKey = () => `pay_${randomUUID()}`;

function createPayment(body: Record<string, unknown>, key = newKey(), signal?: AbortSignal) {
  return call('POST', '/v1/payments', { body, headers: { 'idempotency-key': key }, signal });
}

const card = (cardToken: string, amount = 12.34, currency = 'USD') => ({
  amount,
  currency,
  mode: 'card',
  cardToken,
  metadata: { paymentId: 'pay_test' },
});

async function ledger(): Promise<Array<Record<string, unknown>>> {
  return (await call('GET', '/_admin/ledger')).json.entries;
}

async function setFaults(faults: Record<string, unknown>): Promise<void> {
  expect((await call('POST', '/_admin/faults', { body: faults })).status).toBe(200);
}

async function capture(amount: number, currency = 'USD'): Promise<string> {
  const res = await createPayment(card('tok_success', amount, currency));
  expect(res.json.status).toBe('succeeded');
  return res.json.id;
}

function refund(paymentId: string, amount: number, reference = `re_${randomUUID()}`, extra: object = {}) {
  return call('POST', '/v1/refunds', {
    body: { paymentId, amount, currency: 'USD', reference_id: reference, metadata: { refundId: 're_x' }, ...extra },
  });
}

beforeAll(async () => {
  await hooks.start();
  // tok_processing charges settle after half a second here (SANDBOX_PROCESSING_SECONDS, default 5).
  sandbox = await createSandbox({ apiKey: API_KEY, webhookSecret: SECRET, processingSeconds: 0.5 }).listen(0);
  base = sandbox.url;
});

afterAll(async () => {
  await sandbox.close();
  await hooks.close();
});

beforeEach(async () => {
  expect((await call('POST', '/_admin/reset')).status).toBe(200);
  hooks.received = [];
  hooks.failures = 0;
});

describe('authentication and validation', () => {
  it('refuses /v1 calls without the bearer key; /_admin needs none', async () => {
    const none = await call('GET', '/v1/payments?idempotencyKey=k', { auth: false });
    expect(none.status).toBe(401);
    expect(none.json.error.code).toBe('unauthorized');
    const wrong = await call('POST', '/v1/payments', {
      auth: false,
      headers: { authorization: 'Bearer sk_wrong', 'idempotency-key': newKey() },
      body: card('tok_success'),
    });
    expect(wrong.status).toBe(401);
    expect(await ledger()).toEqual([]);
    expect((await call('GET', '/v1/payments?idempotencyKey=k')).status).toBe(200);
  });

  it('answers 400 invalid_request naming the problem, and 404 for unknown records', async () => {
    const extra = await createPayment({ ...card('tok_success'), surprise: true });
    expect(extra.status).toBe(400);
    expect(extra.json.error.code).toBe('invalid_request');
    expect(extra.json.error.message).toContain('surprise');

    const decimals = await createPayment(card('tok_success', 12.345));
    expect(decimals.status).toBe(400);
    expect(decimals.json.error.message).toContain('amount');

    const noKey = await call('POST', '/v1/payments', { body: card('tok_success') });
    expect(noKey.status).toBe(400);
    expect(noKey.json.error.message).toContain('Idempotency-Key');

    expect((await call('GET', '/v1/payments/txn_000000000000000000000000')).json.error.code).toBe('not_found');
    expect((await call('GET', '/v1/refunds/rf_000000000000000000000000')).status).toBe(404);
    expect(await ledger()).toEqual([]);
  });
});

describe('card payments', () => {
  it('tok_success captures: a succeeded payment and one ledger capture in major units', async () => {
    const key = newKey();
    const res = await createPayment(card('tok_success', 12.34), key);
    expect(res.status).toBe(200);
    expect(res.json).toMatchObject({
      object: 'payment',
      mode: 'card',
      status: 'succeeded',
      amount: 12.34,
      currency: 'USD',
      idempotencyKey: key,
      failureCode: null,
      checkoutUrl: null,
      savedCardToken: null,
      metadata: { paymentId: 'pay_test' },
    });
    expect(res.json.id).toMatch(/^txn_[0-9a-f]{24}$/);
    expect(await ledger()).toEqual([
      expect.objectContaining({
        type: 'capture',
        status: 'succeeded',
        amount: 12.34,
        currency: 'USD',
        idempotencyKey: key,
        reference: null,
        transactionId: res.json.id,
        paymentTransactionId: null,
        metadata: { paymentId: 'pay_test' },
      }),
    ]);
    expect((await call('GET', `/v1/payments/${res.json.id}`)).json).toEqual(res.json);
  });

  it('currency exponents: 1200 JPY and 1.234 KWD are exact, 12.5 JPY is refused', async () => {
    expect((await createPayment(card('tok_success', 1200, 'JPY'))).json.amount).toBe(1200);
    expect((await createPayment(card('tok_success', 1.234, 'KWD'))).json.amount).toBe(1.234);
    expect((await createPayment(card('tok_success', 12.5, 'JPY'))).status).toBe(400);
    expect((await ledger()).map((e) => e.amount)).toEqual([1200, 1.234]);
  });

  it.each([
    ['tok_decline', 'card_declined'],
    ['tok_insufficient_funds', 'insufficient_funds'],
    ['tok_lost_card', 'lost_card'],
    ['tok_expired_card', 'expired_card'],
  ])('%s is declined (%s) and the attempt is in the ledger', async (token, code) => {
    const res = await createPayment(card(token));
    expect(res.status).toBe(200);
    expect(res.json).toMatchObject({ status: 'failed', failureCode: code });
    expect(await ledger()).toEqual([
      expect.objectContaining({ type: 'capture', status: 'failed', transactionId: res.json.id }),
    ]);
  });

  it.each([
    ['tok_renewal_lost_card', 'lost_card'],
    ['tok_renewal_insufficient_funds', 'insufficient_funds'],
  ])('%s captures on-session and declines off-session charges (%s), its saved token too', async (token, code) => {
    expect((await createPayment({ ...card(token), saveCard: true })).json).toMatchObject({ status: 'succeeded' });
    const offSession = await createPayment({ ...card(token), offSession: true });
    expect(offSession.json).toMatchObject({ status: 'failed', failureCode: code });
    // A card saved from it (a setup with the token answers the token itself) keeps its behaviour.
    const saved = await createPayment({ ...card(token), saveCard: true });
    const savedToken = saved.json.savedCardToken as string;
    expect(savedToken).toMatch(/^tok_saved_/);
    expect((await createPayment({ ...card(savedToken), offSession: true })).json).toMatchObject({
      status: 'failed',
      failureCode: code,
    });
    expect((await createPayment(card(savedToken))).json.status).toBe('succeeded');
  });

  it('the unknown_status fault answers card charges with a status nobody knows; the charge is made', async () => {
    await setFaults({ payments: 'unknown_status' });
    const key = newKey();
    const res = await createPayment(card('tok_success'), key);
    expect(res.status).toBe(200);
    expect(res.json.status).toBe('on_hold');
    expect((await call('GET', `/v1/payments?idempotencyKey=${key}`)).json.data[0].status).toBe('on_hold');
    await setFaults({});
    expect((await call('GET', `/v1/payments/${res.json.id}`)).json.status).toBe('succeeded');
  });

  it('an unknown token is 400 invalid_card_token and records nothing, not even the key', async () => {
    const key = newKey();
    const res = await createPayment(card('tok_made_up'), key);
    expect(res.status).toBe(400);
    expect(res.json.error.code).toBe('invalid_card_token');
    expect(await ledger()).toEqual([]);
    expect((await call('GET', `/v1/payments?idempotencyKey=${key}`)).json).toEqual({ data: [] });
    expect((await createPayment(card('tok_success'), key)).json.status).toBe('succeeded');
  });
});

describe('idempotency', () => {
  it('a replay returns the same payment with one capture; another amount is 409; lookup by key', async () => {
    const key = newKey();
    const first = await createPayment(card('tok_success'), key);
    const again = await createPayment(card('tok_success'), key);
    expect(again.status).toBe(200);
    expect(again.json).toEqual(first.json);
    expect(await ledger()).toHaveLength(1);

    const other = await createPayment(card('tok_success', 99), key);
    expect(other.status).toBe(409);
    expect(other.json.error.code).toBe('idempotency_key_reused');
    const otherToken = await createPayment(card('tok_decline'), key);
    expect(otherToken.status).toBe(409);

    const found = await call('GET', `/v1/payments?idempotencyKey=${encodeURIComponent(key)}`);
    expect(found.json).toEqual({ data: [first.json] });
    expect((await call('GET', '/v1/payments?idempotencyKey=never-used')).json).toEqual({ data: [] });
    expect(await ledger()).toHaveLength(1);
  });

  it('20 concurrent identical creates make exactly one capture', async () => {
    const key = newKey();
    const answers = await Promise.all(Array.from({ length: 20 }, () => createPayment(card('tok_success'), key)));
    expect(answers.every((a) => a.status === 200)).toBe(true);
    expect(new Set(answers.map((a) => a.json.id)).size).toBe(1);
    const entries = await ledger();
    expect(entries).toHaveLength(1);
    expect(entries[0]).toMatchObject({ type: 'capture', idempotencyKey: key });
  });
});

describe('hosted checkout', () => {
  const checkout = (extra: object = {}) =>
    createPayment({
      amount: 25,
      currency: 'USD',
      mode: 'checkout',
      webhookUrl: hooks.url,
      description: 'Order <42>',
      metadata: { paymentId: 'pay_checkout' },
      ...extra,
    });

  it('serves a page with Pay and Decline forms; a script Pay captures and sends a signed webhook', async () => {
    const created = await checkout();
    const id: string = created.json.id;
    expect(created.json).toMatchObject({ status: 'pending', mode: 'checkout' });
    expect(created.json.checkoutUrl).toBe(`${base}/checkout/${id}`);
    expect(await ledger()).toEqual([]);

    const page = await fetch(created.json.checkoutUrl);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    const html = await page.text();
    expect(html).toContain(`<form method="post" action="/checkout/${id}/pay">`);
    expect(html).toContain(`<form method="post" action="/checkout/${id}/decline">`);
    expect(html).toMatch(/>Pay</);
    expect(html).toMatch(/>Decline</);
    expect(html).toContain('25.00 USD');
    expect(html).toContain('Order &lt;42&gt;');

    const paid = await call('POST', `/checkout/${id}/pay`);
    expect(paid.status).toBe(200);
    expect(paid.json).toMatchObject({ id, status: 'succeeded', savedCardToken: null });
    expect(await ledger()).toEqual([
      expect.objectContaining({ type: 'capture', status: 'succeeded', transactionId: id, amount: 25 }),
    ]);

    const [hook] = await hooks.waitFor(1);
    expect(hook!.event.type).toBe('payment.succeeded');
    expect(hook!.event.id).toMatch(/^whevt_[0-9a-f]{24}$/);
    expect(hook!.event.data).toMatchObject({ id, status: 'succeeded', metadata: { paymentId: 'pay_checkout' } });
    expect(verifySignature(hook!)).toBe(true);
    expect(verifySignature({ ...hook!, body: hook!.body.replace('succeeded', 'failed') })).toBe(false);

    // Acting again on a settled payment changes nothing.
    expect((await call('POST', `/checkout/${id}/decline`)).json.status).toBe('succeeded');
    expect(await ledger()).toHaveLength(1);
    await new Promise((r) => setTimeout(r, 100));
    expect(hooks.received).toHaveLength(1);
  });

  it('a browser form post is redirected (303) to the returnUrl', async () => {
    const returnUrl = 'https://merchant.example/return?order=42';
    const created = await checkout({ returnUrl });
    const res = await fetch(`${base}/checkout/${created.json.id}/pay`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'text/html' },
      body: '',
      redirect: 'manual',
    });
    expect(res.status).toBe(303);
    expect(res.headers.get('location')).toBe(returnUrl);
    expect((await call('GET', `/v1/payments/${created.json.id}`)).json.status).toBe('succeeded');
    // A script (no form, no HTML) gets the Payment even with a returnUrl.
    expect((await call('POST', `/checkout/${created.json.id}/pay`)).status).toBe(200);
  });

  it('Decline records a declined capture and sends payment.failed', async () => {
    const created = await checkout();
    const declined = await call('POST', `/checkout/${created.json.id}/decline`);
    expect(declined.json).toMatchObject({ status: 'failed', failureCode: 'card_declined' });
    expect(await ledger()).toEqual([expect.objectContaining({ type: 'capture', status: 'failed' })]);
    const [hook] = await hooks.waitFor(1);
    expect(hook!.event.type).toBe('payment.failed');
    expect(verifySignature(hook!)).toBe(true);
  });

  it('saveCard gives a savedCardToken that then captures in card mode', async () => {
    const created = await checkout({ saveCard: true });
    const paid = await call('POST', `/checkout/${created.json.id}/pay`);
    const token: string = paid.json.savedCardToken;
    expect(token).toMatch(/^tok_saved_[0-9a-f]{24}$/);
    const charged = await createPayment(card(token, 7));
    expect(charged.json).toMatchObject({ status: 'succeeded', amount: 7 });
    expect((await ledger()).map((e) => e.status)).toEqual(['succeeded', 'succeeded']);
    expect((await createPayment(card('tok_saved_000000000000000000000000'))).status).toBe(400);
  });

  it('setup mode (amount 0) saves the card without any ledger entry', async () => {
    const created = await createPayment({ amount: 0, currency: 'EUR', mode: 'setup', webhookUrl: hooks.url });
    expect(created.json).toMatchObject({ status: 'pending', mode: 'setup' });
    expect(await (await fetch(created.json.checkoutUrl)).text()).toMatch(/saves it/);
    const paid = await call('POST', `/checkout/${created.json.id}/pay`);
    expect(paid.json.status).toBe('succeeded');
    expect(paid.json.savedCardToken).toMatch(/^tok_saved_/);
    expect(await ledger()).toEqual([]);
    const [hook] = await hooks.waitFor(1);
    expect(hook!.event.data.savedCardToken).toBe(paid.json.savedCardToken);
  });

  it('cancel: the payment is canceled, its page and Pay answer 410, nothing is captured', async () => {
    const created = await checkout();
    const canceled = await call('POST', `/v1/payments/${created.json.id}/cancel`);
    expect(canceled.status).toBe(200);
    expect(canceled.json.status).toBe('canceled');
    expect((await fetch(created.json.checkoutUrl)).status).toBe(410);
    expect((await call('POST', `/checkout/${created.json.id}/pay`)).status).toBe(410);
    expect(await ledger()).toEqual([]);
    const [hook] = await hooks.waitFor(1);
    expect(hook!.event.type).toBe('payment.canceled');

    const captured = await createPayment(card('tok_success'));
    const unchanged = await call('POST', `/v1/payments/${captured.json.id}/cancel`);
    expect(unchanged.status).toBe(200);
    expect(unchanged.json.status).toBe('succeeded');
  });

  it('a failed delivery is retried after about 1 s with the same event id', async () => {
    hooks.failures = 1;
    const created = await checkout();
    await call('POST', `/checkout/${created.json.id}/pay`);
    const [first, second] = await hooks.waitFor(2, 4000);
    expect(second!.event.id).toBe(first!.event.id);
    expect(second!.body).toBe(first!.body);
    expect(verifySignature(second!)).toBe(true);
  });
});

describe('authentication (3-D Secure)', () => {
  const threeDs = (extra: Record<string, unknown> = {}) => ({
    ...card('tok_3ds'),
    webhookUrl: hooks.url,
    ...extra,
  });
  const pagePath = (actionUrl: string) => new URL(actionUrl).pathname;

  it('tok_3ds answers requires_action with a page whose Authenticate captures once, then a signed webhook', async () => {
    const key = newKey();
    const res = await createPayment(threeDs({ description: 'Order 7' }), key);
    expect(res.status).toBe(200);
    expect(res.json).toMatchObject({ status: 'requires_action', failureCode: null, checkoutUrl: null });
    const page = pagePath(res.json.actionUrl);
    expect(res.json.actionUrl).toBe(`${base}/authenticate/${res.json.id}`);
    expect(await ledger()).toEqual([
      expect.objectContaining({
        type: 'capture',
        status: 'requires_action',
        transactionId: res.json.id,
        amount: 12.34,
      }),
    ]);
    // The same key again: the same attempt, nothing more in the ledger.
    const again = await createPayment(threeDs({ description: 'Order 7' }), key);
    expect(again.json).toMatchObject({ id: res.json.id, status: 'requires_action' });

    const html = await call('GET', page);
    expect(html.status).toBe(200);
    expect(html.headers.get('content-type')).toContain('text/html');
    expect(html.text).toContain(`action="${page}/authenticate"`);
    expect(html.text).toContain(`action="${page}/fail"`);
    expect(html.text).toContain('Order 7');

    const done = await call('POST', `${page}/authenticate`);
    expect(done.status).toBe(200);
    expect(done.json).toMatchObject({ id: res.json.id, status: 'succeeded', actionUrl: null });
    const [hook] = await hooks.waitFor(1);
    expect(verifySignature(hook!)).toBe(true);
    expect(hook!.event).toMatchObject({ type: 'payment.succeeded', data: { id: res.json.id, status: 'succeeded' } });
    const entries = await ledger();
    expect(entries).toHaveLength(1);
    expect(entries[0]).toMatchObject({ status: 'succeeded', transactionId: res.json.id });
    expect((await call('GET', `/v1/payments/${res.json.id}`)).json.status).toBe('succeeded');
  });

  it('Fail settles failed authentication_failed; a settled page (GET or POST, twice) is 409 and captures nothing', async () => {
    const res = await createPayment(threeDs());
    const page = pagePath(res.json.actionUrl);
    const failed = await call('POST', `${page}/fail`);
    expect(failed.status).toBe(200);
    expect(failed.json).toMatchObject({ status: 'failed', failureCode: 'authentication_failed' });
    await hooks.waitFor(1);
    expect(hooks.received[0]!.event.type).toBe('payment.failed');

    for (const action of ['authenticate', 'fail']) {
      const late = await call('POST', `${page}/${action}`);
      expect(late.status).toBe(409);
      expect(late.json.error.code).toBe('authentication_not_pending');
    }
    const browser = await call('GET', page);
    expect(browser.status).toBe(409);
    expect(browser.text).toContain('already failed');
    const form = await call('POST', `${page}/authenticate`, {
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    expect(form.status).toBe(409);
    expect(form.headers.get('content-type')).toContain('text/html');
    expect((await ledger()).map((e) => e.status)).toEqual(['failed']);
    await new Promise((r) => setTimeout(r, 100));
    expect(hooks.received).toHaveLength(1);
  });

  it('a form post is redirected to the returnUrl; an unknown page is 404', async () => {
    const res = await createPayment(threeDs({ returnUrl: 'https://shop.example/back' }));
    const form = await call('POST', `${pagePath(res.json.actionUrl)}/authenticate`, {
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    expect(form.status).toBe(303);
    expect(form.headers.get('location')).toBe('https://shop.example/back');
    expect((await call('GET', '/authenticate/txn_000000000000000000000000')).status).toBe(404);
    const success = await createPayment(card('tok_success'));
    expect((await call('POST', `/authenticate/${success.json.id}/authenticate`)).status).toBe(404);
  });

  it('cancel: a requires_action attempt is canceled (webhook); its page is 410 and captures nothing', async () => {
    const res = await createPayment(threeDs());
    const cancelled = await call('POST', `/v1/payments/${res.json.id}/cancel`, { body: {} });
    expect(cancelled.json).toMatchObject({ status: 'canceled', actionUrl: null });
    await hooks.waitFor(1);
    expect(hooks.received[0]!.event.type).toBe('payment.canceled');
    const page = pagePath(res.json.actionUrl);
    expect((await call('GET', page)).status).toBe(410);
    const late = await call('POST', `${page}/authenticate`);
    expect(late.status).toBe(410);
    expect(late.json.error.code).toBe('payment_canceled');
    expect((await ledger()).map((e) => e.status)).toEqual(['canceled']);
  });

  it('tok_3ds_offsession: on-session charges capture, off-session ones ask to authenticate', async () => {
    const on = await createPayment(card('tok_3ds_offsession'));
    expect(on.json).toMatchObject({ status: 'succeeded', actionUrl: null, offSession: false });
    const off = await createPayment({ ...card('tok_3ds_offsession'), offSession: true });
    expect(off.json).toMatchObject({ status: 'requires_action', offSession: true });
    expect(off.json.actionUrl).toContain('/authenticate/');
    expect((await ledger()).map((e) => e.status)).toEqual(['succeeded', 'requires_action']);
  });

  it('a card saved from a tok_3ds charge still asks to authenticate', async () => {
    const first = await createPayment(threeDs({ saveCard: true }));
    const done = await call('POST', `${pagePath(first.json.actionUrl)}/authenticate`);
    expect(done.json.savedCardToken).toMatch(/^tok_saved_/);
    const again = await createPayment(card(done.json.savedCardToken as string));
    expect(again.json.status).toBe('requires_action');
  });
});

describe('processing (delayed outcomes)', () => {
  const debit = (token: string) => ({ ...card(token), webhookUrl: hooks.url });

  it('tok_processing answers processing, then settles succeeded by itself with a webhook', async () => {
    const res = await createPayment(debit('tok_processing'));
    expect(res.json).toMatchObject({ status: 'processing', actionUrl: null, failureCode: null });
    expect(await ledger()).toEqual([
      expect.objectContaining({ type: 'capture', status: 'processing', transactionId: res.json.id }),
    ]);
    // Cancel leaves a processing charge as it is.
    const cancel = await call('POST', `/v1/payments/${res.json.id}/cancel`, { body: {} });
    expect(cancel.json.status).toBe('processing');
    // Not refundable while processing.
    expect((await refund(res.json.id, 1)).json.error.code).toBe('payment_not_refundable');

    const [hook] = await hooks.waitFor(1, 3000);
    expect(verifySignature(hook!)).toBe(true);
    expect(hook!.event).toMatchObject({ type: 'payment.succeeded', data: { id: res.json.id, status: 'succeeded' } });
    const entries = await ledger();
    expect(entries).toHaveLength(1);
    expect(entries[0]).toMatchObject({ status: 'succeeded' });
  });

  it('tok_processing_fail settles failed with debit_failed', async () => {
    const res = await createPayment(debit('tok_processing_fail'));
    expect(res.json.status).toBe('processing');
    const [hook] = await hooks.waitFor(1, 3000);
    expect(hook!.event).toMatchObject({
      type: 'payment.failed',
      data: { id: res.json.id, status: 'failed', failureCode: 'debit_failed' },
    });
    expect((await ledger()).map((e) => e.status)).toEqual(['failed']);
  });

  it('/_admin/settle-payment settles now (once); unknown is 404, not processing is 409, bad input 400', async () => {
    const res = await createPayment(debit('tok_processing'));
    const settled = await call('POST', '/_admin/settle-payment', {
      body: { transactionId: res.json.id, status: 'failed' },
    });
    expect(settled.status).toBe(200);
    expect(settled.json).toMatchObject({ status: 'failed', failureCode: 'debit_failed' });
    const again = await call('POST', '/_admin/settle-payment', {
      body: { transactionId: res.json.id, status: 'succeeded' },
    });
    expect(again.status).toBe(409);
    expect(again.json.error.code).toBe('payment_not_processing');
    const unknown = await call('POST', '/_admin/settle-payment', {
      body: { transactionId: 'txn_000000000000000000000000', status: 'succeeded' },
    });
    expect(unknown.status).toBe(404);
    const bad = await call('POST', '/_admin/settle-payment', { body: { transactionId: res.json.id, status: 'maybe' } });
    expect(bad.status).toBe(400);
    // The timer that was due finds it settled: one webhook, one ledger entry, failed.
    await new Promise((r) => setTimeout(r, 800));
    expect(hooks.received.map((h) => h.event.type)).toEqual(['payment.failed']);
    expect((await ledger()).map((e) => e.status)).toEqual(['failed']);
  });
});

describe('refunds', () => {
  it('settles at once, is deduplicated by reference_id, and is in the ledger', async () => {
    const txn = await capture(10);
    const res = await refund(txn, 4, 're_ref_1');
    expect(res.status).toBe(200);
    expect(res.json).toMatchObject({
      object: 'refund',
      paymentId: txn,
      status: 'succeeded',
      amount: 4,
      currency: 'USD',
      reference_id: 're_ref_1',
      failureCode: null,
      metadata: { refundId: 're_x' },
    });
    expect(res.json.id).toMatch(/^rf_[0-9a-f]{24}$/);
    expect((await refund(txn, 4, 're_ref_1')).json).toEqual(res.json);
    const reused = await refund(txn, 5, 're_ref_1');
    expect(reused.status).toBe(409);
    expect(reused.json.error.code).toBe('reference_reused');

    expect((await call('GET', `/v1/refunds/${res.json.id}`)).json).toEqual(res.json);
    expect((await call('GET', '/v1/refunds?reference_id=re_ref_1')).json).toEqual({ data: [res.json] });
    expect((await call('GET', '/v1/refunds?reference_id=unknown')).json).toEqual({ data: [] });
    const entries = await ledger();
    expect(entries).toHaveLength(2);
    expect(entries[1]).toMatchObject({
      type: 'refund',
      status: 'succeeded',
      amount: 4,
      reference: 're_ref_1',
      transactionId: res.json.id,
      paymentTransactionId: txn,
      metadata: { refundId: 're_x' },
    });
  });

  it('dedupes by reference_id within one payment transaction only; a reuse reveals nothing of the other refund', async () => {
    const first = await capture(10);
    const second = await capture(10);
    const a = await refund(first, 4, 're_shared');
    const b = await refund(second, 4, 're_shared');
    expect(a.status).toBe(200);
    expect(b.status).toBe(200);
    expect(b.json.id).not.toBe(a.json.id);
    expect(b.json).toMatchObject({ paymentId: second, reference_id: 're_shared', status: 'succeeded' });

    const reused = await refund(second, 5, 're_shared');
    expect(reused.status).toBe(409);
    expect(reused.json.error.code).toBe('reference_reused');
    for (const secret of [first, a.json.id, '4']) expect(reused.json.error.message).not.toContain(secret);

    expect((await call('GET', '/v1/refunds?reference_id=re_shared')).json).toEqual({ data: [a.json, b.json] });
    expect((await call('GET', `/v1/refunds?reference_id=re_shared&paymentId=${second}`)).json).toEqual({
      data: [b.json],
    });
    const refunds = (await ledger()).filter((e) => e.type === 'refund');
    expect(refunds.map((e) => [e.reference, e.paymentTransactionId])).toEqual([
      ['re_shared', first],
      ['re_shared', second],
    ]);
  });

  it('Idempotency-Key: a replay returns the same refund, another body is 409, lookup by key', async () => {
    const txn = await capture(10);
    const keyed = (amount: number, reference: string, key: string) =>
      call('POST', '/v1/refunds', {
        body: { paymentId: txn, amount, currency: 'USD', reference_id: reference },
        headers: { 'idempotency-key': key },
      });
    const res = await keyed(3, 're_k1', 're_our_1');
    expect(res.status).toBe(200);
    expect(res.json.idempotencyKey).toBe('re_our_1');
    expect((await keyed(3, 're_k1', 're_our_1')).json).toEqual(res.json);
    const otherAmount = await keyed(2, 're_k1', 're_our_1');
    expect(otherAmount.status).toBe(409);
    expect(otherAmount.json.error.code).toBe('idempotency_key_reused');
    const otherReference = await keyed(3, 're_k2', 're_our_1');
    expect(otherReference.status).toBe(409);
    expect(otherReference.json.error.code).toBe('idempotency_key_reused');

    expect((await call('GET', '/v1/refunds?idempotencyKey=re_our_1')).json).toEqual({ data: [res.json] });
    expect((await call('GET', '/v1/refunds?idempotencyKey=unknown')).json).toEqual({ data: [] });
    expect((await call('GET', '/v1/refunds')).status).toBe(400);
    const refunds = (await ledger()).filter((e) => e.type === 'refund');
    expect(refunds).toEqual([expect.objectContaining({ idempotencyKey: 're_our_1', reference: 're_k1', amount: 3 })]);
  });

  it('10 concurrent refunds with one reference make one refund', async () => {
    const txn = await capture(10);
    const answers = await Promise.all(Array.from({ length: 10 }, () => refund(txn, 3, 're_concurrent')));
    expect(answers.every((a) => a.status === 200)).toBe(true);
    expect(new Set(answers.map((a) => a.json.id)).size).toBe(1);
    expect((await ledger()).filter((e) => e.type === 'refund')).toHaveLength(1);
  });

  it('never exceeds the capture, with exact arithmetic', async () => {
    const over = await refund(await capture(10), 10.01);
    expect(over.status).toBe(400);
    expect(over.json.error.code).toBe('amount_exceeds_captured');

    const txn = await capture(0.3);
    for (let i = 0; i < 3; i++) expect((await refund(txn, 0.1)).json.status).toBe('succeeded');
    const fourth = await refund(txn, 0.01);
    expect(fourth.status).toBe(400);
    expect(fourth.json.error.code).toBe('amount_exceeds_captured');
    expect((await ledger()).filter((e) => e.type === 'refund')).toHaveLength(3);
  });

  it('only a succeeded capture is refundable', async () => {
    const declined = await createPayment(card('tok_decline'));
    const res = await refund(declined.json.id, 1);
    expect(res.status).toBe(400);
    expect(res.json.error.code).toBe('payment_not_refundable');
  });

  it('pending mode: answered pending, settled by /_admin/settle with a refund.succeeded webhook', async () => {
    const txn = await capture(10);
    await setFaults({ refunds: 'pending' });
    const res = await refund(txn, 6, 're_pending', { webhookUrl: hooks.url });
    expect(res.json.status).toBe('pending');
    expect((await ledger())[1]).toMatchObject({ type: 'refund', status: 'pending' });
    // A pending refund already counts against the capture.
    expect((await refund(txn, 5)).json.error.code).toBe('amount_exceeds_captured');

    const settled = await call('POST', '/_admin/settle', { body: { reference: 're_pending', status: 'succeeded' } });
    expect(settled.status).toBe(200);
    expect(settled.json.status).toBe('succeeded');
    expect((await ledger())[1]).toMatchObject({ type: 'refund', status: 'succeeded' });
    const [hook] = await hooks.waitFor(1);
    expect(hook!.event.type).toBe('refund.succeeded');
    expect(hook!.event.data).toMatchObject({ id: res.json.id, status: 'succeeded' });
    expect(verifySignature(hook!)).toBe(true);

    const again = await call('POST', '/_admin/settle', { body: { reference: 're_pending', status: 'failed' } });
    expect(again.status).toBe(409);
    const unknown = await call('POST', '/_admin/settle', { body: { reference: 'nope', status: 'failed' } });
    expect(unknown.status).toBe(404);
  });

  it('settle: a reference on several transactions needs paymentTransactionId', async () => {
    const first = await capture(10);
    const second = await capture(10);
    await setFaults({ refunds: 'pending' });
    const a = await refund(first, 1, 're_both');
    const b = await refund(second, 2, 're_both');
    const ambiguous = await call('POST', '/_admin/settle', { body: { reference: 're_both', status: 'succeeded' } });
    expect(ambiguous.status).toBe(409);
    expect(ambiguous.json.error.code).toBe('reference_ambiguous');

    const settled = await call('POST', '/_admin/settle', {
      body: { reference: 're_both', status: 'failed', paymentTransactionId: second },
    });
    expect(settled.status).toBe(200);
    expect(settled.json).toMatchObject({ id: b.json.id, status: 'failed' });
    expect((await call('GET', `/v1/refunds/${a.json.id}`)).json.status).toBe('pending');
    const elsewhere = await call('POST', '/_admin/settle', {
      body: { reference: 're_both', status: 'failed', paymentTransactionId: 'txn_unknown' },
    });
    expect(elsewhere.status).toBe(404);
  });

  it('fail mode: declined with insufficient_balance', async () => {
    const txn = await capture(10);
    await setFaults({ refunds: 'fail' });
    const res = await refund(txn, 2);
    expect(res.json).toMatchObject({ status: 'failed', failureCode: 'insufficient_balance' });
    expect((await ledger())[1]).toMatchObject({ type: 'refund', status: 'failed' });
  });
});

describe('faults', () => {
  it('unavailable: 503 and nothing done, for creates and lookups', async () => {
    await setFaults({ payments: 'unavailable' });
    const res = await createPayment(card('tok_success'));
    expect(res.status).toBe(503);
    expect(res.json.error.code).toBe('unavailable');
    expect((await call('GET', '/v1/payments?idempotencyKey=x')).status).toBe(503);
    expect(await ledger()).toEqual([]);
  });

  it('invalid: performed, then a 200 JSON answer that does not parse', async () => {
    await setFaults({ payments: 'invalid' });
    const res = await createPayment(card('tok_success'));
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    expect(res.text.length).toBeGreaterThan(0);
    expect(() => JSON.parse(res.text)).toThrow();
    expect(await ledger()).toEqual([expect.objectContaining({ type: 'capture', status: 'succeeded' })]);
  });

  it('timeout: performed, then no answer', async () => {
    await setFaults({ payments: 'timeout' });
    const started = Date.now();
    await expect(createPayment(card('tok_success'), newKey(), AbortSignal.timeout(1500))).rejects.toThrow();
    expect(Date.now() - started).toBeGreaterThanOrEqual(1400);
    expect(await ledger()).toEqual([expect.objectContaining({ type: 'capture', status: 'succeeded' })]);
  });

  it('latencyMs delays every /v1 answer; {} resets', async () => {
    await setFaults({ latencyMs: 400 });
    expect((await call('GET', '/_admin/faults')).json).toEqual({ payments: 'ok', refunds: 'ok', latencyMs: 400 });
    let started = Date.now();
    expect((await createPayment(card('tok_success'))).status).toBe(200);
    expect(Date.now() - started).toBeGreaterThanOrEqual(380);

    const reset = await call('POST', '/_admin/faults', { body: {} });
    expect(reset.json).toEqual({ payments: 'ok', refunds: 'ok', latencyMs: 0 });
    started = Date.now();
    expect((await createPayment(card('tok_success'))).status).toBe(200);
    // Under the 400 ms it was held for: the latency is gone (a loaded machine may still be slow).
    expect(Date.now() - started).toBeLessThan(390);
  });

  it('unknown_status: performed, then payments are answered with a status nobody knows', async () => {
    await setFaults({ payments: 'unknown_status' });
    const key = newKey();
    const res = await createPayment(card('tok_success'), key);
    expect(res.status).toBe(200);
    expect(res.json).toMatchObject({ object: 'payment', status: 'on_hold', amount: 12.34 });
    expect((await call('GET', `/v1/payments/${res.json.id}`)).json.status).toBe('on_hold');
    expect((await call('GET', `/v1/payments?idempotencyKey=${key}`)).json.data[0].status).toBe('on_hold');
    // Performed: the capture is in the ledger; refunds are answered as usual.
    expect((await ledger()).map((e) => e.status)).toEqual(['succeeded']);
    expect((await refund(res.json.id, 1)).json.status).toBe('succeeded');
    await setFaults({});
    expect((await call('GET', `/v1/payments/${res.json.id}`)).json.status).toBe('succeeded');
  });

  it('refuses an unknown mode', async () => {
    const res = await call('POST', '/_admin/faults', { body: { payments: 'pending' } });
    expect(res.status).toBe(400);
    expect(res.json.error.code).toBe('invalid_request');
  });

  it('close() does not wait for a held answer', async () => {
    const other = await createSandbox({ apiKey: API_KEY, webhookSecret: SECRET }).listen(0);
    await fetch(`${other.url}/_admin/faults`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ payments: 'timeout' }),
    });
    const held = fetch(`${other.url}/v1/payments`, {
      method: 'POST',
      headers: { authorization: `Bearer ${API_KEY}`, 'idempotency-key': newKey(), 'content-type': 'application/json' },
      body: JSON.stringify(card('tok_success')),
    }).then(
      () => 'answered',
      () => 'dropped',
    );
    const deadline = Date.now() + 2000;
    while (((await (await fetch(`${other.url}/_admin/ledger`)).json()) as { entries: unknown[] }).entries.length < 1) {
      if (Date.now() > deadline) throw new Error('the held payment was never performed');
      await new Promise((r) => setTimeout(r, 20));
    }
    const started = Date.now();
    await other.close();
    expect(Date.now() - started).toBeLessThan(1000);
    expect(await held).toBe('dropped');
  });
});

describe('admin token (PRODUCT.md, "Production profile")', () => {
  const ADMIN_TOKEN = 'sandbox-admin-token-test';
  let guarded: RunningSandbox;

  beforeAll(async () => {
    guarded = await createSandbox({ apiKey: API_KEY, webhookSecret: SECRET, adminToken: ADMIN_TOKEN }).listen(0);
  });
  afterAll(async () => {
    await guarded.close();
  });

  const admin = (method: string, path: string, authorization?: string, body?: unknown) =>
    fetch(`${guarded.url}${path}`, {
      method,
      headers: {
        ...(authorization === undefined ? {} : { authorization }),
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });

  it.each([
    ['GET', '/_admin/faults', undefined],
    ['POST', '/_admin/faults', { payments: 'unavailable' }],
    ['GET', '/_admin/ledger', undefined],
    ['POST', '/_admin/settle', { reference: 'nope', status: 'failed' }],
    ['POST', '/_admin/reset', undefined],
  ])('%s %s: 401 without the bearer token or with a wrong one', async (method, path, body) => {
    for (const authorization of [undefined, 'Bearer wrong-token', `Bearer ${ADMIN_TOKEN}x`, ADMIN_TOKEN, 'Bearer ']) {
      const res = await admin(method, path, authorization, body);
      expect(res.status).toBe(401);
      expect(res.headers.get('www-authenticate')).toBe('Bearer');
      expect(((await res.json()) as { error: { code: string } }).error.code).toBe('unauthorized');
    }
    // A refused call changed nothing.
    expect(((await (await admin('GET', '/_admin/faults', `Bearer ${ADMIN_TOKEN}`)).json()) as Faults).payments).toBe(
      'ok',
    );
  });

  it('answers /_admin with the right bearer token', async () => {
    const set = await admin('POST', '/_admin/faults', `Bearer ${ADMIN_TOKEN}`, { payments: 'decline' });
    expect(set.status).toBe(200);
    const ledgerRes = await admin('GET', '/_admin/ledger', `Bearer ${ADMIN_TOKEN}`);
    expect(ledgerRes.status).toBe(200);
    expect(await ledgerRes.json()).toEqual({ entries: [] });
    expect((await admin('POST', '/_admin/reset', `Bearer ${ADMIN_TOKEN}`)).status).toBe(200);
  });

  it('keeps the provider API on its own key, not the admin token', async () => {
    const res = await fetch(`${guarded.url}/v1/payments?idempotencyKey=k`, {
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
    });
    expect(res.status).toBe(401);
  });
});

describe('disputes (tok_dispute)', () => {
  let disputing: RunningSandbox;
  let saved: string;

  beforeAll(async () => {
    saved = base;
    disputing = await createSandbox({
      apiKey: API_KEY,
      webhookSecret: SECRET,
      disputeSeconds: 0.2,
      disputeEvidenceSeconds: 3600,
    }).listen(0);
    base = disputing.url;
  });
  afterAll(async () => {
    base = saved;
    await disputing.close();
  });

  const disputed = async (amount = 12.34): Promise<string> => {
    const res = await createPayment({ ...card('tok_dispute', amount), webhookUrl: hooks.url });
    expect(res.json.status).toBe('succeeded');
    return res.json.id;
  };
  const hooksOf = (type: string) => hooks.received.filter((h) => h.event.type === type);
  const waitForHook = async (type: string, count = 1) => {
    const deadline = Date.now() + 5000;
    while (hooksOf(type).length < count) {
      if (Date.now() > deadline) throw new Error(`no ${type} webhook`);
      await new Promise((r) => setTimeout(r, 20));
    }
    return hooksOf(type)[count - 1]!;
  };

  it('captures, then opens a dispute for the whole capture with a signed dispute.created webhook', async () => {
    const txn = await disputed(12.34);
    const hook = await waitForHook('dispute.created');
    expect(verifySignature(hook)).toBe(true);
    const dispute = hook.event.data;
    expect(dispute).toMatchObject({
      object: 'dispute',
      paymentId: txn,
      status: 'needs_response',
      amount: 12.34,
      currency: 'USD',
      reason: 'fraudulent',
      evidence: null,
      metadata: { paymentId: 'pay_test' },
      closedAt: null,
    });
    const due = Date.parse(dispute.evidenceDueBy as string) - Date.parse(dispute.createdAt as string);
    expect(due).toBe(3600 * 1000);
    expect((await call('GET', `/v1/disputes/${String(dispute.id)}`)).json).toEqual(dispute);
    expect((await call('GET', `/v1/disputes?paymentId=${txn}`)).json.data).toEqual([dispute]);
    const entries = await ledger();
    expect(entries.map((e) => [e.type, e.status])).toEqual([
      ['capture', 'succeeded'],
      ['dispute', 'needs_response'],
    ]);
    expect(entries[1]).toMatchObject({
      amount: 12.34,
      currency: 'USD',
      idempotencyKey: null,
      reference: null,
      transactionId: dispute.id,
      paymentTransactionId: txn,
      metadata: { paymentId: 'pay_test' },
    });
    expect(typeof entries[1]!.id).toBe('string');
    expect(typeof entries[1]!.createdAt).toBe('string');
  });

  it('disputes what is left after refunds; nothing when all is refunded', async () => {
    const partly = await disputed(10);
    expect((await refund(partly, 4)).json.status).toBe('succeeded');
    const whole = await disputed(5);
    expect((await refund(whole, 5)).json.status).toBe('succeeded');
    const hook = await waitForHook('dispute.created');
    expect(hook.event.data).toMatchObject({ paymentId: partly, amount: 6 });
    await new Promise((r) => setTimeout(r, 500));
    expect(hooksOf('dispute.created')).toHaveLength(1);
    expect((await call('GET', `/v1/disputes?paymentId=${whole}`)).json.data).toEqual([]);
  });

  it('the disputes unknown_status fault: performed, then every dispute answered and told has a status nobody knows', async () => {
    const txn = await disputed(7);
    const id = String((await waitForHook('dispute.created')).event.data.id);
    const set = await call('POST', '/_admin/faults', { body: { disputes: 'unknown_status' } });
    expect(set.json).toEqual({ payments: 'ok', refunds: 'ok', disputes: 'unknown_status', latencyMs: 0 });
    expect((await call('GET', '/_admin/faults')).json).toEqual(set.json);
    try {
      expect((await call('GET', `/v1/disputes/${id}`)).json).toMatchObject({ id, status: 'on_hold' });
      expect((await call('GET', `/v1/disputes?paymentId=${txn}`)).json.data).toEqual([
        expect.objectContaining({ id, status: 'on_hold' }),
      ]);
      const sent = await call('POST', `/v1/disputes/${id}/evidence`, { body: { text: 'Receipt.' } });
      expect(sent.status).toBe(200);
      expect(sent.json).toMatchObject({ id, status: 'on_hold', evidence: { text: 'Receipt.' } });
      expect((await waitForHook('dispute.updated')).event.data).toMatchObject({ id, status: 'on_hold' });
      // Payments are not touched by the disputes' fault.
      expect((await call('GET', `/v1/payments/${txn}`)).json.status).toBe('succeeded');
    } finally {
      expect((await call('POST', '/_admin/faults', { body: {} })).json).toEqual({
        payments: 'ok',
        refunds: 'ok',
        latencyMs: 0,
      });
    }
    // The evidence was taken: the dispute is under review.
    expect((await call('GET', `/v1/disputes/${id}`)).json).toMatchObject({ id, status: 'under_review' });
  });

  it('evidence: under_review (a retry is unchanged); the processor decides won; refunds refused while open', async () => {
    const txn = await disputed(20);
    const id = String((await waitForHook('dispute.created')).event.data.id);
    const refused = await refund(txn, 1);
    expect(refused.status).toBe(400);
    expect(refused.json.error.code).toBe('charge_disputed');

    const submit = () => call('POST', `/v1/disputes/${id}/evidence`, { body: { text: 'Signed delivery receipt.' } });
    const first = await submit();
    expect(first.json).toMatchObject({ status: 'under_review', evidence: { text: 'Signed delivery receipt.' } });
    expect((await submit()).json).toEqual(first.json);
    const other = await call('POST', `/v1/disputes/${id}/evidence`, { body: { text: 'Something else.' } });
    expect(other.status).toBe(409);
    expect(other.json.error.code).toBe('dispute_not_updatable');
    expect((await call('POST', `/v1/disputes/${id}/accept`, { body: {} })).status).toBe(409);
    expect((await waitForHook('dispute.updated')).event.data).toMatchObject({ id, status: 'under_review' });

    const won = await call('POST', `/_admin/disputes/${id}/close`, { body: { status: 'won' } });
    expect(won.json).toMatchObject({ status: 'won' });
    expect(won.json.closedAt).not.toBeNull();
    expect((await waitForHook('dispute.closed')).event.data).toMatchObject({ id, status: 'won' });
    expect((await call('POST', `/_admin/disputes/${id}/close`, { body: { status: 'won' } })).status).toBe(200);
    const again = await call('POST', `/_admin/disputes/${id}/close`, { body: { status: 'lost' } });
    expect(again.status).toBe(409);
    expect(again.json.error.code).toBe('dispute_closed');
    expect((await ledger()).find((e) => e.transactionId === id)?.status).toBe('won');
    // Won: the payment is refundable again.
    expect((await refund(txn, 20)).json.status).toBe('succeeded');
  });

  it('accept: accepted (lost), and refunds plus lost disputes never exceed the capture', async () => {
    const txn = await disputed(8);
    const id = String((await waitForHook('dispute.created')).event.data.id);
    const accepted = await call('POST', `/v1/disputes/${id}/accept`, { body: {} });
    expect(accepted.json).toMatchObject({ status: 'accepted' });
    expect((await waitForHook('dispute.closed')).event.data).toMatchObject({ id, status: 'accepted' });
    expect((await call('POST', `/v1/disputes/${id}/accept`)).json.status).toBe('accepted');
    expect((await ledger()).find((e) => e.transactionId === id)?.status).toBe('accepted');
    const over = await refund(txn, 1);
    expect(over.status).toBe(400);
    expect(over.json.error.code).toBe('amount_exceeds_captured');
  });

  it('admin close lost; bad bodies and unknown ids', async () => {
    await disputed(3);
    const id = String((await waitForHook('dispute.created')).event.data.id);
    const bad = await call('POST', `/_admin/disputes/${id}/close`, { body: { status: 'accepted' } });
    expect(bad.status).toBe(400);
    expect((await call('POST', `/_admin/disputes/dsp_nope/close`, { body: { status: 'lost' } })).status).toBe(404);
    expect((await call('GET', '/v1/disputes/dsp_nope')).status).toBe(404);
    expect((await call('POST', `/v1/disputes/${id}/evidence`, { body: { text: '' } })).status).toBe(400);
    expect((await call('POST', `/_admin/disputes/${id}/close`, { body: { status: 'lost' } })).json.status).toBe('lost');
    expect((await waitForHook('dispute.closed')).event.data).toMatchObject({ id, status: 'lost' });
  });

  it('a dispute still needs_response at its deadline is lost, with a webhook', async () => {
    const quick = await createSandbox({
      apiKey: API_KEY,
      webhookSecret: SECRET,
      disputeSeconds: 0.1,
      disputeEvidenceSeconds: 0.5,
    }).listen(0);
    try {
      const res = await fetch(`${quick.url}/v1/payments`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${API_KEY}`,
          'content-type': 'application/json',
          'idempotency-key': newKey(),
        },
        body: JSON.stringify({ ...card('tok_dispute', 7), webhookUrl: hooks.url }),
      });
      expect(res.status).toBe(200);
      const closed = await waitForHook('dispute.closed');
      expect(closed.event.data).toMatchObject({ status: 'lost', amount: 7 });
      const entries = (await (await fetch(`${quick.url}/_admin/ledger`)).json()) as {
        entries: Array<{ type: string; status: string }>;
      };
      expect(entries.entries.map((e) => [e.type, e.status])).toEqual([
        ['capture', 'succeeded'],
        ['dispute', 'lost'],
      ]);
    } finally {
      await quick.close();
    }
  });
});

describe('disputes are of payments only', () => {
  it("a subscription's tok_dispute charge captures and is never disputed", async () => {
    const quick = await createSandbox({ apiKey: API_KEY, webhookSecret: SECRET, disputeSeconds: 0.05 }).listen(0);
    try {
      const res = await fetch(`${quick.url}/v1/payments`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${API_KEY}`,
          'content-type': 'application/json',
          'idempotency-key': newKey(),
        },
        body: JSON.stringify({
          ...card('tok_dispute', 5),
          metadata: { subscriptionId: 'sub_x', invoiceId: 'inv_x' },
          webhookUrl: hooks.url,
        }),
      });
      expect(((await res.json()) as { status: string }).status).toBe('succeeded');
      await new Promise((r) => setTimeout(r, 300));
      const { entries } = (await (await fetch(`${quick.url}/_admin/ledger`)).json()) as {
        entries: Array<{ type: string }>;
      };
      expect(entries.map((e) => e.type)).toEqual(['capture']);
    } finally {
      await quick.close();
    }
  });
});
