import { z } from 'zod';
import type { MikroORM } from '@mikro-orm/postgresql';
import { defineRoute } from '../../src/api/routing';
import { createTestMerchant, openTestOrm, startTestApi, type TestApi, type TestMerchant } from '../helpers/stack';

/**
 * The app-wide error model: one catch point, request ids, body limits and strict bodies.
 * A probe route is mounted through the same pipeline as the product's routes.
 */
const echoRoute = defineRoute({
  method: 'post',
  path: '/_test/echo',
  operationId: 'testEcho',
  tag: 'test',
  summary: 'echo',
  body: z
    .object({
      name: z.string().min(1).max(10),
      nested: z.object({ flag: z.boolean() }).strict().optional(),
      free: z.record(z.string(), z.unknown()).optional(),
    })
    .strict(),
  response: z.object({ name: z.string() }),
  errors: [],
  handler: async ({ body }) => body,
});

const crashRoute = defineRoute({
  method: 'get',
  path: '/_test/crash',
  operationId: 'testCrash',
  tag: 'test',
  summary: 'crash',
  response: z.object({}),
  errors: [],
  handler: async () => {
    throw new Error('select * from secrets -- internal detail');
  },
});

describe('error model', () => {
  let orm: MikroORM;
  let api: TestApi;
  let merchant: TestMerchant;

  beforeAll(async () => {
    orm = await openTestOrm();
    api = await startTestApi({ orm, extraRoutes: [echoRoute, crashRoute] });
    merchant = await createTestMerchant(orm);
  });
  afterAll(async () => {
    await api.close();
    await orm.close();
  });

  const post = (body: string | Buffer, headers: Record<string, string> = {}) =>
    fetch(`${api.baseUrl}/_test/echo`, {
      method: 'POST',
      headers: { authorization: merchant.auth, 'content-type': 'application/json', ...headers },
      body,
    });

  async function expectError(res: Response, status: number, code: string) {
    expect(res.status).toBe(status);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    expect(res.headers.get('x-request-id')).toMatch(/^req_[0-9A-Z]{26}$/);
    const body = (await res.json()) as { code: string; message: string; details: Record<string, unknown> };
    expect(body).toEqual({ code, message: expect.any(String), details: expect.any(Object) });
    return body;
  }

  it('accepts a valid body', async () => {
    const res = await post(JSON.stringify({ name: 'ok', nested: { flag: true }, free: { anything: [1] } }));
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ name: 'ok', nested: { flag: true }, free: { anything: [1] } });
  });

  it('400 invalid_json for malformed JSON', async () => {
    await expectError(await post('{"name": '), 400, 'invalid_json');
  });

  it('415 for a body that is not JSON', async () => {
    const body = await expectError(
      await post('name=x', { 'content-type': 'application/x-www-form-urlencoded' }),
      415,
      'unsupported_media_type',
    );
    expect(body.details).toEqual({ contentType: 'application/x-www-form-urlencoded' });
  });

  it('a body sent to a route that takes none is ignored, whatever it holds', async () => {
    const res = await fetch(`${api.baseUrl}/subscriptions/sub_01JABCDEFGHJKMNPQRSTVWXYZ0`, {
      method: 'DELETE',
      headers: { authorization: merchant.auth, 'content-type': 'text/plain' },
      body: 'not json {',
    });
    // The route's own answer (no such subscription), not 415 or 400 for a body it does not read.
    await expectError(res, 404, 'not_found');
  });

  it('413 for a body over 1 MB', async () => {
    const big = JSON.stringify({ name: 'x', free: { blob: 'a'.repeat(1024 * 1024) } });
    await expectError(await post(big), 413, 'payload_too_large');
  });

  it('400 naming unknown fields, at every level of a strict object', async () => {
    const body = await expectError(
      await post(JSON.stringify({ name: 'x', color: 'red', nested: { flag: true, extra: 1 } })),
      400,
      'validation_error',
    );
    expect(body.details.unknownFields).toEqual(expect.arrayContaining(['color', 'nested.extra']));
    expect(body.message).toContain('color');
  });

  it('400 with a precise path for a bad field', async () => {
    const body = await expectError(await post(JSON.stringify({ name: '' })), 400, 'validation_error');
    expect(body.details.issues).toEqual([expect.objectContaining({ path: 'name', code: 'too_small' })]);
  });

  it('authenticates before reading the body', async () => {
    const res = await fetch(`${api.baseUrl}/_test/echo`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{',
    });
    await expectError(res, 401, 'unauthorized');
  });

  it('JSON 404 for an unknown route, 405 for a known route with another method', async () => {
    await expectError(await fetch(`${api.baseUrl}/no/such/route`), 404, 'not_found');
    await expectError(
      await fetch(`${api.baseUrl}/merchant/api-keys`, { method: 'DELETE', headers: { authorization: merchant.auth } }),
      405,
      'method_not_allowed',
    );
  });

  it('500 internal_error without a stack trace or internal detail', async () => {
    const res = await fetch(`${api.baseUrl}/_test/crash`, { headers: { authorization: merchant.auth } });
    const text = await res.clone().text();
    await expectError(res, 500, 'internal_error');
    expect(text).not.toMatch(/select|secrets|at .*\.ts|Error:/);
  });

  it('echoes a sane caller X-Request-Id and replaces an unsafe one', async () => {
    const ok = await fetch(`${api.baseUrl}/healthz`, { headers: { 'x-request-id': 'abc-123' } });
    expect(ok.headers.get('x-request-id')).toBe('abc-123');
    const bad = await fetch(`${api.baseUrl}/healthz`, { headers: { 'x-request-id': 'a b<script>' } });
    expect(bad.headers.get('x-request-id')).toMatch(/^req_/);
  });
});
