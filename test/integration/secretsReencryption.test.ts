import { randomBytes } from 'node:crypto';
import type { MikroORM } from '@mikro-orm/postgresql';
import { ciphertextKeyId, decodeSecretsKey, secretsKeyId } from '../../src/providers/secrets';
import { runCli } from '../helpers/cli';
import { createTestMerchant, openTestOrm, type TestMerchant } from '../helpers/stack';

/**
 * Issue 44, item 12 (decision 0080): PROVIDER_SECRETS_KEY rotates. Secrets sealed under the old
 * key keep opening while it is listed in PROVIDER_SECRETS_PREVIOUS_KEYS; `secrets:reencrypt`
 * (the real CLI, a separate process) moves every row to the new key, idempotently; then the old
 * key can go. A row no listed key opens is reported by its key id and left alone.
 */
describe('rotating PROVIDER_SECRETS_KEY', () => {
  let orm: MikroORM;
  let merchant: TestMerchant;
  const keyA = randomBytes(32).toString('base64');
  const keyB = randomBytes(32).toString('base64');
  const keyC = randomBytes(32).toString('base64');
  const idOf = (key: string) => secretsKeyId(decodeSecretsKey(key));

  beforeAll(async () => {
    orm = await openTestOrm();
    merchant = await createTestMerchant(orm, 'Key rotation merchant');
  });
  afterAll(() => orm.close());

  /** The key ids of this merchant's sealed columns. */
  async function storedKeyIds(merchantId: string): Promise<string[]> {
    const rows: Array<{ sealed: string }> = await orm.em.fork().execute(
      `select secret_key_ciphertext as sealed from merchant_providers where merchant_id = ? and secret_key_ciphertext is not null
       union all select webhook_secret_ciphertext from merchant_providers where merchant_id = ? and webhook_secret_ciphertext is not null
       union all select secret from merchant_signing_secrets where merchant_id = ?`,
      [merchantId, merchantId, merchantId],
    );
    return rows.map((r) => ciphertextKeyId(r.sealed) ?? 'none').sort();
  }

  const reencrypt = (env: Record<string, string | undefined>, ...args: string[]) =>
    runCli(['secrets:reencrypt', ...args], env);

  it('keeps reading under the previous key, re-seals every row under the new one, then needs only it', async () => {
    const underA = { PROVIDER_SECRETS_KEY: keyA, PROVIDER_SECRETS_PREVIOUS_KEYS: undefined };
    const set = await runCli(
      [
        'providers:set',
        '--merchant',
        merchant.merchantId,
        '--environment',
        'test',
        '--processor',
        'stripe',
        '--secret-key',
        'sk_test_rotation123',
        '--webhook-secret',
        'whsec_rotation',
      ],
      underA,
    );
    expect(set.code).toBe(0);
    const signing = await runCli(['webhooks:secret', '--merchant', merchant.merchantId], underA);
    expect(signing.code).toBe(0);
    const secret = signing.json.secret as string;
    expect(await storedKeyIds(merchant.merchantId)).toEqual([idOf(keyA), idOf(keyA), idOf(keyA)]);

    // The new key is current; the old one still opens what it sealed.
    const rotated = { PROVIDER_SECRETS_KEY: keyB, PROVIDER_SECRETS_PREVIOUS_KEYS: keyA };
    expect((await runCli(['webhooks:secret', '--merchant', merchant.merchantId], rotated)).json.secret).toBe(secret);
    // Without the old key listed, the old rows do not open: the error names the key id, never a secret.
    const withoutA = await runCli(['webhooks:secret', '--merchant', merchant.merchantId], {
      PROVIDER_SECRETS_KEY: keyB,
      PROVIDER_SECRETS_PREVIOUS_KEYS: undefined,
    });
    expect(withoutA.code).not.toBe(0);
    expect(withoutA.json.error.message).toContain(idOf(keyA));
    expect(withoutA.stdout).not.toContain(secret);

    // A dry run counts and writes nothing.
    const dry = await reencrypt(rotated, '--dry-run');
    expect(dry.code).toBe(0);
    expect(dry.json.reencryption).toMatchObject({ dryRun: true, keyId: idOf(keyB) });
    expect(dry.json.reencryption.columns['merchant_providers.secret_key_ciphertext'].resealed).toBeGreaterThanOrEqual(
      1,
    );
    expect(await storedKeyIds(merchant.merchantId)).toEqual([idOf(keyA), idOf(keyA), idOf(keyA)]);

    const done = await reencrypt(rotated);
    expect(done.code).toBe(0);
    const columns = done.json.reencryption.columns as Record<string, { resealed: number; current: number }>;
    expect(Object.keys(columns).sort()).toEqual([
      'merchant_providers.secret_key_ciphertext',
      'merchant_providers.webhook_secret_ciphertext',
      'merchant_signing_secrets.previous_secret',
      'merchant_signing_secrets.secret',
      'webhook_endpoints.previous_secret_ciphertext',
      'webhook_endpoints.secret_ciphertext',
    ]);
    expect(await storedKeyIds(merchant.merchantId)).toEqual([idOf(keyB), idOf(keyB), idOf(keyB)]);
    expect(done.stdout).not.toContain(secret);

    // Again: nothing left to move (this merchant's rows are current).
    const again = await reencrypt(rotated);
    expect(again.json.reencryption.columns['merchant_signing_secrets.secret'].resealed).toBe(0);

    // The old key can go: the same secret, under the new key alone.
    const onlyB = { PROVIDER_SECRETS_KEY: keyB, PROVIDER_SECRETS_PREVIOUS_KEYS: undefined };
    expect((await runCli(['webhooks:secret', '--merchant', merchant.merchantId], onlyB)).json.secret).toBe(secret);
  });

  it('reports a row sealed under a key nobody lists by its key id and leaves it', async () => {
    const other = await createTestMerchant(orm, 'Unknown key merchant');
    const sealedUnderC = await runCli(['webhooks:secret', '--merchant', other.merchantId], {
      PROVIDER_SECRETS_KEY: keyC,
      PROVIDER_SECRETS_PREVIOUS_KEYS: undefined,
    });
    expect(sealedUnderC.code).toBe(0);
    const report = await reencrypt({ PROVIDER_SECRETS_KEY: keyB, PROVIDER_SECRETS_PREVIOUS_KEYS: keyA });
    expect(report.code).toBe(0);
    expect(
      report.json.reencryption.columns['merchant_signing_secrets.secret'].unreadable[idOf(keyC)],
    ).toBeGreaterThanOrEqual(1);
    expect(await storedKeyIds(other.merchantId)).toEqual([idOf(keyC)]);
  });
});
