import { Payment } from '../../src/db/entities';
import { createKey } from '../../src/domain/merchants';
import { newId } from '../../src/ids';
import {
  basicAuth,
  createTestMerchant,
  startPaymentStack,
  type PaymentStack,
  type TestMerchant,
} from '../helpers/stack';
import { call, type JsonResponse, type ErrorBody } from '../helpers/http';

/**
 * POST /payments request rules (PRODUCT.md "API conventions", "Payments"), idempotency by
 * externalId (also under concurrency), merchant isolation and live keys, on the real stack.
 */

type Body = Record<string, unknown>;

describe('POST /payments validation, idempotency and isolation', () => {
  let stack: PaymentStack;
  let merchant: TestMerchant;
  let other: TestMerchant;
  let seq = 0;
  const ext = () => `val-${Date.now()}-${++seq}`;
  const valid = () => ({
    amount: 12.34,
    currency: 'USD',
    externalId: ext(),
    customer: { email: 'buyer@example.com', name: 'Buyer' },
  });
  const create = (body: unknown, auth = merchant.auth) =>
    call<Body>(stack.api.baseUrl, 'POST', '/payments', auth, body);
  const get = (id: string, auth = merchant.auth) => call<Body>(stack.api.baseUrl, 'GET', `/payments/${id}`, auth);
  const postRaw = (body: string, contentType: string) =>
    fetch(`${stack.api.baseUrl}/payments`, {
      method: 'POST',
      headers: { authorization: merchant.auth, 'content-type': contentType },
      body,
    });
  const capturesOf = (paymentId: string) => stack.ledger('capture', paymentId);
  const rowsFor = (merchantId: string, externalId: string) =>
    stack.orm.em.fork().count(Payment, { merchant: merchantId, externalId });

  /** `{ code, message, details }` with exactly these keys, and the status. */
  function expectError(res: JsonResponse<unknown>, status: number, code: string): ErrorBody {
    expect(res.status).toBe(status);
    expect(res.body).toEqual({ code, message: expect.any(String), details: expect.any(Object) });
    const body = res.body as ErrorBody;
    expect(body.message.length).toBeGreaterThan(0);
    return body;
  }

  /** A 400 validation_error whose issues all name `path` (the one thing wrong with the body). */
  function expectValidation(res: JsonResponse<unknown>, path: string): ErrorBody {
    const body = expectError(res, 400, 'validation_error');
    expect(body.details.issues).toEqual(expect.arrayContaining([expect.objectContaining({ path })]));
    expect([...new Set(body.details.issues!.map((i) => i.path))]).toEqual([path]);
    for (const issue of body.details.issues!) {
      expect(issue).toEqual({ path, code: expect.any(String), message: expect.any(String) });
    }
    return body;
  }

  beforeAll(async () => {
    stack = await startPaymentStack('validation');
    [merchant, other] = await Promise.all([
      createTestMerchant(stack.orm, 'Validation merchant A'),
      createTestMerchant(stack.orm, 'Validation merchant B'),
    ]);
  });
  afterAll(() => stack.close());

  describe('request rules', () => {
    const longKey = 'k'.repeat(41);
    const fiftyOneKeys = Object.fromEntries(Array.from({ length: 51 }, (_, i) => [`key${i}`, 'v']));

    it.each<[string, Body, string]>([
      ['USD 12.345 (3 decimals, USD takes 2)', { amount: 12.345, currency: 'USD' }, 'amount'],
      ['JPY 1.5 (JPY takes none)', { amount: 1.5, currency: 'JPY' }, 'amount'],
      ['KWD 1.2345 (4 decimals, KWD takes 3)', { amount: 1.2345, currency: 'KWD' }, 'amount'],
      ['USD 0.001', { amount: 0.001, currency: 'USD' }, 'amount'],
      ['zero amount', { amount: 0 }, 'amount'],
      ['negative amount', { amount: -12.34 }, 'amount'],
      ['string amount', { amount: '12.34' }, 'amount'],
      ['null amount', { amount: null }, 'amount'],
      ['missing amount', { amount: undefined }, 'amount'],
      ['amount above 1,000,000,000', { amount: 1_000_000_000.01 }, 'amount'],
      ['JPY amount above 1,000,000,000', { amount: 1_000_000_001, currency: 'JPY' }, 'amount'],
      ['unknown currency XYZ', { currency: 'XYZ' }, 'currency'],
      ['2-letter currency', { currency: 'US' }, 'currency'],
      ['4-letter currency', { currency: 'USDD' }, 'currency'],
      ['currency with a digit', { currency: 'US1' }, 'currency'],
      ['numeric currency', { currency: 840 }, 'currency'],
      ['missing currency', { currency: undefined }, 'currency'],
      ['missing externalId', { externalId: undefined }, 'externalId'],
      ['empty externalId', { externalId: '' }, 'externalId'],
      ['externalId of 256 characters', { externalId: 'e'.repeat(256) }, 'externalId'],
      ['numeric externalId', { externalId: 42 }, 'externalId'],
      ['description over 1000 characters', { description: 'd'.repeat(1001) }, 'description'],
      ['metadata with 51 keys', { metadata: fiftyOneKeys }, 'metadata'],
      ['metadata key of 41 characters', { metadata: { [longKey]: 'v' } }, `metadata.${longKey}`],
      ['metadata with a non-string value', { metadata: { plan: 3 } }, 'metadata.plan'],
      ['metadata value of 501 characters', { metadata: { note: 'n'.repeat(501) } }, 'metadata.note'],
      ['metadata not an object', { metadata: 'plan=gold' }, 'metadata'],
      ['missing customer', { customer: undefined }, 'customer'],
      ['customer without email', { customer: { name: 'Buyer' } }, 'customer.email'],
      ['customer.email invalid', { customer: { email: 'not-an-email' } }, 'customer.email'],
      ['callbackUrl not a URL', { callbackUrl: 'not a url' }, 'callbackUrl'],
      ['callbackUrl with ftp://', { callbackUrl: 'ftp://example.com/cb' }, 'callbackUrl'],
      ['returnUrl with ftp://', { returnUrl: 'ftp://example.com/back' }, 'returnUrl'],
      ['saveCardEnabled as a string', { saveCardEnabled: 'true' }, 'saveCardEnabled'],
      ['saveCardEnabled as a number', { saveCardEnabled: 1 }, 'saveCardEnabled'],
      ['empty cardToken', { cardToken: '' }, 'cardToken'],
    ])('%s: 400 validation_error naming the path', async (_label, patch, path) => {
      const body = { ...valid(), ...patch };
      const res = await create(body);
      expectValidation(res, path);
      // Nothing is left behind by a rejected request.
      if (typeof body.externalId === 'string' && body.externalId) {
        expect(await rowsFor(merchant.merchantId, body.externalId)).toBe(0);
      }
    });

    it('a non-finite amount (1e400 parses to Infinity) is 400 on amount', async () => {
      const { externalId } = valid();
      const raw = `{"amount":1e400,"currency":"USD","externalId":"${externalId}","customer":{"email":"b@example.com"}}`;
      const res = await postRaw(raw, 'application/json');
      expectValidation({ status: res.status, body: await res.json(), headers: res.headers }, 'amount');
    });

    it.each<[string, Body, Body]>([
      ['KWD 1.234 (3 decimals)', { amount: 1.234, currency: 'KWD' }, { amount: 1.234, currency: 'KWD' }],
      ['JPY 1200', { amount: 1200, currency: 'JPY' }, { amount: 1200, currency: 'JPY' }],
      ['currency "usd", answered "USD"', { amount: 12.34, currency: 'usd' }, { amount: 12.34, currency: 'USD' }],
      ['currency "Eur", answered "EUR"', { amount: 0.01, currency: 'Eur' }, { amount: 0.01, currency: 'EUR' }],
      ['exactly 1,000,000,000', { amount: 1_000_000_000 }, { amount: 1_000_000_000, currency: 'USD' }],
    ])('accepts %s', async (_label, patch, expected) => {
      const res = await create({ ...valid(), ...patch });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ ...expected, status: 'created', id: expect.stringMatching(/^pay_/) });
    });

    it('accepts every string limit exactly at its bound', async () => {
      const externalId = `${ext()}-`.padEnd(255, 'x');
      const metadata = Object.fromEntries(
        Array.from({ length: 50 }, (_, i) => [`${i}`.padStart(40, 'm'), i === 0 ? 'v'.repeat(500) : 'v']),
      );
      const description = 'd'.repeat(1000);
      const res = await create({ ...valid(), externalId, description, metadata });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ externalId, description, metadata, status: 'created' });
      expect(externalId).toHaveLength(255);
    });

    it('an unknown top-level field is 400 naming it in details.unknownFields', async () => {
      const res = await create({ ...valid(), color: 'red' });
      const body = expectValidation(res, 'color');
      expect(body.details.unknownFields).toEqual(['color']);
      expect(body.message).toContain('color');
    });

    it('an unknown field inside customer is 400 naming customer.<field>', async () => {
      const res = await create({ ...valid(), customer: { email: 'buyer@example.com', phone: '+1 555' } });
      const body = expectValidation(res, 'customer.phone');
      expect(body.details.unknownFields).toEqual(['customer.phone']);
    });

    it('malformed JSON is 400 invalid_json', async () => {
      const res = await postRaw('{"amount": 12.34, "currency": ', 'application/json');
      expect(res.headers.get('x-request-id')).toBeTruthy();
      expectError({ status: res.status, body: await res.json(), headers: res.headers }, 400, 'invalid_json');
    });

    it('a form body is 415 unsupported_media_type', async () => {
      const res = await postRaw('amount=12.34&currency=USD', 'application/x-www-form-urlencoded');
      expectError({ status: res.status, body: await res.json(), headers: res.headers }, 415, 'unsupported_media_type');
    });
  });

  describe('idempotency by externalId', () => {
    it('same externalId, amount and currency returns the same payment, captured once', async () => {
      const body = { ...valid(), cardToken: 'tok_success' };
      const first = await create(body);
      expect(first.status).toBe(200);
      expect(first.body).toMatchObject({ status: 'succeeded', amount: 12.34, currency: 'USD' });
      const id = first.body.id as string;

      const again = await create(body);
      expect(again.status).toBe(200);
      expect(again.body).toEqual(first.body);
      // Currency case does not make it another request.
      const lower = await create({ ...body, currency: 'usd' });
      expect(lower.status).toBe(200);
      expect(lower.body.id).toBe(id);

      expect(await capturesOf(id)).toEqual([
        expect.objectContaining({ status: 'succeeded', amount: 12.34, currency: 'USD' }),
      ]);
      expect(await rowsFor(merchant.merchantId, body.externalId)).toBe(1);
    });

    it('the same request five times at once: one payment, captured once, the same answer to all', async () => {
      const body = { ...valid(), cardToken: 'tok_success' };
      const answers = await Promise.all([1, 2, 3, 4, 5].map(() => create(body)));

      expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200, 200]);
      const id = answers[0]!.body.id as string;
      for (const a of answers) expect(a.body).toMatchObject({ id, status: 'succeeded' });
      expect(await rowsFor(merchant.merchantId, body.externalId)).toBe(1);
      expect(await capturesOf(id)).toEqual([expect.objectContaining({ status: 'succeeded', amount: 12.34 })]);
    });

    it.each<[string, Body]>([
      ['another amount', { amount: 12.35 }],
      ['another currency', { currency: 'EUR' }],
    ])('same externalId with %s is 400 external_id_conflict', async (_label, patch) => {
      const body = { ...valid(), cardToken: 'tok_success' };
      const first = await create(body);
      expect(first.status).toBe(200);
      const res = await create({ ...body, ...patch });
      expectError(res, 400, 'external_id_conflict');
      // The original is untouched and still captured once.
      const id = first.body.id as string;
      expect((await get(id)).body).toMatchObject({ amount: 12.34, currency: 'USD', status: 'succeeded' });
      expect(await capturesOf(id)).toHaveLength(1);
      expect(await rowsFor(merchant.merchantId, body.externalId)).toBe(1);
    });

    it("another merchant's use of the same externalId is independent", async () => {
      const body = { ...valid(), cardToken: 'tok_success' };
      const mine = await create(body);
      const theirs = await create({ ...body, amount: 99 }, other.auth);
      expect(mine.status).toBe(200);
      expect(theirs.status).toBe(200);
      expect(theirs.body).toMatchObject({ externalId: body.externalId, amount: 99, status: 'succeeded' });
      expect(theirs.body.id).not.toBe(mine.body.id);
      expect(await capturesOf(mine.body.id as string)).toHaveLength(1);
      expect(await capturesOf(theirs.body.id as string)).toEqual([expect.objectContaining({ amount: 99 })]);
      expect((await get(mine.body.id as string)).body).toMatchObject({ amount: 12.34 });
    });
  });

  describe('concurrent duplicates', () => {
    it('20 concurrent token-flow creates: one payment, one capture', async () => {
      const body = { ...valid(), cardToken: 'tok_success' };
      const answers = await Promise.all(Array.from({ length: 20 }, () => create(body)));
      expect(answers.map((a) => a.status)).toEqual(Array(20).fill(200));
      const ids = new Set(answers.map((a) => a.body.id));
      expect(ids.size).toBe(1);
      const id = answers[0]!.body.id as string;
      expect(id).toMatch(/^pay_/);
      expect(answers.map((a) => a.body.status)).toEqual(Array(20).fill('succeeded'));
      expect(await capturesOf(id)).toHaveLength(1);
      expect(await rowsFor(merchant.merchantId, body.externalId)).toBe(1);
    });

    it('20 concurrent hosted-flow creates: one payment, one redirectUrl', async () => {
      const body = valid();
      const answers = await Promise.all(Array.from({ length: 20 }, () => create(body)));
      expect(answers.map((a) => a.status)).toEqual(Array(20).fill(200));
      expect(new Set(answers.map((a) => a.body.id)).size).toBe(1);
      const urls = new Set(answers.map((a) => a.body.redirectUrl));
      expect(urls.size).toBe(1);
      expect([...urls][0]).toMatch(/^https?:\/\/[^?]+$/);
      expect(await rowsFor(merchant.merchantId, body.externalId)).toBe(1);
    });
  });

  describe('merchant isolation and ids', () => {
    it("merchant B gets 404 not_found for merchant A's payment", async () => {
      const created = await create(valid());
      expect(created.status).toBe(200);
      const id = created.body.id as string;
      expect((await get(id)).status).toBe(200);
      const res = await get(id, other.auth);
      const body = expectError(res, 404, 'not_found');
      expect(body.details).toEqual({});
    });

    it.each([
      ['pay_nope'],
      ['abc'],
      [`pay_${'ILOU'.repeat(7).slice(0, 26)}`],
      [`pay_${'0'.repeat(25)}`],
      [newId('refund')],
      [newId('payment')],
    ])('GET /payments/%s is 404 not_found', async (id) => {
      expectError(await get(id), 404, 'not_found');
    });

    it('GET without credentials is 401 with WWW-Authenticate', async () => {
      const res = await call<Body>(stack.api.baseUrl, 'GET', `/payments/${newId('payment')}`, undefined);
      expectError(res, 401, 'unauthorized');
      expect(res.headers.get('www-authenticate')).toMatch(/^Basic/);
    });
  });

  describe('live keys', () => {
    let liveAuth: string;

    beforeAll(async () => {
      const { apiKey, secretKey } = await createKey(stack.orm.em.fork(), merchant.merchantId, {
        environment: 'live',
        role: 'merchant',
      });
      liveAuth = basicAuth(apiKey.publicKey, secretKey);
    });

    it('POST /payments with a live key is 500 provider_not_configured, without internals', async () => {
      const body = valid();
      const res = await create(body, liveAuth);
      expectError(res, 500, 'provider_not_configured');
      expect(res.headers.get('x-request-id')).toBeTruthy();
      const text = JSON.stringify(res.body);
      expect(text).not.toMatch(/\bat .+:\d+:\d+|stack|\.ts\b|select |insert /i);
      expect(await rowsFor(merchant.merchantId, body.externalId)).toBe(0);
    });

    it.each([['http://127.0.0.1:9/cb'], ['http://localhost:8080/cb'], ['http://10.1.2.3/cb'], ['http://[::1]/cb']])(
      'a live key may not use callbackUrl %s: 400 validation_error',
      async (callbackUrl) => {
        const res = await create({ ...valid(), callbackUrl }, liveAuth);
        expectValidation(res, 'callbackUrl');
      },
    );

    it('a test key may use a loopback callbackUrl', async () => {
      const res = await create({ ...valid(), callbackUrl: 'http://127.0.0.1:9/cb' });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ callbackUrl: 'http://127.0.0.1:9/cb', status: 'created', environment: 'test' });
    });
  });
});
