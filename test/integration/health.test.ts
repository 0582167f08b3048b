import { startTestApi, type TestApi } from '../helpers/stack';
import { startTcpProxy, type TcpProxy } from '../helpers/tcpProxy';
import { testStack } from '../setup/stackInfo';

describe('health, readiness and the OpenAPI document (no auth)', () => {
  let proxy: TcpProxy;
  let api: TestApi;

  beforeAll(async () => {
    // The app reaches PostgreSQL through a proxy that the test can cut.
    const db = new URL(testStack().databaseUrl);
    proxy = await startTcpProxy(db.hostname, Number(db.port));
    db.port = String(proxy.port);
    api = await startTestApi({ databaseUrl: db.toString() });
  });
  afterAll(async () => {
    await api.close();
    await proxy.close();
  });

  it('GET /healthz answers while the process is up', async () => {
    const res = await fetch(`${api.baseUrl}/healthz`);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ status: 'ok' });
  });

  it('GET /openapi.json is OpenAPI 3.1 generated from the route schemas', async () => {
    const res = await fetch(`${api.baseUrl}/openapi.json`);
    expect(res.status).toBe(200);
    const doc = (await res.json()) as {
      openapi: string;
      paths: Record<string, Record<string, { responses: Record<string, unknown> }>>;
      components: { schemas: Record<string, { properties?: Record<string, unknown> }> };
    };
    expect(doc.openapi).toBe('3.1.0');
    const op = doc.paths['/merchant/api-keys']?.get;
    expect(Object.keys(op?.responses ?? {}).sort()).toEqual(['200', '401', '403', '429', '503']);
    // Any route answers 503 `service_unavailable` while PostgreSQL or Temporal is down; a POST's
    // 503 also carries its provider's code.
    expect(op?.responses['503']).toMatchObject({ description: 'Service unavailable: `service_unavailable`' });
    expect(doc.paths['/payments']?.post?.responses['503']).toMatchObject({
      description: 'Service unavailable: `provider_unavailable`, `service_unavailable`',
      headers: { 'Retry-After': expect.any(Object) },
    });
    expect(Object.keys(doc.components.schemas.ApiKey?.properties ?? {})).toEqual(
      expect.arrayContaining(['id', 'publicKey', 'environment', 'isActive', 'createdAt', 'revokedAt']),
    );
    expect(JSON.stringify(doc.components.schemas.ApiKey)).not.toMatch(/secret"/i);
    expect(Object.keys(doc.components.schemas.Error?.properties ?? {}).sort()).toEqual(['code', 'details', 'message']);
  });

  it('GET /readyz is 200 with both dependencies up, 503 once PostgreSQL is unreachable', async () => {
    const up = await fetch(`${api.baseUrl}/readyz`);
    expect(up.status).toBe(200);
    expect(await up.json()).toEqual({ status: 'ok', checks: { database: 'ok', temporal: 'ok' } });

    await proxy.cut();
    const down = await fetch(`${api.baseUrl}/readyz`);
    expect(down.status).toBe(503);
    const body = (await down.json()) as { code: string; details: { checks: Record<string, string> } };
    expect(body.code).toBe('not_ready');
    expect(body.details.checks.database).toMatch(/^unreachable/);
    expect(body.details.checks.temporal).toBe('ok');
    expect(JSON.stringify(body)).not.toMatch(/postgres:\/\/|password/);
  });
});
