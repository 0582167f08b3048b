import { Subscription } from '../../src/db/entities';
import { newId } from '../../src/ids';
import { call, type JsonResponse, type ErrorBody } from '../helpers/http';
import {
  createTestMerchant,
  startPaymentStack,
  startTestApi,
  type PaymentStack,
  type TestApi,
  type TestMerchant,
} from '../helpers/stack';

/**
 * The 4xx answers of POST /subscriptions, GET and DELETE /subscriptions/{id} (PRODUCT.md
 * "API conventions" and "Subscriptions"), against the real API: pure request validation on an
 * API alone, and everything that needs a subscription to exist on a stack with a sandbox and a
 * worker.
 */

type Body = Record<string, unknown>;

interface Phase {
  id: string;
  name: string;
  order: number;
  iterations: number | null;
  amount: number;
  billingIntervalDays: number;
}

/** What a stack trace, a source file or SQL would look like in a response. */
const INTERNALS = /\bat .+:\d+:\d+|stack|\.ts\b|select |insert |node_modules/i;

/** `{ code, message, details }` with exactly these keys, details an object, nothing internal. */
function expectError(res: JsonResponse<unknown>, status: number, code: string): ErrorBody {
  expect({ status: res.status, body: res.body }).toEqual({
    status,
    body: { code, message: expect.any(String), details: expect.any(Object) },
  });
  const body = res.body as ErrorBody;
  expect(body.message.length).toBeGreaterThan(0);
  expect(typeof body.details).toBe('object');
  expect(body.details).not.toBeNull();
  expect(Array.isArray(body.details)).toBe(false);
  expect(JSON.stringify(body)).not.toMatch(INTERNALS);
  expect(res.headers.get('x-request-id')).toBeTruthy();
  return body;
}

/** A 400 validation_error whose issues all name `path` (the one thing wrong with the request). */
function expectValidation(res: JsonResponse<unknown>, path: string): ErrorBody {
  const body = expectError(res, 400, 'validation_error');
  expect(body.details.issues).toEqual(expect.arrayContaining([expect.objectContaining({ path })]));
  expect([...new Set(body.details.issues!.map((i) => i.path))]).toEqual([path]);
  for (const issue of body.details.issues!) {
    expect(issue).toEqual({ path, code: expect.any(String), message: expect.any(String) });
  }
  return body;
}

async function rawPost(baseUrl: string, auth: string, text: string): Promise<JsonResponse<unknown>> {
  const res = await fetch(`${baseUrl}/subscriptions`, {
    method: 'POST',
    headers: { authorization: auth, 'content-type': 'application/json' },
    body: text,
  });
  return { status: res.status, body: await res.json(), headers: res.headers };
}

let seq = 0;
const ext = (prefix: string) => `${prefix}-${Date.now()}-${process.pid}-${++seq}`;

const validPhase = () => ({ name: 'intro', iterations: 3, amount: 4.99, billingIntervalDays: 30 });

