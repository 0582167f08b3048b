import { randomBytes } from 'node:crypto';
import type { MikroORM } from '@mikro-orm/postgresql';
import { removeProvider, setProvider, type SetProviderInput } from '../../src/domain/merchantProviders';
import {
  ProviderConfigurationError,
  ProviderRegistry,
  type ProviderSettings,
  type StripeProviderSettings,
} from '../../src/providers/registry';
import { ProviderSecrets } from '../../src/providers/secrets';
import type { PaymentProvider } from '../../src/providers/types';
import { createTestMerchant, openTestOrm, SANDBOX_API_KEY, SANDBOX_WEBHOOK_SECRET } from '../helpers/stack';

const KEY = randomBytes(32).toString('base64');
const STRIPE_BASE = 'http://127.0.0.1:12111';

/**
 * The registry against the real table: which provider a new record and an existing record get,
 * how Stripe settings reach the adapter (through the factory seam; the adapter itself is not
 * part of this test), and how long a configuration change takes to be seen.
 */
describe('provider registry (merchant_providers)', () => {
  let orm: MikroORM;
  /** What the Stripe factory was given, in order; each build returns a new adapter stand-in. */
  let built: StripeProviderSettings[];
  const stripe = (settings: StripeProviderSettings): PaymentProvider => {
    built.push(settings);
    return { name: 'stripe' } as PaymentProvider;
  };
  const registry = (options: Partial<ProviderSettings> = {}) =>
    new ProviderRegistry({
      sandboxUrl: 'http://127.0.0.1:9',
      sandboxApiKey: SANDBOX_API_KEY,
      sandboxWebhookSecret: SANDBOX_WEBHOOK_SECRET,
      timeoutMs: 1234,
      orm,
      secretsKey: KEY,
      stripeApiBase: STRIPE_BASE,
      stripe,
      cacheTtlMs: 0,
      ...options,
    });
  const configure = (input: SetProviderInput, key = KEY) =>
    setProvider(orm.em.fork(), input, ProviderSecrets.fromBase64(key));
  const merchant = async (name: string) => (await createTestMerchant(orm, name)).merchantId;

  beforeAll(async () => {
    orm = await openTestOrm();
  });
  beforeEach(() => {
    built = [];
  });
  afterAll(() => orm.close());

  it('builds the merchant Stripe adapter from its decrypted settings, for its records only', async () => {
    const a = await merchant('Registry A');
    const b = await merchant('Registry B');
    await configure({
      merchantId: a,
      environment: 'live',
      processor: 'stripe',
      secretKey: 'sk_live_registry_a',
      webhookSecret: 'whsec_registry_a',
    });
    const providers = registry();

    const live = await providers.forNewRecord(a, 'live');
    expect(live?.name).toBe('stripe');
    expect(built).toEqual([
      { secretKey: 'sk_live_registry_a', webhookSecret: 'whsec_registry_a', apiBase: STRIPE_BASE, timeoutMs: 1234 },
    ]);
    // Unchanged row: the adapter is reused, not rebuilt.
    expect(await providers.forRecord({ merchantId: a, environment: 'live', processor: 'stripe' })).toBe(live);
    expect(built).toHaveLength(1);
    expect(await providers.stripeWebhookCandidates(a)).toEqual([{ environment: 'live', provider: live }]);

    // A sandbox record is the built-in sandbox, whatever is configured.
    expect(await providers.forRecord({ merchantId: a, environment: 'live', processor: 'sandbox' })).toBe(
      providers.sandbox,
    );
    // Test keys without a configuration: the sandbox; another merchant: nothing of A's.
    expect(await providers.forNewRecord(a, 'test')).toBe(providers.sandbox);
    expect(await providers.forNewRecord(b, 'live')).toBeNull();
    expect(await providers.forNewRecord(b, 'test')).toBe(providers.sandbox);
    expect(await providers.forRecord({ merchantId: b, environment: 'live', processor: 'stripe' })).toBeNull();
    expect(await providers.forRecord({ merchantId: a, environment: 'test', processor: 'stripe' })).toBeNull();
    expect(await providers.stripeWebhookCandidates(b)).toEqual([]);
    expect(await providers.forRecord({ merchantId: a, environment: 'live', processor: 'retired' })).toBeNull();
    expect(providers.builtIn('sandbox')).toBe(providers.sandbox);
    expect(providers.builtIn('stripe')).toBeNull();
  });

  it('refuses secrets it cannot decrypt (another key, no key, a ciphertext moved to another merchant)', async () => {
    const a = await merchant('Registry wrong key');
    const b = await merchant('Registry moved ciphertext');
    await configure({ merchantId: a, environment: 'live', processor: 'stripe', secretKey: 'sk_live_secret_a' });
    await configure({ merchantId: b, environment: 'live', processor: 'stripe', secretKey: 'sk_live_secret_b' });

    const wrongKey = registry({ secretsKey: randomBytes(32).toString('base64') });
    const failure = await wrongKey.forNewRecord(a, 'live').catch((err: unknown) => err);
    expect(failure).toBeInstanceOf(ProviderConfigurationError);
    expect((failure as Error).message).not.toContain('sk_live_secret_a');
    await expect(registry({ secretsKey: undefined }).forNewRecord(a, 'live')).rejects.toThrow(
      /PROVIDER_SECRETS_KEY is not set/,
    );

    // A's ciphertext copied into B's row does not decrypt for B (it is bound to A).
    await orm.em
      .getConnection()
      .execute(
        `update merchant_providers set secret_key_ciphertext = (select secret_key_ciphertext from merchant_providers where merchant_id = ? and environment = 'live') where merchant_id = ? and environment = 'live'`,
        [a, b],
      );
    await expect(registry().forNewRecord(b, 'live')).rejects.toThrow(ProviderConfigurationError);
    expect(built).toEqual([]);
  });

  it("refuses a stored Stripe key of the other mode than its environment's (a row from before the check)", async () => {
    const a = await merchant('Registry test key for live');
    await configure({ merchantId: a, environment: 'test', processor: 'stripe', secretKey: 'sk_test_moved' });
    // Moved to live behind the CLI's back (the CLI refuses a test key for live).
    await orm.em
      .getConnection()
      .execute(`update merchant_providers set environment = 'live' where merchant_id = ? and environment = 'test'`, [
        a,
      ]);
    // Bound to (merchant, environment, field), the ciphertext no longer decrypts once moved: seal
    // a test key for live directly, as a row stored before the check would be.
    const sealed = ProviderSecrets.fromBase64(KEY).encrypt('sk_test_old_row', {
      merchantId: a,
      environment: 'live',
      field: 'secret_key',
    });
    await orm.em
      .getConnection()
      .execute(
        `update merchant_providers set secret_key_ciphertext = ? where merchant_id = ? and environment = 'live'`,
        [sealed, a],
      );
    const failure = await registry()
      .forNewRecord(a, 'live')
      .catch((err: unknown) => err);
    expect(failure).toBeInstanceOf(ProviderConfigurationError);
    expect((failure as Error).message).toMatch(/not a live-mode key/);
    expect((failure as Error).message).not.toContain('sk_test_old_row');
    expect(built).toEqual([]);
  });

  it('sees a change within the cache TTL, rebuilding the adapter only when the row changed', async () => {
    const a = await merchant('Registry cache');
    const ttl = 1500;
    const providers = registry({ cacheTtlMs: ttl });
    const later = () => new Promise((resolve) => setTimeout(resolve, ttl + 50));
    const record = { merchantId: a, environment: 'live' as const, processor: 'stripe' };
    await configure({ merchantId: a, environment: 'live', processor: 'stripe', secretKey: 'sk_live_cache' });
    const first = await providers.forRecord(record);
    expect(first?.name).toBe('stripe');

    // Within the TTL the configuration read is reused: a rotation is not seen yet.
    await configure({ merchantId: a, environment: 'live', processor: 'stripe', webhookSecret: 'whsec_rotated' });
    expect(await providers.forRecord(record)).toBe(first);
    await later();
    const rotated = await providers.forRecord(record);
    expect(rotated).not.toBe(first);
    expect(built.map((s) => [s.secretKey, s.webhookSecret])).toEqual([
      ['sk_live_cache', null],
      ['sk_live_cache', 'whsec_rotated'],
    ]);
    // Read again after the TTL, unchanged: the same adapter.
    await later();
    expect(await providers.forRecord(record)).toBe(rotated);
    expect(built).toHaveLength(2);

    // Another processor: the Stripe record has no provider any more; new records go to the sandbox.
    await configure({ merchantId: a, environment: 'live', processor: 'sandbox' });
    await later();
    expect(await providers.forRecord(record)).toBeNull();
    expect(await providers.forNewRecord(a, 'live')).toBe(providers.sandbox);

    // Removed: live has no provider (after the TTL at most).
    expect(await removeProvider(orm.em.fork(), a, 'live')).toBe(true);
    await later();
    expect(await providers.forNewRecord(a, 'live')).toBeNull();
  });
});
