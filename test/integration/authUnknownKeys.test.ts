import type { MikroORM } from '@mikro-orm/postgresql';
import { ApiKey, Merchant } from '../../src/db/entities';
import { generateKey } from '../../src/auth/secrets';
import { newId } from '../../src/ids';
import { basicAuth, createTestMerchant, openTestOrm, startTestApi, type TestApi } from '../helpers/stack';

/**
 * Unknown public keys are remembered as unknown, briefly (PRODUCT.md, "Production profile"):
 * a client repeating a key that does not exist is answered without a database lookup each time.
 * Observed from outside: a key row written right after a refusal is only seen once that
 * memory expires, and never later than the key cache TTL.
 */
describe('authentication: unknown public keys', () => {
  const TTL_MS = 1500;
  let orm: MikroORM;
  let api: TestApi;
  let merchantId: string;

  const list = (authorization: string) => fetch(`${api.baseUrl}/merchant/api-keys`, { headers: { authorization } });

  beforeAll(async () => {
    orm = await openTestOrm();
    api = await startTestApi({ orm, settings: { authCacheTtlMs: TTL_MS } });
    merchantId = (await createTestMerchant(orm, 'Unknown keys merchant')).merchantId;
  });
  afterAll(async () => {
    await api.close();
    await orm.close();
  });

  it('remembers a refused public key as unknown for at most the key cache TTL', async () => {
    const key = generateKey('test');
    const auth = basicAuth(key.publicKey, key.secretKey);
    expect((await list(auth)).status).toBe(401);

    // The key now exists (as if created by the CLI in another process).
    const em = orm.em.fork();
    em.create(ApiKey, {
      id: newId('apiKey'),
      merchant: em.getReference(Merchant, merchantId),
      publicKey: key.publicKey,
      secretHash: key.secretHash,
      environment: 'test',
      role: 'merchant',
      isActive: true,
      createdAt: new Date(),
      revokedAt: null,
      lastUsedAt: null,
    });
    await em.flush();
    const written = Date.now();

    // Still answered from memory: no lookup saw the new row.
    expect((await list(auth)).status).toBe(401);

    let status = 401;
    while (status === 401 && Date.now() - written < TTL_MS + 2000) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      status = (await list(auth)).status;
    }
    expect(status).toBe(200);
    expect(Date.now() - written).toBeLessThan(TTL_MS + 1000);
  });
});
