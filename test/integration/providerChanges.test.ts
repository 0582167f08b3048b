import { OutcomeHintListener } from '../../src/db/outcomeHints';
import { createKey } from '../../src/domain/merchants';
import { PROVIDER_CACHE_TTL_MS } from '../../src/providers/registry';
import { runCli } from '../helpers/cli';
import { call, eventually } from '../helpers/http';
import {
  basicAuth,
  createTestMerchant,
  startPaymentStack,
  startTestApi,
  testProviders,
  type PaymentStack,
  testLogger,
  type TestApi,
} from '../helpers/stack';
import { testStack } from '../setup/stackInfo';

/**
 * `providers:set` / `providers:remove` take effect for the next request in every API process
 * (issue 44 item 14, decision 0081). Two API processes with the production cache (15 s), each its
 * own registry and LISTEN connection, against the real PostgreSQL; the change is made by the real
 * CLI in its own process. Before, a live key kept answering 500 `provider_not_configured` for up
 * to 15 s after its merchant was configured: the cache's entry was dropped by nothing.
 */
describe('provider changes reach every API process at once', () => {
  let stack: PaymentStack;
  let second: TestApi;
  let seq = 0;
  const ext = () => `provider-change-${Date.now()}-${++seq}`;
  const body = () => ({ amount: 12.34, currency: 'usd', externalId: ext(), customer: { email: 'b@example.com' } });

  beforeAll(async () => {
    stack = await startPaymentStack('provider-changes', {}, 1500, { cacheTtlMs: PROVIDER_CACHE_TTL_MS });
    second = await startTestApi({
      orm: stack.orm,
      providers: testProviders(stack.orm, stack.sandboxUrl, 1500, { cacheTtlMs: PROVIDER_CACHE_TTL_MS }),
      settings: { taskQueue: stack.taskQueue },
    });
  });
  afterAll(async () => {
    await second.close();
    await stack.close();
  });

  it('a live key answers with the provider on the very next request after providers:set, on either process', async () => {
    const merchant = await createTestMerchant(stack.orm, 'Configured later');
    const live = await createKey(stack.orm.em.fork(), merchant.merchantId, { environment: 'live', role: 'merchant' });
    const auth = basicAuth(live.apiKey.publicKey, live.secretKey);
    const apis = [stack.api.baseUrl, second.baseUrl];

    // Both processes resolve (and cache) "no live provider".
    for (const api of apis) {
      const res = await call(api, 'POST', '/payments', auth, body());
      expect(res.status).toBe(500);
      expect(res.body).toMatchObject({ code: 'provider_not_configured' });
    }

    const set = await runCli([
      'providers:set',
      '--merchant',
      merchant.merchantId,
      '--environment',
      'live',
      '--processor',
      'sandbox',
    ]);
    expect(set.code).toBe(0);

    for (const api of apis) {
      const res = await call<{ status: string; redirectUrl: string }>(api, 'POST', '/payments', auth, body());
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ status: 'created', redirectUrl: expect.stringContaining(stack.sandboxUrl) });
    }

    // And removed: the next request on either process no longer finds it.
    const removed = await runCli(['providers:remove', '--merchant', merchant.merchantId, '--environment', 'live']);
    expect(removed.json).toEqual({ removed: true });
    for (const api of apis) {
      const res = await call(api, 'POST', '/payments', auth, body());
      expect(res.status).toBe(500);
      expect(res.body).toMatchObject({ code: 'provider_not_configured' });
    }
  });

  it("reaches a worker's registry at once too (its own LISTEN connection, provider changes only)", async () => {
    const merchant = await createTestMerchant(stack.orm, 'Worker registry');
    const registry = testProviders(stack.orm, stack.sandboxUrl, 1500, { cacheTtlMs: PROVIDER_CACHE_TTL_MS });
    const listener = OutcomeHintListener.startProviderChanges(testStack().databaseUrl, testLogger, {
      changed: (merchantId, environment) => registry.forget(merchantId, environment),
      resync: () => registry.forgetAll(),
    });
    try {
      await eventually(
        () => Promise.resolve(listener.listening),
        (listening) => listening,
      );
      expect(await registry.forNewRecord(merchant.merchantId, 'live')).toBeNull(); // cached: none
      const set = await runCli([
        'providers:set',
        '--merchant',
        merchant.merchantId,
        '--environment',
        'live',
        '--processor',
        'sandbox',
      ]);
      expect(set.code).toBe(0);
      expect(await registry.forNewRecord(merchant.merchantId, 'live')).toBe(registry.sandbox);
    } finally {
      await listener.close();
    }
  });
});
