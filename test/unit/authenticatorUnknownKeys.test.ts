import type { EntityManager } from '@mikro-orm/postgresql';
import { Authenticator } from '../../src/auth/authenticator';
import { createLogger } from '../../src/logger';
import { AppError } from '../../src/errors';

/**
 * The unknown-key memory of the Authenticator, with a fake connection that knows no key and
 * counts lookups (the real database path is test/integration/authUnknownKeys.test.ts).
 */
function authenticatorWithCountingDb(ttlMs: number) {
  const lookups: string[] = [];
  const em = {
    getConnection: () => ({
      execute: async (_sql: string, params: unknown[]) => {
        lookups.push(String(params[0]));
        return [];
      },
    }),
  } as unknown as EntityManager;
  return { auth: new Authenticator(em, ttlMs, createLogger('silent', 'test')), lookups };
}

const header = (publicKey: string) =>
  `Basic ${Buffer.from(`${publicKey}:sk_test_${'x'.repeat(43)}`).toString('base64')}`;

async function refused(auth: Authenticator, publicKey: string): Promise<void> {
  await expect(auth.authenticate(header(publicKey))).rejects.toBeInstanceOf(AppError);
}

describe('Authenticator: unknown public keys', () => {
  it('looks a repeated unknown key up once within its memory', async () => {
    const { auth, lookups } = authenticatorWithCountingDb(5000);
    for (let i = 0; i < 50; i++) await refused(auth, 'pk_test_missing');
    expect(lookups).toEqual(['pk_test_missing']);
  });

  it('remembers nothing when the key cache is off (TTL 0)', async () => {
    const { auth, lookups } = authenticatorWithCountingDb(0);
    for (let i = 0; i < 3; i++) await refused(auth, 'pk_test_missing');
    expect(lookups).toHaveLength(3);
  });

  it('stays bounded under a flood of distinct keys: the oldest are forgotten first', async () => {
    const { auth, lookups } = authenticatorWithCountingDb(5000);
    for (let i = 0; i <= 10_000; i++) await refused(auth, `pk_test_${i}`);
    expect(lookups).toHaveLength(10_001);
    await refused(auth, 'pk_test_0'); // evicted: looked up again
    await refused(auth, 'pk_test_10000'); // still remembered
    expect(lookups.slice(10_001)).toEqual(['pk_test_0']);
  });
});
