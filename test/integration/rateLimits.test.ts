import type { MikroORM } from '@mikro-orm/postgresql';
import { createKey } from '../../src/domain/merchants';
import type { RateLimitSettings } from '../../src/api/rateLimiter';
import { basicAuth, createTestMerchant, openTestOrm, startTestApi, type TestApi } from '../helpers/stack';

/**
 * PRODUCT.md, "Rate limits", on the real API and PostgreSQL: per API key across API processes
 * (two app instances share the buckets through the database, as API processes do), failed
 * authentications per client address, and 0 turning a limit off.
 */
const OFF: RateLimitSettings = { perSecond: 0, burst: 0, authFailuresPerMinute: 0, authFailuresBurst: 0 };

interface Answer {
  status: number;
  headers: Headers;
  body: { code?: string; message?: string; details?: unknown };
}

async function request(api: TestApi, auth: string | undefined, address?: string): Promise<Answer> {
  const res = await fetch(`${api.baseUrl}/payments?limit=1`, {
    headers: { ...(auth ? { authorization: auth } : {}), ...(address ? { 'x-forwarded-for': address } : {}) },
  });
  return { status: res.status, headers: res.headers, body: (await res.json()) as Answer['body'] };
}

const limitHeaders = (a: Answer) => ({
  limit: a.headers.get('ratelimit-limit'),
  remaining: a.headers.get('ratelimit-remaining'),
  reset: a.headers.get('ratelimit-reset'),
  retryAfter: a.headers.get('retry-after'),
});

let addressSeq = 0;
/** An address of its own per test (TEST-NET-2), so no two tests share a bucket. */
const freshAddress = () => `198.51.${process.pid % 250}.${++addressSeq}`;

