import type { MikroORM } from '@mikro-orm/postgresql';
import { signWebhook } from '../../dev/sandbox/webhooks';
import { freeLoopbackPort } from '../../dev/infra/ports';
import { newId } from '../../src/ids';
import { openTestOrm, SANDBOX_WEBHOOK_SECRET, startTestApi, type TestApi } from '../helpers/stack';

/**
 * The routes without authentication (issue 44 item 14, decision 0081): provider webhooks check
 * the ids in their path before anything reads the database, and `/readyz` and refused webhooks
 * are limited per client address (the address TRUST_PROXY_HOPS vouches for), in memory.
 */
describe('unauthenticated routes', () => {
  describe('with the database unreachable', () => {
    let orm: MikroORM;
    let api: TestApi;
    beforeAll(async () => {
      // Nothing listens there: any query fails (503), so an answer that is not a 503 read nothing.
      orm = await openTestOrm(`postgres://postgres:postgres@127.0.0.1:${await freeLoopbackPort()}/nothing`);
      api = await startTestApi({ orm });
    });
    afterAll(async () => {
      await api.close();
      await orm.close();
    });

    const stripeHook = (merchantId: string) =>
      fetch(`${api.baseUrl}/webhooks/stripe/${encodeURIComponent(merchantId)}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'stripe-signature': 't=1,v1=00' },
        body: '{}',
      });

    it.each([
      'not-a-merchant',
      'mer_123',
      "mer_' or 1=1 --",
      `mer_${'Z'.repeat(200)}`,
      'pay_01J00000000000000000000000',
    ])('answers 404 for the malformed merchant id %j without reading the database', async (merchantId) => {
      const res = await stripeHook(merchantId);
      expect(res.status).toBe(404);
      expect(await res.json()).toEqual({ code: 'not_found', message: expect.any(String), details: {} });
    });

    it('a well-formed id does read it (so the answers above did not): 503', async () => {
      const res = await stripeHook(newId('merchant'));
      expect(res.status).toBe(503);
    });
  });

  describe('per client address', () => {
    let api: TestApi;
    const rule = { unauthenticatedPerSecond: 0.2, unauthenticatedBurst: 3 };
    beforeAll(async () => {
      api = await startTestApi({
        settings: {
          trustProxyHops: 1,
          rateLimit: { perSecond: 0, burst: 0, authFailuresPerMinute: 0, authFailuresBurst: 0, ...rule },
        },
      });
    });
    afterAll(() => api.close());

    const from = (address: string) => ({ 'x-forwarded-for': address });
    const readyz = (address: string) => fetch(`${api.baseUrl}/readyz`, { headers: from(address) });
    const badHook = (address: string) =>
      fetch(`${api.baseUrl}/webhooks/stripe/not-an-id`, { method: 'POST', headers: from(address), body: '{}' });
    const signedHook = (address: string) => {
      // Signed and well-formed, naming no record of ours: acknowledged, routed nowhere.
      const data = {
        object: 'refund',
        id: 'rf_limit',
        paymentId: 'p_limit',
        status: 'unheard_of',
        amount: 1,
        currency: 'USD',
        reference_id: 'r',
        failureCode: null,
        failureMessage: null,
      };
      const body = JSON.stringify({ id: 'whevt_limit', type: 'refund.updated', createdAt: new Date(), data });
      return fetch(`${api.baseUrl}/webhooks/sandbox`, {
        method: 'POST',
        headers: {
          ...from(address),
          'content-type': 'application/json',
          'sandbox-signature': signWebhook(SANDBOX_WEBHOOK_SECRET, Math.floor(Date.now() / 1000), body),
        },
        body,
      });
    };

    it('limits GET /readyz per address: 429 with Retry-After past the burst, other addresses unaffected', async () => {
      for (let i = 0; i < rule.unauthenticatedBurst; i++) expect((await readyz('198.51.100.1')).status).toBe(200);
      const refused = await readyz('198.51.100.1');
      expect(refused.status).toBe(429);
      expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      expect(await refused.json()).toEqual({ code: 'rate_limited', message: expect.any(String), details: {} });
      expect((await readyz('198.51.100.2')).status).toBe(200);
    });

    it('counts refused webhooks per address, then refuses that address before any work; verified ones never count', async () => {
      // Verified webhooks, many more than the burst: all answered.
      for (let i = 0; i < rule.unauthenticatedBurst * 3; i++)
        expect((await signedHook('198.51.100.3')).status).toBe(200);

      for (let i = 0; i < rule.unauthenticatedBurst; i++) expect((await badHook('198.51.100.4')).status).toBe(404);
      const refused = await badHook('198.51.100.4');
      expect(refused.status).toBe(429);
      expect(refused.headers.get('retry-after')).toBeTruthy();
      // Blocked: even a signed one waits for the address's next token.
      expect((await signedHook('198.51.100.4')).status).toBe(429);
      // Another address is not.
      expect((await badHook('198.51.100.5')).status).toBe(404);
      expect((await signedHook('198.51.100.5')).status).toBe(200);
    });
  });
});
