import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ConfigError, devSecretsKeyPath, loadConfig } from '../../src/config';
import {
  ProviderSecretError,
  ProviderSecrets,
  ciphertextKeyId,
  decodeSecretsKey,
  secretsKeyId,
  type ProviderSecretContext,
} from '../../src/providers/secrets';

const key = randomBytes(32);
const secrets = new ProviderSecrets(key);
const ctx: ProviderSecretContext = { merchantId: 'mer_A', environment: 'live', field: 'secret_key' };
const PLAIN = 'sk_live_51Hplaintextthatmustnotshow';

/** Replaces one base64 part of `v2:<key id>:<iv>:<tag>:<ciphertext>` with the same bytes, one bit flipped. */
function flip(stored: string, part: 1 | 2 | 3): string {
  const parts = stored.split(':').slice(1);
  const bytes = Buffer.from(parts[part]!, 'base64');
  bytes[0]! ^= 0x01;
  parts[part] = bytes.toString('base64');
  return ['v2', ...parts].join(':');
}

describe('provider secrets (AES-256-GCM)', () => {
  it('round-trips, with a versioned text that does not contain the secret', () => {
    const stored = secrets.encrypt(PLAIN, ctx);
    expect(stored).toMatch(/^v2:[0-9a-f]{8}:[A-Za-z0-9+/=]+:[A-Za-z0-9+/=]+:[A-Za-z0-9+/=]+$/);
    expect(stored).not.toContain(PLAIN);
    expect(stored).not.toContain(Buffer.from(PLAIN).toString('base64'));
    expect(secrets.decrypt(stored, ctx)).toBe(PLAIN);
    expect(secrets.decrypt(secrets.encrypt('', ctx), ctx)).toBe('');
  });

  it('uses a fresh 12-byte IV each time', () => {
    const a = secrets.encrypt(PLAIN, ctx).split(':').slice(1);
    const b = secrets.encrypt(PLAIN, ctx).split(':').slice(1);
    expect(Buffer.from(a[1]!, 'base64')).toHaveLength(12);
    expect(Buffer.from(a[2]!, 'base64')).toHaveLength(16);
    expect(a[1]).not.toBe(b[1]);
    expect(a[3]).not.toBe(b[3]);
  });

  it.each([
    ['the IV', 1],
    ['the tag', 2],
    ['the ciphertext', 3],
  ] as const)('refuses a text with %s altered', (_what, part) => {
    expect(() => secrets.decrypt(flip(secrets.encrypt(PLAIN, ctx), part), ctx)).toThrow(ProviderSecretError);
  });

  it.each([
    ['another merchant', { ...ctx, merchantId: 'mer_B' }],
    ['another environment', { ...ctx, environment: 'test' }],
    ['another field', { ...ctx, field: 'webhook_secret' }],
  ] as const)('does not decrypt for %s (the AAD binds it)', (_what, other) => {
    const stored = secrets.encrypt(PLAIN, ctx);
    expect(() => secrets.decrypt(stored, other)).toThrow(ProviderSecretError);
  });

  it('does not decrypt under another key, and never says the secret', () => {
    const stored = secrets.encrypt(PLAIN, ctx);
    let caught: unknown;
    try {
      new ProviderSecrets(randomBytes(32)).decrypt(stored, ctx);
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(ProviderSecretError);
    expect(String((caught as Error).message)).not.toContain(PLAIN);
  });

  it.each(['', 'v2:a:b:c', 'v2:00000000:AAAA:AAAA:AAAA', 'v1:only:three', 'not a ciphertext', 'v1:AAAA:AAAA:AAAA'])(
    'refuses a malformed stored text %j',
    (stored) => {
      expect(() => secrets.decrypt(stored, ctx)).toThrow(ProviderSecretError);
    },
  );

  it('takes a 32-byte key only', () => {
    expect(decodeSecretsKey(key.toString('base64'))).toEqual(key);
    expect(() => new ProviderSecrets(randomBytes(16))).toThrow(ProviderSecretError);
    expect(() => decodeSecretsKey(randomBytes(31).toString('base64'))).toThrow(/32 bytes/);
    expect(() => decodeSecretsKey('not base64!')).toThrow(/base64/);
  });
});

describe('PROVIDER_SECRETS_KEY and STRIPE_API_BASE in the configuration', () => {
  const base = { DATA_DIR: '/tmp/nowhere-config-test' };

  it('are optional, with Stripe API as the default base', () => {
    const config = loadConfig(base);
    expect(config.PROVIDER_SECRETS_KEY).toBeUndefined();
    expect(config.STRIPE_API_BASE).toBe('https://api.stripe.com');
  });

  it("outside production, takes the key npm start keeps in DATA_DIR; production only the environment's", () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'dev-secrets-key-'));
    try {
      const kept = randomBytes(32).toString('base64');
      fs.writeFileSync(devSecretsKeyPath(dataDir), kept);
      expect(loadConfig({ DATA_DIR: dataDir }).PROVIDER_SECRETS_KEY).toBe(kept);
      const explicit = randomBytes(32).toString('base64');
      expect(loadConfig({ DATA_DIR: dataDir, PROVIDER_SECRETS_KEY: explicit }).PROVIDER_SECRETS_KEY).toBe(explicit);
      const production = {
        DATA_DIR: dataDir,
        NODE_ENV: 'production',
        SANDBOX_API_KEY: `sk_sandbox_${randomBytes(24).toString('base64url')}`,
        SANDBOX_WEBHOOK_SECRET: `whsec_${randomBytes(24).toString('base64url')}`,
        SANDBOX_ADMIN_TOKEN: randomBytes(24).toString('base64url'),
        DATABASE_URL: 'postgres://u:p@db:5432/payments',
        TEMPORAL_ADDRESS: 'temporal:7233',
        PUBLIC_BASE_URL: 'https://pay.example.com',
        CURSOR_SECRET: 'a-real-cursor-secret-of-at-least-32-characters',
        TEMPORAL_PAYLOAD_KEYS: `k1:${randomBytes(32).toString('base64')}`,
      };
      // Production never takes the kept key: without its own it refuses to start (decision 0067).
      expect(() => loadConfig(production)).toThrow(/\n {2}PROVIDER_SECRETS_KEY: required in production/);
      expect(loadConfig({ ...production, PROVIDER_SECRETS_KEY: explicit }).PROVIDER_SECRETS_KEY).toBe(explicit);
    } finally {
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('accepts a 32-byte base64 key and a URL', () => {
    const value = randomBytes(32).toString('base64');
    const config = loadConfig({ ...base, PROVIDER_SECRETS_KEY: value, STRIPE_API_BASE: 'http://127.0.0.1:12111' });
    expect(config.PROVIDER_SECRETS_KEY).toBe(value);
    expect(config.STRIPE_API_BASE).toBe('http://127.0.0.1:12111');
  });

  it.each([
    ['a short key', randomBytes(16).toString('base64'), /decodes to 16 bytes/],
    ['a long key', randomBytes(48).toString('base64'), /decodes to 48 bytes/],
    ['not base64', 'this is not a key!', /base64/],
  ])('refuses %s, naming the variable but not the value', (_what, value, reason) => {
    let caught: unknown;
    try {
      loadConfig({ ...base, PROVIDER_SECRETS_KEY: value });
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(ConfigError);
    const message = (caught as Error).message;
    expect(message).toMatch(/^Invalid configuration:\n {2}PROVIDER_SECRETS_KEY: /);
    expect(message).toMatch(reason);
    expect(message).not.toContain(value);
  });

  it('refuses a STRIPE_API_BASE that is not an http(s) URL', () => {
    expect(() => loadConfig({ ...base, STRIPE_API_BASE: 'stripe' })).toThrow(/STRIPE_API_BASE/);
    expect(() => loadConfig({ ...base, STRIPE_API_BASE: 'ftp://x.example' })).toThrow(/STRIPE_API_BASE/);
  });
});

describe('key rotation (decision 0080)', () => {
  const keyA = randomBytes(32);
  const keyB = randomBytes(32);
  const underA = new ProviderSecrets(keyA);
  const rotated = ProviderSecrets.fromBase64(keyB.toString('base64'), ` ${keyA.toString('base64')} ,`);
  const onlyB = new ProviderSecrets(keyB);

  /** A ciphertext in the format before key ids (`v1:<iv>:<tag>:<ciphertext>`), sealed under `k`. */
  function legacy(k: Buffer): string {
    const [, , ...rest] = new ProviderSecrets(k).encrypt(PLAIN, ctx).split(':');
    return ['v1', ...rest].join(':');
  }

  it('carries the key id of the key that sealed it, never the key', () => {
    const stored = underA.encrypt(PLAIN, ctx);
    expect(ciphertextKeyId(stored)).toBe(secretsKeyId(keyA));
    expect(stored).not.toContain(keyA.toString('base64'));
    expect(rotated.keyId).toBe(secretsKeyId(keyB));
    expect(ciphertextKeyId(rotated.encrypt(PLAIN, ctx))).toBe(secretsKeyId(keyB));
  });

  it('decrypts under a previous key, and re-sealing moves it to the current one', () => {
    const stored = underA.encrypt(PLAIN, ctx);
    expect(rotated.isCurrent(stored)).toBe(false);
    expect(rotated.decrypt(stored, ctx)).toBe(PLAIN);
    const resealed = rotated.encrypt(rotated.decrypt(stored, ctx), ctx);
    expect(rotated.isCurrent(resealed)).toBe(true);
    expect(onlyB.decrypt(resealed, ctx)).toBe(PLAIN);
  });

  it('decrypts a ciphertext without a key id under the current key, then the previous ones', () => {
    expect(rotated.decrypt(legacy(keyB), ctx)).toBe(PLAIN);
    expect(rotated.decrypt(legacy(keyA), ctx)).toBe(PLAIN);
    expect(() => onlyB.decrypt(legacy(keyA), ctx)).toThrow(ProviderSecretError);
  });

  it('names the unknown key id, never the secret or a key', () => {
    const stored = underA.encrypt(PLAIN, ctx);
    let caught: unknown;
    try {
      onlyB.decrypt(stored, ctx);
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(ProviderSecretError);
    const message = (caught as Error).message;
    expect(message).toContain(`key id ${secretsKeyId(keyA)}`);
    expect(message).not.toContain(PLAIN);
    expect(message).not.toContain(keyA.toString('base64'));
    expect(message).not.toContain(keyB.toString('base64'));
  });

  it('refuses a malformed previous key, naming its position only', () => {
    const bad = randomBytes(16).toString('base64');
    expect(() => ProviderSecrets.fromBase64(keyB.toString('base64'), `${keyA.toString('base64')},${bad}`)).toThrow(
      /PROVIDER_SECRETS_PREVIOUS_KEYS key 2 must be 32 bytes/,
    );
  });
});

describe('PROVIDER_SECRETS_PREVIOUS_KEYS in the configuration', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'prev-keys-'));
  const env = { NODE_ENV: 'development', DATA_DIR: dir, PROVIDER_SECRETS_KEY: randomBytes(32).toString('base64') };

  it('accepts comma-separated 32-byte base64 keys', () => {
    const previous = `${randomBytes(32).toString('base64')},${randomBytes(32).toString('base64')}`;
    expect(loadConfig({ ...env, PROVIDER_SECRETS_PREVIOUS_KEYS: previous }).PROVIDER_SECRETS_PREVIOUS_KEYS).toBe(
      previous,
    );
  });

  it('refuses a malformed one, naming its position but not the value', () => {
    const bad = randomBytes(20).toString('base64');
    let caught: unknown;
    try {
      loadConfig({ ...env, PROVIDER_SECRETS_PREVIOUS_KEYS: `${randomBytes(32).toString('base64')},${bad}` });
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(ConfigError);
    expect((caught as Error).message).toMatch(/PROVIDER_SECRETS_PREVIOUS_KEYS: key 2 must be 32 bytes/);
    expect((caught as Error).message).not.toContain(bad);
  });
});
