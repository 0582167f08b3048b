import { randomBytes } from 'node:crypto';
import { basicAuth, createTestMerchant, startTestApi, TEST_PROVIDER_SECRETS_KEY, type TestApi } from '../helpers/stack';
import { call, type ErrorBody } from '../helpers/http';
import { createKey } from '../../src/domain/merchants';
import { WebhookEndpoint } from '../../src/db/entities';
import { ProviderSecrets } from '../../src/providers/secrets';
import { revealEndpointSecrets } from '../../src/domain/webhookEndpoints';
import { signingSecretsOf } from '../../src/rules/eventFilters';

/**
 * PRODUCT.md, "Events, webhook endpoints and deliveries": webhook endpoints per merchant and
 * environment (decision 0068). The real API on the run's PostgreSQL; delivery is not part of this.
 */
interface Endpoint {
  id: string;
  url: string;
  enabledEvents: string[];
  description: string | null;
  status: string;
  createdAt: string;
  updatedAt: string;
  secret?: string;
}

describe('webhook endpoints', () => {
  let api: TestApi;
  let testAuth: string;
  let liveAuth: string;
  let otherAuth: string;
  const req = <T = Endpoint>(method: string, path: string, auth: string, body?: unknown) =>
    call<T>(api.baseUrl, method, path, auth, body);
  const create = (auth: string, body: Record<string, unknown> = {}) =>
    req('POST', '/webhook-endpoints', auth, {
      url: 'https://hooks.example.com/payments',
      enabledEvents: ['payment.succeeded'],
      ...body,
    });

  beforeAll(async () => {
    api = await startTestApi();
    const merchant = await createTestMerchant(api.orm, 'Webhook endpoints merchant');
    testAuth = merchant.auth;
    const live = await createKey(api.orm.em.fork(), merchant.merchantId, { environment: 'live', role: 'merchant' });
    liveAuth = basicAuth(live.apiKey.publicKey, live.secretKey);
    otherAuth = (await createTestMerchant(api.orm, 'Another merchant')).auth;
  });
  afterAll(() => api.close());

  it('create, get, list, patch, delete', async () => {
    const created = await create(testAuth, {
      enabledEvents: ['payment.*', 'refund.succeeded', 'payment.*'],
      description: 'orders service',
    });
    expect(created.status).toBe(200);
    const endpoint = created.body;
    expect(endpoint).toEqual({
      id: expect.stringMatching(/^we_[0-9A-Z]{26}$/),
      url: 'https://hooks.example.com/payments',
      enabledEvents: ['payment.*', 'refund.succeeded'],
      description: 'orders service',
      status: 'enabled',
      createdAt: expect.any(String),
      updatedAt: endpoint.createdAt,
      secret: expect.stringMatching(/^whsec_[A-Za-z0-9_-]{43}$/),
    });

    const { secret, ...shown } = endpoint;
    const got = await req('GET', `/webhook-endpoints/${endpoint.id}`, testAuth);
    expect(got).toMatchObject({ status: 200, body: shown });
    expect(got.body).not.toHaveProperty('secret');
    const list = await req<{ webhookEndpoints: Endpoint[] }>('GET', '/webhook-endpoints', testAuth);
    expect(list.status).toBe(200);
    expect(list.body.webhookEndpoints).toContainEqual(shown);
    expect(JSON.stringify(list.body)).not.toContain(secret!);

    const patched = await req('PATCH', `/webhook-endpoints/${endpoint.id}`, testAuth, {
      url: 'https://hooks.example.com/v2',
      enabledEvents: ['*'],
      description: null,
      status: 'disabled',
    });
    expect(patched.status).toBe(200);
    expect(patched.body).toEqual({
      ...shown,
      url: 'https://hooks.example.com/v2',
      enabledEvents: ['*'],
      description: null,
      status: 'disabled',
      updatedAt: expect.any(String),
    });
    expect(Date.parse(patched.body.updatedAt)).toBeGreaterThanOrEqual(Date.parse(shown.updatedAt));
    const reEnabled = await req('PATCH', `/webhook-endpoints/${endpoint.id}`, testAuth, { status: 'enabled' });
    expect(reEnabled.body).toMatchObject({ status: 'enabled', url: 'https://hooks.example.com/v2' });

    expect(await req('DELETE', `/webhook-endpoints/${endpoint.id}`, testAuth)).toMatchObject({
      status: 200,
      body: { id: endpoint.id, deleted: true },
    });
    expect((await req('GET', `/webhook-endpoints/${endpoint.id}`, testAuth)).status).toBe(404);
    expect((await req('DELETE', `/webhook-endpoints/${endpoint.id}`, testAuth)).status).toBe(404);
    expect((await req('PATCH', `/webhook-endpoints/${endpoint.id}`, testAuth, { status: 'enabled' })).status).toBe(404);
  });

  it('the secret is stored encrypted, never in plain text', async () => {
    const { body } = await create(testAuth);
    const row = await api.orm.em.fork().findOneOrFail(WebhookEndpoint, { id: body.id }, { populate: ['merchant'] });
    expect(row.secretCiphertext).toMatch(/^v2:/);
    const rows: Array<Record<string, unknown>> = await api.orm.em
      .getConnection()
      .execute(`select * from webhook_endpoints where id = ?`, [body.id]);
    expect(JSON.stringify(rows)).not.toContain(body.secret!);
    expect(JSON.stringify(rows)).not.toContain(body.secret!.slice('whsec_'.length));
    const secrets = ProviderSecrets.fromBase64(TEST_PROVIDER_SECRETS_KEY);
    expect(revealEndpointSecrets(secrets, row).secret).toBe(body.secret);
    // Another key does not decrypt it.
    const other = ProviderSecrets.fromBase64(randomBytes(32).toString('base64'));
    expect(() => revealEndpointSecrets(other, row)).toThrow(/does not decrypt/);
  });

  it('rotate-secret: a new secret, the previous one kept for the overlap', async () => {
    const { body: created } = await create(testAuth);
    const before = Date.now();
    const rotated = await req('POST', `/webhook-endpoints/${created.id}/rotate-secret`, testAuth, { overlapHours: 2 });
    expect(rotated.status).toBe(200);
    expect(rotated.body).toMatchObject({ id: created.id, secret: expect.stringMatching(/^whsec_/) });
    expect(rotated.body.secret).not.toBe(created.secret);
    expect((await req('GET', `/webhook-endpoints/${created.id}`, testAuth)).body).not.toHaveProperty('secret');

    const secrets = ProviderSecrets.fromBase64(TEST_PROVIDER_SECRETS_KEY);
    const load = () => api.orm.em.fork().findOneOrFail(WebhookEndpoint, { id: created.id }, { populate: ['merchant'] });
    const revealed = revealEndpointSecrets(secrets, await load());
    expect(revealed).toMatchObject({ secret: rotated.body.secret, previousSecret: created.secret });
    const expiresAt = revealed.previousSecretExpiresAt!.getTime();
    expect(expiresAt).toBeGreaterThanOrEqual(before + 2 * 3_600_000);
    expect(expiresAt).toBeLessThanOrEqual(Date.now() + 2 * 3_600_000);
    expect(signingSecretsOf(revealed, new Date())).toEqual([rotated.body.secret, created.secret]);
    expect(signingSecretsOf(revealed, new Date(expiresAt))).toEqual([rotated.body.secret]);

    // The default overlap is 24 hours.
    const again = await req('POST', `/webhook-endpoints/${created.id}/rotate-secret`, testAuth, {});
    const second = revealEndpointSecrets(secrets, await load());
    expect(second).toMatchObject({ secret: again.body.secret, previousSecret: rotated.body.secret });
    expect(second.previousSecretExpiresAt!.getTime() - Date.now()).toBeGreaterThan(23.9 * 3_600_000);
    expect(second.previousSecretExpiresAt!.getTime() - Date.now()).toBeLessThanOrEqual(24 * 3_600_000);

    // 0: the previous secret stops at once.
    const now0 = await req('POST', `/webhook-endpoints/${created.id}/rotate-secret`, testAuth, { overlapHours: 0 });
    const third = revealEndpointSecrets(secrets, await load());
    expect(third).toEqual({ secret: now0.body.secret, previousSecret: null, previousSecretExpiresAt: null });
    expect(signingSecretsOf(third, new Date())).toEqual([now0.body.secret]);

    // 168 is the longest overlap.
    expect(
      (await req('POST', `/webhook-endpoints/${created.id}/rotate-secret`, testAuth, { overlapHours: 168 })).status,
    ).toBe(200);
    for (const overlapHours of [-1, 169, 1.5, '24', null]) {
      const bad = await req<ErrorBody>('POST', `/webhook-endpoints/${created.id}/rotate-secret`, testAuth, {
        overlapHours,
      });
      expect(bad.status).toBe(400);
      expect(bad.body).toMatchObject({ code: 'validation_error', details: { issues: [{ path: 'overlapHours' }] } });
    }
    const extra = await req<ErrorBody>('POST', `/webhook-endpoints/${created.id}/rotate-secret`, testAuth, {
      overlapHours: 1,
      secret: 'whsec_mine',
    });
    expect(extra).toMatchObject({ status: 400, body: { code: 'validation_error' } });
    expect(
      (await req('POST', `/webhook-endpoints/we_01ARZ3NDEKTSV4RRFFQ69G5FAV/rotate-secret`, testAuth, {})).status,
    ).toBe(404);
  });

  it('an unknown event type, a bad URL or an unknown field is 400 validation_error', async () => {
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ enabledEvents: ['payment.exploded'] }, 'enabledEvents.0'],
      [{ enabledEvents: ['payment.succeeded', 'invoice.*'] }, 'enabledEvents.1'],
      [{ enabledEvents: [] }, 'enabledEvents'],
      [{ enabledEvents: 'payment.succeeded' }, 'enabledEvents'],
      [{ url: 'ftp://hooks.example.com' }, 'url'],
      [{ url: 'not a url' }, 'url'],
      [{ description: 'x'.repeat(501) }, 'description'],
      [{ secret: 'whsec_mine' }, ''],
    ];
    for (const [body, path] of cases) {
      const res = await create(testAuth, body);
      expect({ body, status: res.status, code: (res.body as unknown as ErrorBody).code }).toEqual({
        body,
        status: 400,
        code: 'validation_error',
      });
      if (path)
        expect((res.body as unknown as ErrorBody).details.issues).toContainEqual(expect.objectContaining({ path }));
    }
    const missing = await req<ErrorBody>('POST', '/webhook-endpoints', testAuth, {});
    expect(missing.status).toBe(400);
    const { body: endpoint } = await create(testAuth);
    for (const body of [{ enabledEvents: ['nope'] }, { status: 'paused' }, { url: 'x' }, { id: 'we_x' }]) {
      const res = await req<ErrorBody>('PATCH', `/webhook-endpoints/${endpoint.id}`, testAuth, body);
      expect({ body, status: res.status, code: res.body.code }).toEqual({
        body,
        status: 400,
        code: 'validation_error',
      });
    }
  });

  it('the callback rules: private and loopback URLs are refused for live keys, taken for test keys', async () => {
    for (const url of [
      'http://127.0.0.1:8080/hook',
      'http://localhost/hook',
      'http://10.1.2.3/hook',
      'http://192.168.0.10/hook',
      'http://169.254.169.254/latest',
      'http://[::1]/hook',
    ]) {
      const refused = await create(liveAuth, { url });
      expect({ url, status: refused.status }).toEqual({ url, status: 400 });
      expect(refused.body as unknown as ErrorBody).toMatchObject({
        code: 'validation_error',
        details: { issues: [{ path: 'url', code: 'private_address' }] },
      });
      expect((await create(testAuth, { url })).status).toBe(200);
    }
    const { body: live } = await create(liveAuth, { url: 'https://hooks.example.com/live' });
    const patched = await req<ErrorBody>('PATCH', `/webhook-endpoints/${live.id}`, liveAuth, {
      url: 'http://10.0.0.1/',
    });
    expect(patched).toMatchObject({
      status: 400,
      body: { code: 'validation_error', details: { issues: [{ path: 'url' }] } },
    });
  });

  it("isolated by merchant and environment: another one's endpoint is 404", async () => {
    const { body: own } = await create(testAuth);
    for (const auth of [liveAuth, otherAuth]) {
      expect((await req('GET', `/webhook-endpoints/${own.id}`, auth)).status).toBe(404);
      expect((await req('PATCH', `/webhook-endpoints/${own.id}`, auth, { status: 'disabled' })).status).toBe(404);
      expect((await req('POST', `/webhook-endpoints/${own.id}/rotate-secret`, auth, {})).status).toBe(404);
      expect((await req('DELETE', `/webhook-endpoints/${own.id}`, auth)).status).toBe(404);
      const list = await req<{ webhookEndpoints: Endpoint[] }>('GET', '/webhook-endpoints', auth);
      expect(list.body.webhookEndpoints.map((e) => e.id)).not.toContain(own.id);
    }
    expect((await req('GET', `/webhook-endpoints/${own.id}`, testAuth)).body).toMatchObject({ status: 'enabled' });
    expect((await req('GET', '/webhook-endpoints/not-an-id', testAuth)).status).toBe(404);
  });

  it('at most 16 per merchant and environment, also when 17 are created at once', async () => {
    const merchant = await createTestMerchant(api.orm, 'Limit merchant');
    const live = await createKey(api.orm.em.fork(), merchant.merchantId, { environment: 'live', role: 'merchant' });
    const liveKey = basicAuth(live.apiKey.publicKey, live.secretKey);
    const results = await Promise.all(Array.from({ length: 17 }, () => create(merchant.auth)));
    const statuses = results.map((r) => r.status).sort();
    expect(statuses).toEqual([...Array(16).fill(200), 409]);
    const refused = results.find((r) => r.status === 409)!;
    expect(refused.body as unknown as ErrorBody).toMatchObject({
      code: 'webhook_endpoint_limit',
      details: { limit: 16 },
    });
    const list = await req<{ webhookEndpoints: Endpoint[] }>('GET', '/webhook-endpoints', merchant.auth);
    expect(list.body.webhookEndpoints).toHaveLength(16);
    expect((await create(merchant.auth)).status).toBe(409);

    // The other environment counts its own.
    expect((await create(liveKey, { url: 'https://hooks.example.com/live' })).status).toBe(200);
    // A deleted one frees a place.
    await req('DELETE', `/webhook-endpoints/${list.body.webhookEndpoints[0]!.id}`, merchant.auth);
    expect((await create(merchant.auth)).status).toBe(200);
    expect((await create(merchant.auth)).status).toBe(409);
  });
});
