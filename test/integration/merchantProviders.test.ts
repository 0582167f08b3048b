import { createKey } from '../../src/domain/merchants';
import { runCli } from '../helpers/cli';
import { call } from '../helpers/http';
import {
  basicAuth,
  createTestMerchant,
  startPaymentStack,
  type PaymentStack,
  type TestMerchant,
} from '../helpers/stack';
import { subscriptionClient } from '../helpers/subscriptions';

/**
 * PRODUCT.md, "Providers": a merchant's provider per environment, configured with the operator
 * CLI, serves that merchant's new records; records keep the processor that served them.
 */
describe('per-merchant provider configuration', () => {
  let stack: PaymentStack;
  let a: TestMerchant;
  let aLive: TestMerchant;
  let bLive: TestMerchant;
  let counter = 0;

  const liveKeyOf = async (merchant: TestMerchant): Promise<TestMerchant> => {
    const { apiKey, secretKey } = await createKey(stack.orm.em.fork(), merchant.merchantId, {
      environment: 'live',
      role: 'merchant',
    });
    return { ...merchant, publicKey: apiKey.publicKey, secretKey, auth: basicAuth(apiKey.publicKey, secretKey) };
  };
  const pay = (merchant: TestMerchant, amount = 25, externalId = `mp-${Date.now()}-${++counter}`) =>
    call(stack.api.baseUrl, 'POST', '/payments', merchant.auth, {
      amount,
      currency: 'EUR',
      externalId,
      customer: { email: 'c@example.com' },
      cardToken: 'tok_success',
    });
  const refund = (merchant: TestMerchant, paymentId: string, amount: number) =>
    call(stack.api.baseUrl, 'POST', `/payments/${paymentId}/refund`, merchant.auth, {
      externalId: `mp-rf-${Date.now()}-${++counter}`,
      amount,
    });
  const notConfigured = { code: 'provider_not_configured', message: expect.any(String), details: {} };

  beforeAll(async () => {
    stack = await startPaymentStack('merchantproviders');
    a = await createTestMerchant(stack.orm, 'Configured merchant');
    aLive = await liveKeyOf(a);
    bLive = await liveKeyOf(await createTestMerchant(stack.orm, 'Unconfigured merchant'));
  });
  afterAll(() => stack.close());

  it('a live sandbox configuration takes live payments and refunds; removing it stops only new records', async () => {
    const before = await pay(aLive);
    expect(before.status).toBe(500);
    expect(before.body).toEqual(notConfigured);

    const set = await runCli([
      'providers:set',
      '--merchant',
      a.merchantId,
      '--environment',
      'live',
      '--processor',
      'sandbox',
    ]);
    expect(set.code).toBe(0);

    const externalId = `mp-kept-${Date.now()}`;
    const paid = await pay(aLive, 25, externalId);
    expect(paid.status).toBe(200);
    expect(paid.body).toMatchObject({ status: 'succeeded', processor: 'sandbox', amount: 25, currency: 'EUR' });
    const paymentId = paid.body.id as string;
    const captures = await stack.ledger('capture', paymentId);
    expect(captures).toMatchObject([{ status: 'succeeded', amount: 25, currency: 'EUR', idempotencyKey: paymentId }]);

    const first = await refund(aLive, paymentId, 5);
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({ status: 'succeeded', amount: 5 });

    // Merchant A's configuration never serves merchant B.
    const other = await pay(bLive);
    expect(other.status).toBe(500);
    expect(other.body).toEqual(notConfigured);

    const removed = await runCli(['providers:remove', '--merchant', a.merchantId, '--environment', 'live']);
    expect(removed.json).toEqual({ removed: true });

    const after = await pay(aLive);
    expect(after.status).toBe(500);
    expect(after.body).toEqual(notConfigured);
    // A repeat of the first request still answers with its payment.
    const repeat = await pay(aLive, 25, externalId);
    expect(repeat.status).toBe(200);
    expect(repeat.body).toMatchObject({ id: paymentId, status: 'partially_refunded', processor: 'sandbox' });

    // The existing payment keeps the processor that served it: its refunds still go there.
    const second = await refund(aLive, paymentId, 7);
    expect(second.status).toBe(200);
    expect(second.body).toMatchObject({ status: 'succeeded', amount: 7, paymentAmountRefunded: 12 });
    expect((await stack.ledger('refund', paymentId)).map((e) => [e.status, e.amount])).toEqual([
      ['succeeded', 5],
      ['succeeded', 7],
    ]);
  });

  it('a live sandbox configuration serves live subscriptions too; a repeat after removal finds its subscription', async () => {
    const merchant = await createTestMerchant(stack.orm, 'Live subscriptions');
    const live = await liveKeyOf(merchant);
    const subs = subscriptionClient(stack, live);
    const refused = await subs.create({ cardToken: 'tok_success' });
    expect(refused.status).toBe(500);
    expect(refused.body.code).toBe('provider_not_configured');

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
    const externalId = `sub-kept-${Date.now()}`;
    const created = await subs.create({ cardToken: 'tok_success', externalId });
    expect(created.status).toBe(200);
    expect(created.body).toMatchObject({ status: 'active', processor: 'sandbox' });
    expect((await subs.captures(created.body.id as string)).map((c) => c.status)).toEqual(['succeeded']);

    const removed = await runCli(['providers:remove', '--merchant', merchant.merchantId, '--environment', 'live']);
    expect(removed.json).toEqual({ removed: true });
    expect((await subs.create({ cardToken: 'tok_success' })).status).toBe(500);
    // A repeat of the request answers with its subscription, which keeps its processor.
    const repeat = await subs.create({ cardToken: 'tok_success', externalId });
    expect(repeat.status).toBe(200);
    expect(repeat.body).toMatchObject({ id: created.body.id, status: 'active', processor: 'sandbox' });
  });

  it('test keys without a configuration use the built-in sandbox, as before', async () => {
    const merchant = await createTestMerchant(stack.orm, 'Test only');
    const paid = await pay(merchant, 3);
    expect(paid.status).toBe(200);
    expect(paid.body).toMatchObject({ status: 'succeeded', processor: 'sandbox' });
    expect(await stack.ledger('capture', paid.body.id as string)).toHaveLength(1);
    // A's live configuration (set, then removed) changed nothing for A's test key either.
    const ownTest = await pay(a, 4);
    expect(ownTest.body).toMatchObject({ status: 'succeeded', processor: 'sandbox' });
  });
});
