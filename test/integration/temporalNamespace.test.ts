import {
  createTestMerchant,
  startPaymentStack,
  startTestApi,
  type PaymentStack,
  type TestApi,
  type TestMerchant,
} from '../helpers/stack';
import { call } from '../helpers/http';

/**
 * A Temporal frontend that does not know the namespace (seen in the chaos run: a frontend just
 * restarted, its namespace registry not loaded yet): nothing was started, so a 503 with
 * Retry-After that the merchant may retry with the same externalId, never a 500.
 */
describe('with a Temporal server that does not know the namespace', () => {
  let stack: PaymentStack;
  let lost: TestApi;
  let merchant: TestMerchant;

  beforeAll(async () => {
    stack = await startPaymentStack('temporal-namespace');
    merchant = await createTestMerchant(stack.orm, 'Namespace merchant');
    lost = await startTestApi({
      orm: stack.orm,
      providers: stack.providers,
      namespace: `not-registered-${Date.now()}`,
      settings: { taskQueue: stack.taskQueue },
    });
  });
  afterAll(async () => {
    await lost.close();
    await stack.close();
  });

  it('POST /payments (Update-with-Start) answers 503 service_unavailable', async () => {
    const res = await call(lost.baseUrl, 'POST', '/payments', merchant.auth, {
      amount: 10,
      currency: 'USD',
      externalId: `ns-pay-${Date.now()}`,
      customer: { email: 'c@example.com' },
      cardToken: 'tok_success',
    });
    expect(res.status).toBe(503);
    expect(res.body).toMatchObject({ code: 'service_unavailable' });
    expect(res.headers.get('retry-after')).toMatch(/^\d+$/);
  });

  it('POST /subscriptions answers 503 service_unavailable', async () => {
    const res = await call(lost.baseUrl, 'POST', '/subscriptions', merchant.auth, {
      amount: 5,
      currency: 'USD',
      billingIntervalDays: 30,
      externalId: `ns-sub-${Date.now()}`,
      cardToken: 'tok_success',
      customer: { email: 'c@example.com' },
    });
    expect(res.status).toBe(503);
    expect(res.body).toMatchObject({ code: 'service_unavailable' });
  });
});
