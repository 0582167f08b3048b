import { randomBytes } from 'node:crypto';
import type { MikroORM } from '@mikro-orm/postgresql';
import { ProviderSecrets } from '../../src/providers/secrets';
import { runCli, type CliResult } from '../helpers/cli';
import { createTestMerchant, openTestOrm } from '../helpers/stack';

const KEY = randomBytes(32).toString('base64');
const withKey = { PROVIDER_SECRETS_KEY: KEY };
const withoutKey = { PROVIDER_SECRETS_KEY: undefined };

interface Row {
  processor: string;
  secret_key_ciphertext: string | null;
  webhook_secret_ciphertext: string | null;
  created_at: string;
  updated_at: string;
}

/** PRODUCT.md, "Providers": the operator CLI's providers:* commands. */
describe('operator CLI: providers', () => {
  let orm: MikroORM;
  beforeAll(async () => {
    orm = await openTestOrm();
  });
  afterAll(() => orm.close());

  const row = async (merchantId: string, environment: string): Promise<Row | undefined> => {
    const rows: Row[] = await orm.em
      .getConnection()
      .execute('select * from merchant_providers where merchant_id = ? and environment = ?', [merchantId, environment]);
    return rows[0];
  };
  const expectNoSecret = (result: CliResult, ...secrets: string[]) => {
    for (const secret of secrets) {
      expect(result.stdout).not.toContain(secret);
      expect(result.stderr).not.toContain(secret);
    }
  };
  const providerShape = (merchantId: string, environment: string, processor: string) => ({
    merchantId,
    environment,
    processor,
    createdAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT.*Z$/),
    updatedAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT.*Z$/),
  });

  it('sets, lists and removes, encrypting the secrets and never printing them', async () => {
    const { merchantId } = await createTestMerchant(orm, 'Providers CLI');
    const secretKey = `sk_live_${randomBytes(12).toString('hex')}`;
    const webhookSecret = `whsec_${randomBytes(12).toString('hex')}`;

    const set = await runCli(
      [
        'providers:set',
        '--merchant',
        merchantId,
        '--environment',
        'live',
        '--processor',
        'stripe',
        '--secret-key',
        secretKey,
        '--webhook-secret',
        webhookSecret,
      ],
      withKey,
    );
    expect(set.code).toBe(0);
    expect(set.json).toEqual({ provider: providerShape(merchantId, 'live', 'stripe') });
    expectNoSecret(set, secretKey, webhookSecret);

    // At rest: ciphertexts only, which decrypt under the key for this merchant, environment and field.
    const stored = (await row(merchantId, 'live'))!;
    expect(JSON.stringify(stored)).not.toContain(secretKey);
    expect(JSON.stringify(stored)).not.toContain(webhookSecret);
    const secrets = ProviderSecrets.fromBase64(KEY);
    const ctx = { merchantId, environment: 'live' };
    expect(secrets.decrypt(stored.secret_key_ciphertext!, { ...ctx, field: 'secret_key' })).toBe(secretKey);
    expect(secrets.decrypt(stored.webhook_secret_ciphertext!, { ...ctx, field: 'webhook_secret' })).toBe(webhookSecret);

    const test = await runCli(
      ['providers:set', '--merchant', merchantId, '--environment', 'test', '--processor', 'sandbox'],
      withoutKey,
    );
    expect(test.code).toBe(0);
    expect(test.json).toEqual({ provider: providerShape(merchantId, 'test', 'sandbox') });

    const list = await runCli(['providers:list', '--merchant', merchantId], withKey);
    expect(list.code).toBe(0);
    expect(list.json).toEqual({
      providers: [providerShape(merchantId, 'test', 'sandbox'), providerShape(merchantId, 'live', 'stripe')],
    });
    expectNoSecret(list, secretKey, webhookSecret);

    const removed = await runCli(['providers:remove', '--merchant', merchantId, '--environment', 'live']);
    expect(removed).toMatchObject({ code: 0, json: { removed: true } });
    expect(await row(merchantId, 'live')).toBeUndefined();
    const again = await runCli(['providers:remove', '--merchant', merchantId, '--environment', 'live']);
    expect(again).toMatchObject({ code: 0, json: { removed: false } });
    const left = await runCli(['providers:list', '--merchant', merchantId]);
    expect(left.json).toEqual({ providers: [providerShape(merchantId, 'test', 'sandbox')] });
  });

  it('reads secrets given as - from standard input, a line each, so they never reach the process list', async () => {
    const merchant = await createTestMerchant(orm, 'Providers CLI stdin');
    const secretKey = `sk_live_stdin_${Date.now()}`;
    const webhookSecret = `whsec_stdin_${Date.now()}`;
    const set = await runCli(
      [
        'providers:set',
        '--merchant',
        merchant.merchantId,
        '--environment',
        'live',
        '--processor',
        'stripe',
        '--secret-key',
        '-',
        '--webhook-secret',
        '-',
      ],
      withKey,
      `${secretKey}\n${webhookSecret}\n`,
    );
    expect(set.code).toBe(0);
    expectNoSecret(set, secretKey, webhookSecret);
    const stored = (await row(merchant.merchantId, 'live'))!;
    const secrets = ProviderSecrets.fromBase64(KEY);
    const context = { merchantId: merchant.merchantId, environment: 'live' as const };
    expect(secrets.decrypt(stored.secret_key_ciphertext!, { ...context, field: 'secret_key' })).toBe(secretKey);
    expect(secrets.decrypt(stored.webhook_secret_ciphertext!, { ...context, field: 'webhook_secret' })).toBe(
      webhookSecret,
    );
    const missing = await runCli(
      [
        'providers:set',
        '--merchant',
        merchant.merchantId,
        '--environment',
        'live',
        '--processor',
        'stripe',
        '--webhook-secret',
        '-',
      ],
      withKey,
      '',
    );
    expect(missing.code).toBe(2);
    expect(missing.json.error.message).toMatch(/--webhook-secret given as - but standard input has no line/);
  });

  it('keeps an omitted secret when the processor stays, and replaces the row when it changes', async () => {
    const { merchantId } = await createTestMerchant(orm, 'Providers rotation');
    const secretKey = `sk_test_${randomBytes(12).toString('hex')}`;
    const base = ['providers:set', '--merchant', merchantId, '--environment', 'test', '--processor'];
    expect((await runCli([...base, 'stripe', '--secret-key', secretKey], withKey)).code).toBe(0);
    const first = (await row(merchantId, 'test'))!;
    expect(first.webhook_secret_ciphertext).toBeNull();

    // Rotate only the webhook secret: the secret key is kept as it was.
    const webhookSecret = `whsec_${randomBytes(12).toString('hex')}`;
    const rotated = await runCli([...base, 'stripe', '--webhook-secret', webhookSecret], withKey);
    expect(rotated.code).toBe(0);
    expectNoSecret(rotated, webhookSecret);
    const second = (await row(merchantId, 'test'))!;
    expect(second.secret_key_ciphertext).toBe(first.secret_key_ciphertext);
    expect(second.created_at).toEqual(first.created_at);
    expect(Date.parse(second.updated_at)).toBeGreaterThanOrEqual(Date.parse(first.updated_at));
    expect(
      ProviderSecrets.fromBase64(KEY).decrypt(second.webhook_secret_ciphertext!, {
        merchantId,
        environment: 'test',
        field: 'webhook_secret',
      }),
    ).toBe(webhookSecret);

    // Another processor replaces the configuration: no secret survives.
    const sandbox = await runCli([...base, 'sandbox'], withKey);
    expect(sandbox.json).toEqual({ provider: providerShape(merchantId, 'test', 'sandbox') });
    const third = (await row(merchantId, 'test'))!;
    expect(third).toMatchObject({ processor: 'sandbox', secret_key_ciphertext: null, webhook_secret_ciphertext: null });
    // ...so going back to stripe needs a secret key again.
    const bare = await runCli([...base, 'stripe'], withKey);
    expect(bare.code).toBe(2);
    expect(bare.json.error).toEqual({ code: 'usage', message: expect.stringContaining('--secret-key is required') });
  });

  it('refuses what it cannot store as asked, with a usage error and nothing written', async () => {
    const { merchantId } = await createTestMerchant(orm, 'Providers refusals');
    const secretKey = `sk_test_${randomBytes(12).toString('hex')}`;
    const set = (env: string, processor: string, ...rest: string[]) => [
      'providers:set',
      '--merchant',
      merchantId,
      '--environment',
      env,
      '--processor',
      processor,
      ...rest,
    ];
    const refusals: Array<[string[], Record<string, string | undefined>, RegExp]> = [
      [set('test', 'stripe', '--secret-key', secretKey), withoutKey, /PROVIDER_SECRETS_KEY is not set/],
      [set('live', 'stripe'), withKey, /--secret-key is required/],
      [set('test', 'sandbox', '--secret-key', secretKey), withKey, /sandbox processor takes no secrets/],
      [set('test', 'sandbox', '--webhook-secret', secretKey), withKey, /sandbox processor takes no secrets/],
      [set('test', 'stripe', '--secret-key', 'sk_live_abc'), withKey, /live Stripe key cannot serve the test/],
      [set('test', 'stripe', '--secret-key', 'rk_live_abc'), withKey, /live Stripe key cannot serve the test/],
      [set('live', 'stripe', '--secret-key', secretKey), withKey, /test Stripe key .* cannot serve the live/],
      [set('live', 'stripe', '--secret-key', 'rk_test_abc'), withKey, /test Stripe key .* cannot serve the live/],
      [set('live', 'stripe', '--secret-key', 'pk_live_abc'), withKey, /not a Stripe secret or restricted key/],
      [set('test', 'stripe', '--secret-key', 'whsec_abc'), withKey, /not a Stripe secret or restricted key/],
      [set('staging', 'sandbox'), withKey, /--environment must be one of test, live/],
      [set('live', 'adyen'), withKey, /--processor must be one of sandbox, stripe/],
      [['providers:set', '--merchant', merchantId, '--processor', 'sandbox'], withKey, /--environment is required/],
    ];
    for (const [args, env, message] of refusals) {
      const result = await runCli(args, env);
      expect({ args, code: result.code, code2: result.json.error?.code }).toEqual({ args, code: 2, code2: 'usage' });
      expect(result.json.error.message).toMatch(message);
      expectNoSecret(result, secretKey);
    }
    expect(await row(merchantId, 'test')).toBeUndefined();
    expect(await row(merchantId, 'live')).toBeUndefined();

    const unknown = 'mer_01M80J0M3NCYT03RH261Y4YJWN';
    for (const args of [
      ['providers:set', '--merchant', unknown, '--environment', 'live', '--processor', 'sandbox'],
      ['providers:list', '--merchant', unknown],
      ['providers:remove', '--merchant', unknown, '--environment', 'live'],
    ]) {
      const result = await runCli(args);
      expect(result.code).toBe(1);
      expect(result.json).toEqual({ error: { code: 'not_found', message: `Merchant ${unknown} not found.` } });
    }
  });

  it('refuses a malformed PROVIDER_SECRETS_KEY without printing it', async () => {
    const bad = randomBytes(16).toString('base64');
    const result = await runCli(['providers:list', '--merchant', 'mer_x'], { PROVIDER_SECRETS_KEY: bad });
    expect(result.code).toBe(78);
    expect(result.json.error.code).toBe('invalid_configuration');
    expect(result.json.error.message).toMatch(/PROVIDER_SECRETS_KEY: must be 32 bytes/);
    expectNoSecret(result, bad);
  });
});
