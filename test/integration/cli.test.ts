import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import type { MikroORM } from '@mikro-orm/postgresql';
import { basicAuth, openTestOrm, startTestApi, type TestApi } from '../helpers/stack';
import { testStack } from '../setup/stackInfo';

const ROOT = path.resolve(__dirname, '../..');

/** Runs the real operator CLI as a separate process, as an operator would. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- CLI output is checked field by field below
async function cli(...args: string[]): Promise<{ code: number; json: Record<string, any> }> {
  try {
    const { stdout } = await promisify(execFile)(
      process.execPath,
      ['--import', 'tsx', 'src/cli/index.ts', ...args, '--json'],
      {
        cwd: ROOT,
        env: { ...process.env, DATABASE_URL: testStack().databaseUrl, LOG_LEVEL: 'silent' },
      },
    );
    return { code: 0, json: JSON.parse(stdout) };
  } catch (err) {
    const e = err as { code: number; stdout: string };
    return { code: e.code, json: JSON.parse(e.stdout) };
  }
}

describe('operator CLI (--json)', () => {
  let orm: MikroORM;
  let api: TestApi;

  beforeAll(async () => {
    orm = await openTestOrm();
    api = await startTestApi({ orm, settings: { authCacheTtlMs: 0 } });
  });
  afterAll(async () => {
    await api.close();
    await orm.close();
  });

  const listKeys = (auth: string) => fetch(`${api.baseUrl}/merchant/api-keys`, { headers: { authorization: auth } });

  it('creates a merchant with a first test key, manages keys and status', async () => {
    const created = await cli('merchants:create', '--name', 'CLI Shop', '--email', 'ops@cli.shop');
    expect(created.code).toBe(0);
    expect(created.json).toEqual({
      merchant: {
        id: expect.stringMatching(/^mer_/),
        name: 'CLI Shop',
        email: 'ops@cli.shop',
        status: 'active',
        createdAt: expect.any(String),
      },
      apiKey: {
        id: expect.stringMatching(/^key_/),
        publicKey: expect.stringMatching(/^pk_test_/),
        secretKey: expect.stringMatching(/^sk_test_[A-Za-z0-9_-]{43}$/),
        environment: 'test',
        role: 'merchant',
      },
    });
    const merchantId = created.json.merchant.id as string;
    const auth = basicAuth(created.json.apiKey.publicKey, created.json.apiKey.secretKey);
    expect((await listKeys(auth)).status).toBe(200);

    const live = await cli('keys:create', '--merchant', merchantId, '--environment', 'live');
    expect(live.code).toBe(0);
    expect(live.json.apiKey).toMatchObject({
      publicKey: expect.stringMatching(/^pk_live_/),
      environment: 'live',
      role: 'merchant',
    });
    const admin = await cli('keys:create', '--merchant', merchantId, '--role', 'admin');
    expect(admin.json.apiKey).toMatchObject({ environment: 'test', role: 'admin' });
    expect((await listKeys(basicAuth(admin.json.apiKey.publicKey, admin.json.apiKey.secretKey))).status).toBe(403);

    const revoked = await cli('keys:revoke', live.json.apiKey.id);
    expect(revoked.code).toBe(0);
    expect(revoked.json.apiKey).toMatchObject({
      id: live.json.apiKey.id,
      isActive: false,
      revokedAt: expect.any(String),
    });
    expect(JSON.stringify(revoked.json)).not.toContain('secret');
    expect((await listKeys(basicAuth(live.json.apiKey.publicKey, live.json.apiKey.secretKey))).status).toBe(401);

    const off = await cli('merchants:deactivate', merchantId);
    expect(off.json.merchant).toMatchObject({ id: merchantId, status: 'inactive' });
    expect((await listKeys(auth)).status).toBe(403);
    const on = await cli('merchants:activate', merchantId);
    expect(on.json.merchant).toMatchObject({ id: merchantId, status: 'active' });
    expect((await listKeys(auth)).status).toBe(200);
  });

  it("sets and clears a merchant's contact email (decision 0066)", async () => {
    const created = await cli('merchants:create', '--name', 'Email Shop');
    expect(created.json.merchant.email).toBeNull();
    const merchantId = created.json.merchant.id as string;
    const set = await cli('merchants:email', merchantId, '--email', 'ops@email.shop');
    expect(set).toMatchObject({ code: 0, json: { merchant: { id: merchantId, email: 'ops@email.shop' } } });
    const cleared = await cli('merchants:email', merchantId, '--clear');
    expect(cleared.json.merchant).toMatchObject({ id: merchantId, email: null });
    for (const bad of [['--email', 'not an address'], [], ['--email', 'a@b.c', '--clear']]) {
      const refused = await cli('merchants:email', merchantId, ...bad);
      expect(refused.code).toBe(2);
      expect(refused.json.error.code).toBe('usage');
    }
    expect((await cli('merchants:email', 'mer_01M80J0M3NCYT03RH261Y4YJWN', '--email', 'a@b.c')).json.error.code).toBe(
      'not_found',
    );
  });

  it('answers errors as JSON with a non-zero exit code', async () => {
    const missing = await cli('keys:revoke', 'key_01M80J0M3NCYT03RH261Y4YJWN');
    expect(missing.code).toBe(1);
    expect(missing.json).toEqual({ error: { code: 'not_found', message: expect.any(String) } });
    const usage = await cli('keys:create', '--merchant', 'mer_x', '--environment', 'staging');
    expect(usage.code).toBe(2);
    expect(usage.json.error.code).toBe('usage');
  });
});