describe('subscriptions: request validation (API alone)', () => {
  let api: TestApi;
  let merchant: TestMerchant;

  const valid = (): Body => ({
    amount: 9.99,
    billingIntervalDays: 30,
    currency: 'USD',
    externalId: ext('subval'),
  });
  const post = (body: unknown, auth: string | undefined = merchant.auth) =>
    call<Body>(api.baseUrl, 'POST', '/subscriptions', auth, body);
  const rowsFor = (externalId: string) =>
    api.orm.em.fork().count(Subscription, { merchant: merchant.merchantId, externalId });

  beforeAll(async () => {
    api = await startTestApi();
    merchant = await createTestMerchant(api.orm, 'Subscription validation merchant');
  });
  afterAll(() => api.close());

  const fiftyOneKeys = Object.fromEntries(Array.from({ length: 51 }, (_, i) => [`key${i}`, 'v']));
  const phases = (n: number) => Array.from({ length: n }, (_, i) => ({ ...validPhase(), name: `phase ${i + 1}` }));

  it.each<[string, Body, string]>([
    // required fields
    ['missing amount', { amount: undefined }, 'amount'],
    ['missing billingIntervalDays', { billingIntervalDays: undefined }, 'billingIntervalDays'],
    ['missing currency', { currency: undefined }, 'currency'],
    ['missing externalId', { externalId: undefined }, 'externalId'],
    // amount
    ['amount 0', { amount: 0 }, 'amount'],
    ['negative amount', { amount: -9.99 }, 'amount'],
    ['USD 1.001 (3 decimals, USD takes 2)', { amount: 1.001 }, 'amount'],
    ['JPY 1.5 (JPY takes none)', { amount: 1.5, currency: 'JPY' }, 'amount'],
    ['KWD 1.2345 (4 decimals, KWD takes 3)', { amount: 1.2345, currency: 'KWD' }, 'amount'],
    ['amount above 1,000,000,000', { amount: 1_000_000_000.01 }, 'amount'],
    ['JPY amount above 1,000,000,000', { amount: 1_000_000_001, currency: 'JPY' }, 'amount'],
    ['string amount', { amount: '9.99' }, 'amount'],
    ['null amount', { amount: null }, 'amount'],
    ['boolean amount', { amount: true }, 'amount'],
    // billingIntervalDays
    ['billingIntervalDays 0', { billingIntervalDays: 0 }, 'billingIntervalDays'],
    ['billingIntervalDays 3651', { billingIntervalDays: 3651 }, 'billingIntervalDays'],
    ['billingIntervalDays 1.5', { billingIntervalDays: 1.5 }, 'billingIntervalDays'],
    ['billingIntervalDays -30', { billingIntervalDays: -30 }, 'billingIntervalDays'],
    ['billingIntervalDays as a string', { billingIntervalDays: '30' }, 'billingIntervalDays'],
    // currency
    ['unknown currency XYZ', { currency: 'XYZ' }, 'currency'],
    ['2-letter currency', { currency: 'US' }, 'currency'],
    ['numeric currency', { currency: 840 }, 'currency'],
    // externalId
    ['empty externalId', { externalId: '' }, 'externalId'],
    ['externalId of 256 characters', { externalId: 'e'.repeat(256) }, 'externalId'],
    ['numeric externalId', { externalId: 42 }, 'externalId'],
    // unknown fields, at every level but metadata
    ['an unknown top-level field', { color: 'red' }, 'color'],
    ['an unknown field inside customer', { customer: { email: 'ada@example.com', phone: '+1 555' } }, 'customer.phone'],
    ['an unknown field inside a phase', { phases: [{ ...validPhase(), discount: 5 }] }, 'phases.0.discount'],
    // customer
    ['customer without email', { customer: { name: 'Ada' } }, 'customer.email'],
    ['customer.email invalid', { customer: { email: 'not-an-email' } }, 'customer.email'],
    // phases
    ['phases empty', { phases: [] }, 'phases'],
    ['21 phases', { phases: phases(21) }, 'phases'],
    ['phases not an array', { phases: validPhase() }, 'phases'],
    ['phase iterations 0', { phases: [{ ...validPhase(), iterations: 0 }] }, 'phases.0.iterations'],
    ['phase iterations 1.5', { phases: [{ ...validPhase(), iterations: 1.5 }] }, 'phases.0.iterations'],
    ['phase iterations null', { phases: [{ ...validPhase(), iterations: null }] }, 'phases.0.iterations'],
    ['phase amount negative', { phases: [{ ...validPhase(), amount: -1 }] }, 'phases.0.amount'],
    ['phase amount USD 0.001', { phases: [{ ...validPhase(), amount: 0.001 }] }, 'phases.0.amount'],
    [
      'phase amount JPY 0.5',
      { currency: 'JPY', amount: 1000, phases: [{ ...validPhase(), amount: 0.5 }] },
      'phases.0.amount',
    ],
    ['phase amount above 1,000,000,000', { phases: [{ ...validPhase(), amount: 1_000_000_001 }] }, 'phases.0.amount'],
    ['phase amount as a string', { phases: [{ ...validPhase(), amount: '4.99' }] }, 'phases.0.amount'],
    [
      'second phase amount with 3 decimals',
      { phases: [validPhase(), { ...validPhase(), amount: 1.999 }] },
      'phases.1.amount',
    ],
    [
      'phase billingIntervalDays 0',
      { phases: [{ ...validPhase(), billingIntervalDays: 0 }] },
      'phases.0.billingIntervalDays',
    ],
    [
      'phase billingIntervalDays 3651',
      { phases: [{ ...validPhase(), billingIntervalDays: 3651 }] },
      'phases.0.billingIntervalDays',
    ],
    ['phase without a name', { phases: [{ ...validPhase(), name: undefined }] }, 'phases.0.name'],
    ['phase with an empty name', { phases: [{ ...validPhase(), name: '' }] }, 'phases.0.name'],
    // retryScheduleDays
    ['retryScheduleDays with 0', { retryScheduleDays: [0] }, 'retryScheduleDays.0'],
    ['retryScheduleDays with 366', { retryScheduleDays: [1, 366] }, 'retryScheduleDays.1'],
    ['retryScheduleDays with a non-integer', { retryScheduleDays: [1, 3, 2.5] }, 'retryScheduleDays.2'],
    ['retryScheduleDays with 11 entries', { retryScheduleDays: Array(11).fill(1) }, 'retryScheduleDays'],
    ['retryScheduleDays not an array', { retryScheduleDays: 3 }, 'retryScheduleDays'],
    // the rest
    ['description over 1000 characters', { description: 'd'.repeat(1001) }, 'description'],
    ['metadata with 51 keys', { metadata: fiftyOneKeys }, 'metadata'],
    ['metadata with a non-string value', { metadata: { plan: 3 } }, 'metadata.plan'],
    ['callbackUrl not a URL', { callbackUrl: 'not a url' }, 'callbackUrl'],
    ['callbackUrl with ftp://', { callbackUrl: 'ftp://example.com/cb' }, 'callbackUrl'],
    ['returnUrl not a URL', { returnUrl: 'nope' }, 'returnUrl'],
    ['empty cardToken', { cardToken: '' }, 'cardToken'],
  ])('%s: 400 validation_error naming the path', async (_label, patch, path) => {
    const body = { ...valid(), ...patch };
    const res = await post(body);
    const error = expectValidation(res, path);
    if (path === 'color' || path.endsWith('.phone') || path.endsWith('.discount')) {
      expect(error.details.unknownFields).toEqual([path]);
    }
    // Nothing is left behind by a rejected request.
    if (typeof body.externalId === 'string' && body.externalId) expect(await rowsFor(body.externalId)).toBe(0);
  });

  it('several problems at once are all named', async () => {
    const res = await post({ amount: 0, billingIntervalDays: 0, currency: 'XYZ', externalId: '', extra: 1 });
    const body = expectError(res, 400, 'validation_error');
    const paths = new Set(body.details.issues!.map((i) => i.path));
    for (const path of ['billingIntervalDays', 'currency', 'externalId', 'extra']) expect(paths).toContain(path);
  });

  it('a body that is not JSON is 400 invalid_json', async () => {
    const res = await rawPost(api.baseUrl, merchant.auth, '{"amount": 9.99, "currency": ');
    expectError(res, 400, 'invalid_json');
  });

  it('a JSON array body is 400 validation_error', async () => {
    const res = await post([valid()]);
    expectError(res, 400, 'validation_error');
  });

  it.each<[string, string, string]>([
    ['POST', '/subscriptions', 'create'],
    ['GET', `/subscriptions/${newId('subscription')}`, 'read'],
    ['DELETE', `/subscriptions/${newId('subscription')}`, 'cancel'],
  ])('%s %s without credentials is 401 unauthorized (%s)', async (method, path) => {
    const res = await call<Body>(api.baseUrl, method, path, undefined, method === 'POST' ? valid() : undefined);
    expectError(res, 401, 'unauthorized');
    expect(res.headers.get('www-authenticate')).toMatch(/^Basic/);
  });

  it('a POST without credentials is refused before validation, and keeps nothing', async () => {
    const body = valid();
    const res = await call<Body>(api.baseUrl, 'POST', '/subscriptions', undefined, { ...body, amount: -1 });
    expectError(res, 401, 'unauthorized');
    expect(await rowsFor(body.externalId as string)).toBe(0);
  });

  it.each<[string, string]>([
    ['a plain word', 'nope'],
    ['a payment id', newId('payment')],
    ['a phase id', newId('phase')],
    ['sub_ with garbage', 'sub_nope'],
    ['a lower-case ULID', newId('subscription').toLowerCase()],
    ['an id one character short', newId('subscription').slice(0, -1)],
    ['a well-formed unknown subscription id', newId('subscription')],
  ])('GET and DELETE with %s are 404 not_found', async (_label, id) => {
    const get = await call<Body>(api.baseUrl, 'GET', `/subscriptions/${id}`, merchant.auth);
    expect(expectError(get, 404, 'not_found').details).toEqual({});
    const del = await call<Body>(api.baseUrl, 'DELETE', `/subscriptions/${id}`, merchant.auth);
    expect(expectError(del, 404, 'not_found').details).toEqual({});
  });
});

