import { Payment, Subscription } from '../../src/db/entities';
import { call, eventually, type JsonResponse, type ErrorBody } from '../helpers/http';
import { createTestMerchant, startPaymentStack, type PaymentStack, type TestMerchant } from '../helpers/stack';

/**
 * Text PostgreSQL cannot store unchanged, on every endpoint that takes text, against the real
 * stack: a U+0000 (text and jsonb refuse it) or a lone UTF-16 surrogate (no UTF-8 form) anywhere
 * in a JSON body, keys included, or in a query value is 400 `validation_error` naming the field,
 * and nothing is kept; a body that is not UTF-8 is 400 `invalid_json`. Real Unicode (surrogate
 * pairs, astral characters, combining marks) comes back byte for byte.
 */

type Body = Record<string, unknown>;

const NUL = '\u0000';
const HIGH = '\uD83D'; // the first half of an emoji, alone
const LOW = '\uDE00'; // the second half, alone
/** Astral characters (surrogate pairs), a ZWJ sequence, combining marks, and U+FFFD sent on purpose. */
const UNICODE = 'Zoë 💳 𠮷野家 👨‍👩‍👧 e\u0301 a\u0308 \uFFFD ∑';

/** What a stack trace, a source file or SQL would look like in a response. */
const INTERNALS = /\bat .+:\d+:\d+|stack|\.ts\b|select |insert |node_modules/i;

function expectError(res: JsonResponse<unknown>, status: number, code: string): ErrorBody {
  expect({ status: res.status, body: res.body }).toEqual({
    status,
    body: { code, message: expect.any(String), details: expect.any(Object) },
  });
  expect(JSON.stringify(res.body)).not.toMatch(INTERNALS);
  return res.body as ErrorBody;
}

/** A 400 validation_error whose issues all name `path`, one of them `invalid_text`. */
function expectTextIssue(res: JsonResponse<unknown>, path: string): ErrorBody {
  const body = expectError(res, 400, 'validation_error');
  expect([...new Set(body.details.issues!.map((i) => i.path))]).toEqual([path]);
  expect(body.details.issues).toContainEqual({ path, code: 'invalid_text', message: expect.any(String) });
  return body;
}

/** Sends bytes as they are; the answer is decoded strictly, so a U+FFFD in it was really sent. */
async function raw(baseUrl: string, method: string, path: string, auth: string, bytes?: Buffer) {
  const res = await fetch(`${baseUrl}${path}`, {
    method,
    headers: { authorization: auth, ...(bytes ? { 'content-type': 'application/json' } : {}) },
    body: bytes,
  });
  const text = new TextDecoder('utf-8', { fatal: true }).decode(await res.arrayBuffer());
  return { status: res.status, body: JSON.parse(text) as Body, headers: res.headers };
}

let seq = 0;
const ext = (prefix: string) => `${prefix}-${Date.now()}-${process.pid}-${++seq}`;

