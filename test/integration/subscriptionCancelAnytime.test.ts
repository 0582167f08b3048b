import { createTestMerchant, startPaymentStack, type PaymentStack, type TestMerchant } from '../helpers/stack';
import { subscriptionClient } from '../helpers/subscriptions';

/**
 * Cancelling at any moment of a subscription's life answers as PRODUCT.md says: the subscription
 * in its resulting state (200), never a 500. Found by a black-box run: a DELETE right after a
 * hosted (no cardToken) create answered 500 (the Update met a failed workflow task).
 */
describe('subscriptions: cancel at any moment', () => {
  let stack: PaymentStack;
  let merchant: TestMerchant;
  let subs: ReturnType<typeof subscriptionClient>;

  beforeAll(async () => {
    stack = await startPaymentStack('subcancelany', { billingDaySeconds: 1 });
    merchant = await createTestMerchant(stack.orm, 'Cancelling merchant');
    subs = subscriptionClient(stack, merchant);
  });
  afterAll(() => stack.close());

  it('cancels a hosted subscription right after its creation', async () => {
    for (let i = 0; i < 5; i++) {
      const created = await subs.create({});
      expect(created.status).toBe(200);
      expect(created.body.status).toBe('pending');
      const cancelled = await subs.cancel(created.body.id as string);
      expect(cancelled.status).toBe(200);
      expect(cancelled.body).toMatchObject({ status: 'cancelled', cancellationReason: 'merchant_request' });
    }
  });

  it('cancels a token subscription right after its creation, and again (unchanged)', async () => {
    const created = await subs.create({ cardToken: 'tok_success' });
    expect(created.body.status).toBe('active');
    const id = created.body.id as string;
    const [a, b] = await Promise.all([subs.cancel(id, '?reason=moved'), subs.cancel(id, '?reason=moved')]);
    for (const r of [a, b]) {
      expect(r.status).toBe(200);
      expect(r.body).toMatchObject({ status: 'cancelled', cancellationReason: 'moved' });
    }
    const again = await subs.cancel(id, '?reason=other');
    expect(again.status).toBe(200);
    expect(again.body.cancellationReason).toBe('moved');
    expect(again.body.cancelledAt).toBe(a.body.cancelledAt);
  });
});
