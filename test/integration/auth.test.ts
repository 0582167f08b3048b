import { createHash } from 'node:crypto';
import type { MikroORM } from '@mikro-orm/postgresql';
import { createKey, revokeKey, setMerchantStatus } from '../../src/domain/merchants';
import {
  basicAuth,
  createTestMerchant,
  openTestOrm,
  startTestApi,
  type TestApi,
  type TestMerchant,
} from '../helpers/stack';

const b64 = (s: string) => Buffer.from(s).toString('base64');

describe('GET /merchant/api-keys and authentication', () => {
  let orm: MikroORM;
  let api: TestApi;
  let merchant: TestMerchant;

  const list = (authorization?: string) =>
    fetch(`${api.baseUrl}/merchant/api-keys`, { headers: authorization ? { authorization } : {} });

  beforeAll(async () => {
    orm = await openTestOrm();
    // A short cache TTL so state changes show up quickly; the 5 s bound is tested separately.
    api = await startTestApi({ orm, settings: { authCacheTtlMs: 100 } });
    merchant = await createTestMerchant(orm);
  });
  afterAll(async () => {
    await api.close();
    await orm.close();
  });

  async function expectUnauthorized(authorization: string | undefined): Promise<void> {
    const res = await list(authorization);
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toMatch(/^Basic /);
    expect(res.headers.get('x-request-id')).toBeTruthy();
    expect(await res.json()).toEqual({ code: 'unauthorized', message: expect.any(String), details: {} });
  }

  it('answers 200 with the key for valid credentials', async () => {
    const res = await list(merchant.auth);
    expect(res.status).toBe(200);
    const body = (await res.json()) as { apiKeys: Array<Record<string, unknown>> };
    expect(body.apiKeys).toEqual([
      {
        id: merchant.apiKeyId,
        publicKey: merchant.publicKey,
        environment: 'test',
        role: 'merchant',
        isActive: true,
        createdAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
        revokedAt: null,
        // Written after the answer (off the request's path): this first request may not see it yet.
        lastUsedAt: body.apiKeys[0]?.lastUsedAt === null ? null : expect.any(String),
      },
    ]);
  });

  it.each([
    ['missing header', undefined],
    ['another scheme', 'Bearer abc'],
    ['bad base64 payload', 'Basic %%%'],
    ['no colon', `Basic ${b64('pk_test_abc')}`],
    ['empty secret', `Basic ${b64('pk_test_abc:')}`],
    ['unknown public key', basicAuth('pk_test_doesnotexist', 'sk_test_whatever')],
  ])('401 for %s', async (_name, header) => {
    await expectUnauthorized(header);
  });

  it('401 for a wrong secret', async () => {
    await expectUnauthorized(basicAuth(merchant.publicKey, `${merchant.secretKey}x`));
    await expectUnauthorized(basicAuth(merchant.publicKey, merchant.secretKey.slice(0, -1)));
  });

  it('401 for a revoked key, and the listing shows it revoked', async () => {
    const extra = await createKey(orm.em.fork(), merchant.merchantId, { environment: 'test', role: 'merchant' });
    const extraAuth = basicAuth(extra.apiKey.publicKey, extra.secretKey);
    expect((await list(extraAuth)).status).toBe(200);
    await revokeKey(orm.em.fork(), extra.apiKey.id);
    await new Promise((r) => setTimeout(r, 150));
    await expectUnauthorized(extraAuth);

    const body = (await (await list(merchant.auth)).json()) as { apiKeys: Array<Record<string, unknown>> };
    const revoked = body.apiKeys.find((k) => k.id === extra.apiKey.id);
    expect(revoked).toMatchObject({ isActive: false, revokedAt: expect.any(String) });
  });

  it('403 forbidden for a key whose role is not merchant', async () => {
    const admin = await createKey(orm.em.fork(), merchant.merchantId, { environment: 'live', role: 'admin' });
    const res = await list(basicAuth(admin.apiKey.publicKey, admin.secretKey));
    expect(res.status).toBe(403);
    expect(await res.json()).toEqual({ code: 'forbidden', message: expect.any(String), details: {} });
  });

  it('403 merchant_inactive for a deactivated merchant, 200 again once reactivated', async () => {
    const other = await createTestMerchant(orm, 'Soon inactive');
    await setMerchantStatus(orm.em.fork(), other.merchantId, false);
    await new Promise((r) => setTimeout(r, 150));
    const res = await list(other.auth);
    expect(res.status).toBe(403);
    expect(await res.json()).toEqual({ code: 'merchant_inactive', message: expect.any(String), details: {} });

    await setMerchantStatus(orm.em.fork(), other.merchantId, true);
    await new Promise((r) => setTimeout(r, 150));
    expect((await list(other.auth)).status).toBe(200);
  });

  it("lists only the caller's keys, newest first, and never a secret", async () => {
    const mine = await createTestMerchant(orm, 'Mine');
    const second = await createKey(orm.em.fork(), mine.merchantId, { environment: 'test', role: 'merchant' });
    const theirs = await createTestMerchant(orm, 'Theirs');

    const res = await list(mine.auth);
    const text = await res.text();
    const body = JSON.parse(text) as { apiKeys: Array<Record<string, unknown>> };
    expect(body.apiKeys.map((k) => k.id)).toEqual([second.apiKey.id, mine.apiKeyId]);
    expect(text).not.toContain(theirs.publicKey);
    for (const secret of [mine.secretKey, second.secretKey]) expect(text).not.toContain(secret);
    expect(text).not.toMatch(/secret/i);
    expect(text).not.toContain(createHash('sha256').update(mine.secretKey).digest('hex'));
  });

  it("lists only the keys of the caller's environment: a test key never sees a live key, and the reverse", async () => {
    const m = await createTestMerchant(orm, 'Two environments');
    const live = await createKey(orm.em.fork(), m.merchantId, { environment: 'live', role: 'merchant' });
    const liveAdmin = await createKey(orm.em.fork(), m.merchantId, { environment: 'live', role: 'admin' });
    const liveAuth = basicAuth(live.apiKey.publicKey, live.secretKey);

    const asTest = await list(m.auth);
    expect(asTest.status).toBe(200);
    const testText = await asTest.text();
    const testKeys = (JSON.parse(testText) as { apiKeys: Array<{ id: string; environment: string }> }).apiKeys;
    expect(testKeys.map((k) => k.id)).toEqual([m.apiKeyId]);
    expect(testText).not.toContain(live.apiKey.publicKey);
    expect(testText).not.toContain(liveAdmin.apiKey.publicKey);

    const asLive = await list(liveAuth);
    expect(asLive.status).toBe(200);
    const liveKeys = (await asLive.json()) as { apiKeys: Array<{ id: string; environment: string }> };
    expect(liveKeys.apiKeys.map((k) => k.id)).toEqual([liveAdmin.apiKey.id, live.apiKey.id]);
    expect(liveKeys.apiKeys.every((k) => k.environment === 'live')).toBe(true);
  });

  it('stores only a hash of the secret', async () => {
    const rows: Array<Record<string, unknown>> = await orm.em
      .getConnection()
      .execute('select * from api_keys where id = ?', [merchant.apiKeyId]);
    const row = rows[0]!;
    const stored = JSON.stringify(row);
    expect(stored).not.toContain(merchant.secretKey);
    expect(stored).not.toContain(merchant.secretKey.slice(8)); // nor the random part alone
    expect(row.secret_hash).toBe(createHash('sha256').update(merchant.secretKey).digest('hex'));
  });
});

describe('verified-key cache bound', () => {
  it('refuses a revoked key within 5 s with the default cache', async () => {
    const orm = await openTestOrm();
    const api = await startTestApi({ orm }); // default TTL: 5000 ms
    try {
      const m = await createTestMerchant(orm, 'Cache bound');
      const url = `${api.baseUrl}/merchant/api-keys`;
      expect((await fetch(url, { headers: { authorization: m.auth } })).status).toBe(200);
      const revokedAt = Date.now();
      await revokeKey(orm.em.fork(), m.apiKeyId);
      let status = 200;
      while (status === 200 && Date.now() - revokedAt < 7000) {
        await new Promise((r) => setTimeout(r, 200));
        status = (await fetch(url, { headers: { authorization: m.auth } })).status;
      }
      expect(status).toBe(401);
      expect(Date.now() - revokedAt).toBeLessThanOrEqual(5500);
    } finally {
      await api.close();
      await orm.close();
    }
  });
});