describe('text PostgreSQL cannot store unchanged', () => {
  let stack: PaymentStack;
  let merchant: TestMerchant;

  const post = (path: string, body: unknown) => call<Body>(stack.api.baseUrl, 'POST', path, merchant.auth, body);
  const get = (path: string) => raw(stack.api.baseUrl, 'GET', path, merchant.auth);
  const payments = () => stack.orm.em.fork().count(Payment, { merchant: merchant.merchantId });
  const subscriptions = () => stack.orm.em.fork().count(Subscription, { merchant: merchant.merchantId });

  const validPayment = (): Body => ({
    amount: 12.34,
    currency: 'USD',
    externalId: ext('txt-pay'),
    customer: { email: 'buyer@example.com', name: 'Buyer' },
  });
  const validSubscription = (): Body => ({
    amount: 9.99,
    currency: 'USD',
    billingIntervalDays: 30,
    externalId: ext('txt-sub'),
    customer: { email: 'buyer@example.com', name: 'Buyer' },
  });
  const phase = (name: string) => ({ name, iterations: 1, amount: 1, billingIntervalDays: 30 });

  beforeAll(async () => {
    stack = await startPaymentStack('text-validation');
    merchant = await createTestMerchant(stack.orm, 'Text validation merchant');
  });
  afterAll(() => stack.close());

  describe('POST /payments', () => {
    it.each<[string, Body, string]>([
      ['NUL in externalId', { externalId: `ext${NUL}1` }, 'externalId'],
      ['NUL in description', { description: `desc${NUL}` }, 'description'],
      ['NUL in customer.name', { customer: { email: 'buyer@example.com', name: `Ada${NUL}` } }, 'customer.name'],
      [
        'NUL in customer.externalId',
        { customer: { email: 'buyer@example.com', externalId: `c${NUL}` } },
        'customer.externalId',
      ],
      ['NUL in customer.email', { customer: { email: `buyer${NUL}@example.com` } }, 'customer.email'],
      ['NUL in cardToken', { cardToken: `tok_success${NUL}` }, 'cardToken'],
      ['NUL in currency', { currency: `US${NUL}` }, 'currency'],
      ['NUL in callbackUrl', { callbackUrl: `https://example.com/cb${NUL}` }, 'callbackUrl'],
      ['NUL in a metadata value', { metadata: { plan: 'gold', k: `v${NUL}` } }, 'metadata.k'],
      ['NUL in a metadata key', { metadata: { plan: 'gold', [`k${NUL}ey`]: 'v' } }, `metadata.k${NUL}ey`],
      ['NUL in a nested billing value', { billing: { address: { line1: `1 Main${NUL}` } } }, 'billing.address.line1'],
      ['NUL in a nested billing key', { billing: { address: { [`li${NUL}ne`]: 'x' } } }, `billing.address.li${NUL}ne`],
      ['NUL in a billing array', { billing: { lines: ['ok', `x${NUL}`] } }, 'billing.lines.1'],
      ['NUL in an unknown field', { [`col${NUL}or`]: 'red' }, `col${NUL}or`],
      ['a lone high surrogate in externalId', { externalId: `ext${HIGH}` }, 'externalId'],
      ['a lone low surrogate in externalId', { externalId: `${LOW}ext` }, 'externalId'],
      ['a lone high surrogate in description', { description: `a ${HIGH} b` }, 'description'],
      ['a lone low surrogate in customer.name', { customer: { email: 'b@example.com', name: LOW } }, 'customer.name'],
      ['a lone low surrogate in a metadata value', { metadata: { k: `${LOW}${HIGH}` } }, 'metadata.k'],
      ['a lone high surrogate in a metadata key', { metadata: { [`k${HIGH}`]: 'v' } }, `metadata.k${HIGH}`],
      ['a lone high surrogate in a billing value', { billing: { name: HIGH } }, 'billing.name'],
    ])('%s: 400 naming the field, nothing kept', async (_label, patch, path) => {
      const before = await payments();
      expectTextIssue(await post('/payments', { ...validPayment(), ...patch }), path);
      expect(await payments()).toBe(before);
    });

    it('names every bad field of one request, with the schema issues', async () => {
      const res = await post('/payments', {
        ...validPayment(),
        amount: undefined,
        description: NUL,
        metadata: { a: HIGH, [LOW]: 'b' },
      });
      const body = expectError(res, 400, 'validation_error');
      expect(body.details.issues!.map((i) => `${i.path}:${i.code}`).sort()).toEqual(
        [
          'amount:invalid_type',
          'description:invalid_text',
          'metadata.a:invalid_text',
          `metadata.${LOW}:invalid_text`,
        ].sort(),
      );
    });

    it('the externalId of a refused request stays free', async () => {
      const body = validPayment();
      expectTextIssue(await post('/payments', { ...body, description: `x${NUL}` }), 'description');
      const created = await post('/payments', { ...body, description: 'fine' });
      expect(created.status).toBe(200);
      expect(created.body).toMatchObject({ externalId: body.externalId, description: 'fine' });
    });

    it.each<[string, Buffer]>([
      ['a Latin-1 byte', Buffer.from('café', 'latin1')],
      ['a lone 0xFF byte', Buffer.from([0x61, 0xff, 0x62])],
      ['a surrogate encoded as UTF-8 (CESU-8)', Buffer.from([0xed, 0xa0, 0xbd])],
      ['a truncated sequence', Buffer.from([0x61, 0xe2, 0x82])],
    ])('a body with %s (not UTF-8) is 400 invalid_json, nothing kept', async (_label, bad) => {
      const body = validPayment();
      const json = JSON.stringify({ ...body, description: 'PLACEHOLDER' });
      const [head, tail] = json.split('PLACEHOLDER') as [string, string];
      const before = await payments();
      const res = await raw(
        stack.api.baseUrl,
        'POST',
        '/payments',
        merchant.auth,
        Buffer.concat([Buffer.from(head), bad, Buffer.from(tail)]),
      );
      expectError(res, 400, 'invalid_json');
      expect(await payments()).toBe(before);
      // The same request in valid UTF-8 is taken: the externalId was not used.
      expect((await post('/payments', { ...body, description: 'café' })).status).toBe(200);
    });

    it('a raw NUL byte inside a JSON string is 400 invalid_json', async () => {
      const json = Buffer.from(JSON.stringify({ ...validPayment(), description: 'a_b' }).replace('a_b', 'a\u0000b'));
      expectError(await raw(stack.api.baseUrl, 'POST', '/payments', merchant.auth, json), 400, 'invalid_json');
    });

    it('a body nested deeper than 64 levels is 400 invalid_json, not a stack overflow', async () => {
      const depth = 300_000;
      const json = JSON.stringify({ ...validPayment(), billing: { x: 'PLACEHOLDER' } }).replace(
        '"PLACEHOLDER"',
        `${'['.repeat(depth)}${']'.repeat(depth)}`,
      );
      const before = await payments();
      const res = await raw(stack.api.baseUrl, 'POST', '/payments', merchant.auth, Buffer.from(json));
      expect(expectError(res, 400, 'invalid_json').details).toMatchObject({ maxDepth: 64 });
      expect(await payments()).toBe(before);
    });

    it('emoji, astral and combining text comes back byte for byte', async () => {
      const body = {
        ...validPayment(),
        externalId: `${ext('txt')}-${UNICODE}`,
        description: UNICODE,
        customer: { email: 'zoe@example.com', name: UNICODE, externalId: `cust ${UNICODE}` },
        metadata: { [`kéy 💳`]: UNICODE, plain: 'x' },
        billing: { address: { [`straße 𠮷`]: UNICODE, lines: [UNICODE, 'é'] } },
      };
      const created = await raw(
        stack.api.baseUrl,
        'POST',
        '/payments',
        merchant.auth,
        Buffer.from(JSON.stringify(body)),
      );
      expect(created.status).toBe(200);
      const fetched = await get(`/payments/${created.body.id as string}`);
      for (const answer of [created.body, fetched.body]) {
        expect(answer).toMatchObject({
          externalId: body.externalId,
          description: body.description,
          customer: body.customer,
          metadata: body.metadata,
          billing: body.billing,
        });
      }
    });
  });

  describe('POST /payments/{id}/refund', () => {
    let paymentId: string;
    const refunds = async () => (await get(`/payments/${paymentId}/refunds`)).body.refunds as Body[];

    beforeAll(async () => {
      const paid = await post('/payments', { ...validPayment(), cardToken: 'tok_success' });
      expect(paid.body.status).toBe('succeeded');
      paymentId = paid.body.id as string;
    });

    it.each<[string, Body, string]>([
      ['NUL in externalId', { externalId: `r${NUL}` }, 'externalId'],
      ['NUL in reason', { reason: `damaged${NUL}` }, 'reason'],
      ['a lone high surrogate in externalId', { externalId: `r${HIGH}` }, 'externalId'],
      ['a lone low surrogate in reason', { reason: LOW }, 'reason'],
      ['NUL in currency', { currency: `US${NUL}` }, 'currency'],
    ])('%s: 400 naming the field, nothing refunded', async (_label, patch, path) => {
      const res = await post(`/payments/${paymentId}/refund`, { externalId: ext('txt-ref'), amount: 1, ...patch });
      expectTextIssue(res, path);
      expect(await refunds()).toEqual([]);
      expect((await get(`/payments/${paymentId}`)).body).toMatchObject({ status: 'succeeded', amountRefunded: 0 });
    });

    it('emoji, astral and combining text comes back byte for byte; a refused externalId stays free', async () => {
      const externalId = `${ext('txt-ref')} ${UNICODE}`;
      expectTextIssue(await post(`/payments/${paymentId}/refund`, { externalId, amount: 1, reason: NUL }), 'reason');
      const refunded = await post(`/payments/${paymentId}/refund`, { externalId, amount: 1, reason: UNICODE });
      expect(refunded.status).toBe(200);
      const fetched = await get(`/refunds/${refunded.body.id as string}`);
      for (const answer of [refunded.body, fetched.body]) {
        expect(answer).toMatchObject({ externalId, reason: UNICODE });
      }
      expect(await refunds()).toHaveLength(1);
    });
  });

  describe('POST /subscriptions', () => {
    it.each<[string, Body, string]>([
      ['NUL in externalId', { externalId: `s${NUL}` }, 'externalId'],
      ['NUL in description', { description: `plan${NUL}` }, 'description'],
      ['NUL in customer.name', { customer: { email: 'buyer@example.com', name: `Ada${NUL}` } }, 'customer.name'],
      [
        'NUL in customer.externalId',
        { customer: { email: 'buyer@example.com', externalId: `c${NUL}` } },
        'customer.externalId',
      ],
      ['NUL in cardToken', { cardToken: `tok_success${NUL}` }, 'cardToken'],
      ['NUL in a metadata value', { metadata: { k: `v${NUL}` } }, 'metadata.k'],
      ['NUL in a metadata key', { metadata: { [`${NUL}k`]: 'v' } }, `metadata.${NUL}k`],
      ['NUL in a phase name', { phases: [phase(`intro${NUL}`)] }, 'phases.0.name'],
      ['a lone high surrogate in the second phase name', { phases: [phase('a'), phase(HIGH)] }, 'phases.1.name'],
      ['a lone low surrogate in externalId', { externalId: `s${LOW}` }, 'externalId'],
      ['a lone high surrogate in description', { description: HIGH }, 'description'],
      ['a lone low surrogate in a metadata key', { metadata: { [LOW]: 'v' } }, `metadata.${LOW}`],
    ])('%s: 400 naming the field, nothing kept', async (_label, patch, path) => {
      const before = await subscriptions();
      expectTextIssue(await post('/subscriptions', { ...validSubscription(), ...patch }), path);
      expect(await subscriptions()).toBe(before);
    });

    it('a body that is not UTF-8 is 400 invalid_json, nothing kept', async () => {
      const json = JSON.stringify({ ...validSubscription(), description: 'PLACEHOLDER' });
      const [head, tail] = json.split('PLACEHOLDER') as [string, string];
      const before = await subscriptions();
      const bytes = Buffer.concat([Buffer.from(head), Buffer.from([0xc3, 0x28]), Buffer.from(tail)]);
      expectError(await raw(stack.api.baseUrl, 'POST', '/subscriptions', merchant.auth, bytes), 400, 'invalid_json');
      expect(await subscriptions()).toBe(before);
    });

    it('emoji, astral and combining text comes back byte for byte; a refused externalId stays free', async () => {
      const body = {
        ...validSubscription(),
        externalId: `${ext('txt-sub')} ${UNICODE}`,
        description: UNICODE,
        customer: { email: 'zoe@example.com', name: UNICODE, externalId: UNICODE },
        metadata: { [`plan 💳`]: UNICODE },
        phases: [phase(`intro ${UNICODE}`)],
      };
      expectTextIssue(await post('/subscriptions', { ...body, description: `${UNICODE}${NUL}` }), 'description');
      const created = await post('/subscriptions', body);
      expect(created.status).toBe(200);
      const fetched = await get(`/subscriptions/${created.body.id as string}`);
      for (const answer of [created.body, fetched.body]) {
        expect(answer).toMatchObject({
          externalId: body.externalId,
          description: UNICODE,
          customer: body.customer,
          metadata: body.metadata,
        });
        expect((answer.phases as Body[])[0]).toMatchObject({ name: `intro ${UNICODE}` });
      }
    });
  });

  describe('DELETE /subscriptions/{id}?reason=', () => {
    let subscriptionId: string;
    const cancel = (query: string) =>
      raw(stack.api.baseUrl, 'DELETE', `/subscriptions/${subscriptionId}${query}`, merchant.auth);

    beforeAll(async () => {
      const created = await post('/subscriptions', { ...validSubscription(), cardToken: 'tok_success' });
      expect(created.body.status).toBe('active');
      subscriptionId = created.body.id as string;
    });

    it.each([
      ['NUL', '?reason=%00'],
      ['NUL after text', '?reason=moved%00&notify=false'],
      ['bytes that are not UTF-8', '?reason=caf%E9'],
      ['a surrogate encoded as UTF-8', '?reason=%ED%A0%BD'],
    ])('%s in reason: 400 naming reason, still active', async (_label, query) => {
      expectTextIssue(await cancel(query), 'reason');
      expect((await get(`/subscriptions/${subscriptionId}`)).body).toMatchObject({
        status: 'active',
        cancellationReason: null,
      });
    });

    it('an emoji reason is recorded byte for byte', async () => {
      const reason = `moved 🏠 to Zürich ${UNICODE}`;
      const cancelled = await cancel(`?reason=${encodeURIComponent(reason)}&notify=false`);
      expect(cancelled.status).toBe(200);
      expect(cancelled.body).toMatchObject({ status: 'cancelled', cancellationReason: reason });
      const fetched = await eventually(
        () => get(`/subscriptions/${subscriptionId}`),
        (r) => r.body.status === 'cancelled',
      );
      expect(fetched.body.cancellationReason).toBe(reason);
    });
  });
});