describe('rate limits', () => {
  let orm: MikroORM;
  const apis: TestApi[] = [];
  /** Behind one trusted proxy (TRUST_PROXY_HOPS=1) unless told: a test picks its address by X-Forwarded-For. */
  const start = async (rateLimit: RateLimitSettings, trustProxyHops = 1) => {
    const api = await startTestApi({ orm, settings: { rateLimit, trustProxyHops } });
    apis.push(api);
    return api;
  };

  beforeAll(async () => {
    orm = await openTestOrm();
  });
  afterAll(async () => {
    for (const api of apis) await api.close();
    await orm.close();
  });

  describe('per API key', () => {
    it('answers 429 rate_limited with Retry-After and RateLimit-* once the burst is spent, then refills', async () => {
      const api = await start({ ...OFF, perSecond: 1, burst: 5 });
      const merchant = await createTestMerchant(orm, 'Limited');
      const answers: Answer[] = [];
      for (let i = 0; i < 5; i++) answers.push(await request(api, merchant.auth));
      expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200, 200]);
      // Every answer of a limited route says where the caller stands.
      expect(answers.map((a) => limitHeaders(a).limit)).toEqual(['5', '5', '5', '5', '5']);
      expect(answers.map((a) => limitHeaders(a).remaining)).toEqual(['4', '3', '2', '1', '0']);
      expect(Number(limitHeaders(answers[4]!).reset)).toBeGreaterThanOrEqual(4);
      expect(limitHeaders(answers[0]!).retryAfter).toBeNull();

      const limited = await request(api, merchant.auth);
      expect(limited.status).toBe(429);
      expect(limited.body).toEqual({ code: 'rate_limited', message: expect.any(String), details: {} });
      const h = limitHeaders(limited);
      expect(h).toEqual({ limit: '5', remaining: '0', reset: expect.stringMatching(/^\d+$/), retryAfter: '1' });
      expect(Number(h.reset)).toBeGreaterThanOrEqual(1);
      expect(Number(h.reset)).toBeLessThanOrEqual(5);
      expect(limited.headers.get('x-request-id')).toBeTruthy();

      // One token a second: after Retry-After, one more request passes, and the next is refused.
      await new Promise((r) => setTimeout(r, 1100));
      expect((await request(api, merchant.auth)).status).toBe(200);
      expect((await request(api, merchant.auth)).status).toBe(429);
    });

    it('limits each key on its own', async () => {
      const api = await start({ ...OFF, perSecond: 1, burst: 2 });
      const merchant = await createTestMerchant(orm, 'Two keys');
      const second = await createKey(orm.em.fork(), merchant.merchantId, { environment: 'test', role: 'merchant' });
      const other = await createTestMerchant(orm, 'Another merchant');
      for (let i = 0; i < 2; i++) expect((await request(api, merchant.auth)).status).toBe(200);
      expect((await request(api, merchant.auth)).status).toBe(429);
      const secondAuth = basicAuth(second.apiKey.publicKey, second.secretKey);
      expect((await request(api, secondAuth)).status).toBe(200);
      expect((await request(api, other.auth)).status).toBe(200);
    });

    it('is shared by API processes: two instances together admit the burst once', async () => {
      const settings = { ...OFF, perSecond: 1, burst: 6 };
      const [a, b] = [await start(settings), await start(settings)];
      const merchant = await createTestMerchant(orm, 'Two processes');
      const statuses: number[] = [];
      for (let i = 0; i < 10; i++) statuses.push((await request(i % 2 === 0 ? a : b, merchant.auth)).status);
      expect(statuses).toEqual([200, 200, 200, 200, 200, 200, 429, 429, 429, 429]);
    });

    it('never admits more than the shared budget under concurrent load on two instances', async () => {
      // 200/s: processes take tokens in leases of 10.
      const settings = { ...OFF, perSecond: 200, burst: 100 };
      const [a, b] = [await start(settings), await start(settings)];
      const merchant = await createTestMerchant(orm, 'Concurrent load');
      const started = performance.now();
      const answers = await Promise.all(
        Array.from({ length: 300 }, (_, i) => request(i % 2 === 0 ? a : b, merchant.auth)),
      );
      const seconds = (performance.now() - started) / 1000;
      const admitted = answers.filter((x) => x.status === 200).length;
      expect(answers.every((x) => x.status === 200 || x.status === 429)).toBe(true);
      expect(admitted).toBeLessThanOrEqual(100 + Math.ceil(200 * seconds));
      // Unspent leases (at most one of 10 per process) are all the budget a burst can lose.
      expect(admitted).toBeGreaterThanOrEqual(100 - 2 * 10);
    });

    it('is off when RATE_LIMIT_PER_SECOND or RATE_LIMIT_BURST is 0', async () => {
      for (const settings of [
        { ...OFF, perSecond: 0, burst: 2 },
        { ...OFF, perSecond: 1, burst: 0 },
      ]) {
        const api = await start(settings);
        const merchant = await createTestMerchant(orm, 'Unlimited');
        const answers = await Promise.all(Array.from({ length: 20 }, () => request(api, merchant.auth)));
        expect(answers.map((x) => x.status)).toEqual(Array(20).fill(200));
        expect(answers.every((x) => x.headers.get('ratelimit-limit') === null)).toBe(true);
      }
    });
  });

  describe('failed authentications per client address', () => {
    const settings = { ...OFF, authFailuresPerMinute: 6, authFailuresBurst: 3 };

    it('answers 429 past the budget to refused keys; a key that verifies is never refused; other addresses go on', async () => {
      const api = await start(settings);
      const merchant = await createTestMerchant(orm, 'Guessed');
      const wrong = basicAuth(merchant.publicKey, `${merchant.secretKey}x`);
      const address = freshAddress();
      for (let i = 0; i < 3; i++) {
        const failed = await request(api, wrong, address);
        expect(failed.status).toBe(401);
        expect(failed.body.code).toBe('unauthorized');
      }
      const limited = await request(api, wrong, address);
      expect(limited.status).toBe(429);
      expect(limited.body).toMatchObject({ code: 'rate_limited', details: {} });
      const h = limitHeaders(limited);
      expect(h).toMatchObject({ limit: '3', remaining: '0' });
      // 6 a minute: the next failure is allowed within 10 s.
      expect(Number(h.retryAfter)).toBeGreaterThanOrEqual(1);
      expect(Number(h.retryAfter)).toBeLessThanOrEqual(10);
      expect(Number(h.reset)).toBeGreaterThanOrEqual(Number(h.retryAfter));

      // While the address is over its budget, the right key still answers (issue 44: an address
      // can be shared or spoofed; a valid key is never locked out by someone else's failures).
      expect((await request(api, merchant.auth, address)).status).toBe(200);
      // ...and however the client writes X-Forwarded-For, the trusted proxy's entry counts.
      expect((await request(api, wrong, `10.1.2.3, ${address}`)).status).toBe(429);
      // Another address is not affected.
      expect((await request(api, wrong, freshAddress())).status).toBe(401);
    });

    it('without trusted proxies (TRUST_PROXY_HOPS=0, the default) X-Forwarded-For is ignored: the socket counts', async () => {
      const api = await start(settings, 0);
      const merchant = await createTestMerchant(orm, 'Behind no proxy');
      const wrong = basicAuth(merchant.publicKey, `${merchant.secretKey}x`);
      // A fresh header per attempt does not buy a fresh budget: all come from the same socket peer.
      const statuses: number[] = [];
      for (let i = 0; i < 4; i++) statuses.push((await request(api, wrong, freshAddress())).status);
      expect(statuses).toEqual([401, 401, 401, 429]);
      // Nor does a spoofed header block anyone: the valid key answers.
      expect((await request(api, merchant.auth, freshAddress())).status).toBe(200);
    });

    it('does not count requests without credentials, nor successful ones', async () => {
      const api = await start(settings);
      const merchant = await createTestMerchant(orm, 'Not guessing');
      const address = freshAddress();
      for (let i = 0; i < 6; i++) expect((await request(api, undefined, address)).status).toBe(401);
      for (let i = 0; i < 6; i++) expect((await request(api, merchant.auth, address)).status).toBe(200);
      expect((await request(api, basicAuth('pk_test_unknown', 'sk_test_unknown'), address)).status).toBe(401);
    });

    it('is shared by API processes', async () => {
      const [a, b] = [await start(settings), await start(settings)];
      const address = freshAddress();
      const wrong = basicAuth('pk_test_nobody', 'sk_test_nobody');
      expect((await request(a, wrong, address)).status).toBe(401);
      expect((await request(b, wrong, address)).status).toBe(401);
      expect((await request(a, wrong, address)).status).toBe(401);
      expect((await request(b, wrong, address)).status).toBe(429);
      expect((await request(a, wrong, address)).status).toBe(429);
    });

    it('is off when RATE_LIMIT_AUTH_FAILURES_PER_MINUTE is 0', async () => {
      const api = await start({ ...OFF, authFailuresPerMinute: 0, authFailuresBurst: 3 });
      const address = freshAddress();
      const wrong = basicAuth('pk_test_nobody', 'sk_test_nobody');
      for (let i = 0; i < 10; i++) expect((await request(api, wrong, address)).status).toBe(401);
    });
  });
});