describe('subscriptions: answers that need a subscription (stack with sandbox and worker)', () => {
  let stack: PaymentStack;
  let merchant: TestMerchant;
  let other: TestMerchant;

  const valid = (): Body => ({
    amount: 9.99,
    billingIntervalDays: 30,
    currency: 'USD',
    externalId: ext('subval-stack'),
    cardToken: 'tok_success',
    customer: { email: 'ada@example.com', name: 'Ada' },
  });
  const post = (body: unknown, auth = merchant.auth) =>
    call<Body>(stack.api.baseUrl, 'POST', '/subscriptions', auth, body);
  const get = (id: string, auth = merchant.auth) => call<Body>(stack.api.baseUrl, 'GET', `/subscriptions/${id}`, auth);
  const del = (id: string, query = '', auth = merchant.auth) =>
    call<Body>(stack.api.baseUrl, 'DELETE', `/subscriptions/${id}${query}`, auth);
  const rowsFor = (externalId: string) =>
    stack.orm.em.fork().count(Subscription, { merchant: merchant.merchantId, externalId });

  /** An active subscription of `merchant`'s, charged once. */
  async function activeSubscription(patch: Body = {}): Promise<Body> {
    const res = await post({ ...valid(), ...patch });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ status: 'active', id: expect.stringMatching(/^sub_/) });
    return res.body;
  }

  beforeAll(async () => {
    stack = await startPaymentStack('subval', { billingDaySeconds: 3600 });
    [merchant, other] = await Promise.all([
      createTestMerchant(stack.orm, 'Subscription validation merchant A'),
      createTestMerchant(stack.orm, 'Subscription validation merchant B'),
    ]);
  });
  afterAll(() => stack.close());

  describe('accepted bodies: phases and limits', () => {
    it('a free trial phase (amount 0) is allowed: active at once, trial listed first, evergreen last', async () => {
      const body = {
        ...valid(),
        phases: [{ name: 'trial', iterations: 1, amount: 0, billingIntervalDays: 7 }],
      };
      const sub = await activeSubscription(body);
      expect(sub).toMatchObject({ amount: 9.99, currency: 'USD', billingIntervalDays: 30, redirectUrl: null });
      const phases = sub.phases as Phase[];
      expect(phases).toEqual([
        {
          id: expect.stringMatching(/^ph_/),
          name: 'trial',
          order: 1,
          iterations: 1,
          amount: 0,
          billingIntervalDays: 7,
        },
        {
          id: expect.stringMatching(/^ph_/),
          name: 'evergreen',
          order: 2,
          iterations: null,
          amount: 9.99,
          billingIntervalDays: 30,
        },
      ]);
      // The first period is the trial's (7 billing days of an hour here), and nothing was charged.
      const start = Date.parse(sub.currentPeriodStart as string);
      const end = Date.parse(sub.currentPeriodEnd as string);
      expect(end - start).toBe(7 * 3600 * 1000);
      expect(sub.latestInvoice).toMatchObject({ amount: 0, status: 'paid' });
      expect(await stack.ledger('capture', sub.id as string, 'subscriptionId')).toEqual([]);
      expect((await get(sub.id as string)).body).toMatchObject({ status: 'active', phases });
    });

    it('several phases are listed in order 1..n, the evergreen phase last', async () => {
      const sub = await activeSubscription({
        phases: [
          { name: 'trial', iterations: 1, amount: 0, billingIntervalDays: 14 },
          { name: 'intro', iterations: 3, amount: 4.99, billingIntervalDays: 30 },
          { name: 'annual promo', iterations: 1, amount: 50, billingIntervalDays: 365 },
        ],
      });
      const phases = sub.phases as Phase[];
      expect(phases.map((p) => [p.order, p.name, p.iterations, p.amount, p.billingIntervalDays])).toEqual([
        [1, 'trial', 1, 0, 14],
        [2, 'intro', 3, 4.99, 30],
        [3, 'annual promo', 1, 50, 365],
        [4, 'evergreen', null, 9.99, 30],
      ]);
      expect(new Set(phases.map((p) => p.id)).size).toBe(4);
    });

    it('no phases: one evergreen phase', async () => {
      const sub = await activeSubscription();
      expect(sub.phases).toEqual([
        {
          id: expect.stringMatching(/^ph_/),
          name: 'evergreen',
          order: 1,
          iterations: null,
          amount: 9.99,
          billingIntervalDays: 30,
        },
      ]);
    });

    it('accepts every numeric and list limit exactly at its bound', async () => {
      const metadata = Object.fromEntries(
        Array.from({ length: 50 }, (_, i) => [`${i}`.padStart(40, 'm'), i === 0 ? 'v'.repeat(500) : 'v']),
      );
      const sub = await activeSubscription({
        amount: 1_000_000_000,
        billingIntervalDays: 3650,
        metadata,
        retryScheduleDays: Array(10).fill(365),
        phases: Array.from({ length: 20 }, (_, i) => ({
          name: `p${i + 1}`,
          iterations: i === 0 ? 1000 : 1,
          amount: i === 0 ? 0.01 : 0,
          billingIntervalDays: i === 0 ? 1 : 3650,
        })),
      });
      try {
        expect(sub).toMatchObject({ amount: 1_000_000_000, billingIntervalDays: 3650, metadata });
        expect(sub.retryScheduleDays).toEqual(Array(10).fill(365));
        expect((sub.phases as Phase[]).map((p) => p.order)).toEqual(Array.from({ length: 21 }, (_, i) => i + 1));
      } finally {
        await del(sub.id as string, '?notify=false');
      }
    });

    // The longest strings the API accepts end up in the customer emails recorded with the
    // first charge: they must not keep the subscription from activating.
    it.each<[string, () => Body]>([
      ['an externalId of 255 characters', () => ({ externalId: `${ext('subval-bounds')}-`.padEnd(255, 'x') })],
      ['a description of 1000 characters', () => ({ description: 'd'.repeat(1000) })],
    ])('%s is accepted, and the subscription activates', async (_label, patch) => {
      const body = { ...valid(), ...patch() };
      const res = await post(body);
      const id = (res.body.id ?? (res.body.details as { subscription?: Body } | undefined)?.subscription?.id) as string;
      try {
        expect({ status: res.status, code: res.body.code }).toEqual({ status: 200, code: undefined });
        expect(res.body).toMatchObject({ status: 'active', externalId: body.externalId });
        if (body.description) expect(res.body.description).toBe(body.description);
      } finally {
        // Whatever happened, leave nothing billing in the background.
        if (id) await del(id, '?notify=false');
      }
    });
  });

  describe('DELETE query', () => {
    let id: string;
    beforeAll(async () => {
      id = (await activeSubscription()).id as string;
    });

    it.each<[string, string, string]>([
      ['notify=maybe', '?notify=maybe', 'notify'],
      ['notify=1', '?notify=1', 'notify'],
      ['notify given twice', '?notify=true&notify=false', 'notify'],
      ['reason longer than 500', `?reason=${'r'.repeat(501)}`, 'reason'],
      ['an empty reason', '?reason=', 'reason'],
      ['an unknown query parameter', '?prorate=true', 'prorate'],
    ])('%s: 400 validation_error, and the subscription is not cancelled', async (_label, query, path) => {
      const res = await del(id, query);
      const body = expectValidation(res, path);
      if (path === 'prorate') expect(body.details.unknownFields).toEqual(['prorate']);
      expect((await get(id)).body).toMatchObject({ status: 'active', cancelledAt: null, cancellationReason: null });
    });

    it('a reason of exactly 500 characters is accepted and recorded', async () => {
      const reason = 'r'.repeat(500);
      const res = await del(id, `?reason=${reason}&notify=false`);
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ status: 'cancelled', cancellationReason: reason });
    });
  });

  describe('merchant isolation', () => {
    it("another merchant's subscription is 404 on GET and DELETE, and is left as it is", async () => {
      const sub = await activeSubscription();
      const id = sub.id as string;
      expect(expectError(await get(id, other.auth), 404, 'not_found').details).toEqual({});
      expect(expectError(await del(id, '', other.auth), 404, 'not_found').details).toEqual({});
      expect(expectError(await del(id, '?reason=mine&notify=false', other.auth), 404, 'not_found').details).toEqual({});
      const after = await get(id);
      expect(after.status).toBe(200);
      expect(after.body).toMatchObject({ status: 'active', cancelledAt: null, cancellationReason: null });
    });

    it("the same externalId at another merchant's is independent", async () => {
      const body = valid();
      const mine = await post(body);
      const theirs = await post({ ...body, amount: 19.99 }, other.auth);
      expect(mine.status).toBe(200);
      expect(theirs.status).toBe(200);
      expect(theirs.body).toMatchObject({ externalId: body.externalId, amount: 19.99, status: 'active' });
      expect(theirs.body.id).not.toBe(mine.body.id);
    });
  });

  describe('idempotency by externalId', () => {
    it('the same externalId, amount and currency answers the same subscription', async () => {
      const body = valid();
      const first = await activeSubscription(body);
      const again = await post(body);
      expect(again.status).toBe(200);
      expect(again.body.id).toBe(first.id);
      expect(again.body).toMatchObject({ status: 'active', amount: 9.99, currency: 'USD' });
      const lower = await post({ ...body, currency: 'usd' });
      expect(lower.status).toBe(200);
      expect(lower.body.id).toBe(first.id);
      expect(await rowsFor(body.externalId as string)).toBe(1);
      // One invoice, charged once.
      expect(await stack.ledger('capture', first.id as string, 'subscriptionId')).toEqual([
        expect.objectContaining({ status: 'succeeded', amount: 9.99, currency: 'USD' }),
      ]);
    });

    it.each<[string, Body]>([
      ['another amount', { amount: 10.99 }],
      ['another currency', { currency: 'EUR' }],
    ])('the same externalId with %s is 400 external_id_conflict', async (_label, patch) => {
      const body = valid();
      const first = await activeSubscription(body);
      const res = await post({ ...body, ...patch });
      expectError(res, 400, 'external_id_conflict');
      expect((await get(first.id as string)).body).toMatchObject({ amount: 9.99, currency: 'USD', status: 'active' });
      expect(await rowsFor(body.externalId as string)).toBe(1);
    });
  });

  describe('card tokens', () => {
    it('an unknown card token is 400 invalid_card_token', async () => {
      const body: Body = { ...valid(), cardToken: 'tok_bogus' };
      const res = await post(body);
      expectError(res, 400, 'invalid_card_token');
      expect(await rowsFor(body.externalId as string)).toBe(0);
      // Asked again, the answer is the same: the token is the problem, not a concurrent request.
      expectError(await post(body), 400, 'invalid_card_token');
    });

    it('after an unknown card token nothing is kept, and the externalId stays free', async () => {
      const body: Body = { ...valid(), cardToken: 'tok_bogus' };
      const res = await post(body);
      expect(res.status).toBeGreaterThanOrEqual(400);
      expect(res.status).toBeLessThan(500);
      expect(await rowsFor(body.externalId as string)).toBe(0);

      const retry = await post({ ...body, cardToken: 'tok_success' });
      expect(retry.status).toBe(200);
      expect(retry.body).toMatchObject({ externalId: body.externalId, status: 'active' });
      expect(await rowsFor(body.externalId as string)).toBe(1);
    });
  });
});
