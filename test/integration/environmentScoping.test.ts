import { paymentRow } from '../helpers/records';
import type { EntityManager } from '@mikro-orm/postgresql';
import {
  basicAuth,
  createTestMerchant,
  startPaymentStack,
  type PaymentStack,
  type TestMerchant,
} from '../helpers/stack';
import { call } from '../helpers/http';
import { createKey } from '../../src/domain/merchants';
import { insertSubscription } from '../../src/domain/subscriptions';
import { Merchant, Refund, type KeyEnvironment, type Payment } from '../../src/db/entities';
import { newId } from '../../src/ids';

/**
 * PRODUCT.md, "Production profile": every lookup is scoped by merchant and by the key's
 * environment. Live keys have no provider here (500 provider_not_configured on create), so the
 * live records are written straight to the database, as a live worker would have left them.
 */
describe('environment scoping: a test key never sees a live record, nor the reverse', () => {
  let stack: PaymentStack;
  let merchant: TestMerchant;
  let testAuth: string;
  let liveAuth: string;
  let seq = 0;
  const ext = (p: string) => `${p}-${Date.now()}-${++seq}`;
  const api = (method: string, path: string, auth: string, body?: unknown) =>
    call(stack.api.baseUrl, method, path, auth, body);

  const records: Record<KeyEnvironment, { payment: string; refund: string; subscription: string }> = {
    test: { payment: '', refund: '', subscription: '' },
    live: { payment: '', refund: '', subscription: '' },
  };
  const externalIds = { payment: '', refund: '', subscription: '' };

  function insertPayment(em: EntityManager, environment: KeyEnvironment, externalId: string): Payment {
    return paymentRow(em, merchant.merchantId, {
      externalId,
      environment,
      processor: environment === 'live' ? 'live-provider' : 'sandbox',
      status: 'succeeded',
      amountRefundedMinor: 300,
      providerTransactionId: `tx_${environment}_${seq}`,
    });
  }

  function insertRefund(em: EntityManager, payment: Payment, externalId: string): Refund {
    const now = new Date();
    return em.create(Refund, {
      id: newId('refund'),
      merchant: payment.merchant,
      payment,
      externalId,
      amountMinor: 300,
      currency: 'USD',
      reason: null,
      status: 'succeeded',
      failureCode: null,
      failureMessage: null,
      providerRefundId: `rf_${payment.id}`,
      createdAt: now,
      updatedAt: now,
    });
  }

  beforeAll(async () => {
    stack = await startPaymentStack('env-scoping');
    merchant = await createTestMerchant(stack.orm, 'Scoping merchant');
    testAuth = merchant.auth;
    const live = await createKey(stack.orm.em.fork(), merchant.merchantId, { environment: 'live', role: 'merchant' });
    liveAuth = basicAuth(live.apiKey.publicKey, live.secretKey);

    externalIds.payment = ext('pay');
    externalIds.refund = ext('ref');
    externalIds.subscription = ext('sub');
    const em = stack.orm.em.fork();
    for (const environment of ['test', 'live'] as const) {
      // The test records carry their own externalIds; the live ones those a test key will try.
      const own = (id: string) => (environment === 'live' ? id : `${id}-test`);
      const payment = insertPayment(em, environment, own(externalIds.payment));
      const refund = insertRefund(em, payment, own(externalIds.refund));
      const { subscription } = insertSubscription(em, em.getReference(Merchant, merchant.merchantId), {
        merchantId: merchant.merchantId,
        environment,
        processor: 'sandbox',
        externalId: own(externalIds.subscription),
        amountMinor: 1000,
        currency: 'USD',
        billingIntervalDays: 30,
        retryScheduleDays: [1],
        phases: [],
      });
      subscription.status = 'cancelled'; // nothing to run: no workflow is needed for the lookups
      records[environment] = { payment: payment.id, refund: refund.id, subscription: subscription.id };
    }
    await em.flush();
  });
  afterAll(() => stack.close());

  const pairs = [
    ['test', 'live'],
    ['live', 'test'],
  ] as const;

  it.each(pairs)('a %s key reads its own records', async (environment) => {
    const auth = environment === 'test' ? testAuth : liveAuth;
    const own = records[environment];
    expect((await api('GET', `/payments/${own.payment}`, auth)).body).toMatchObject({ id: own.payment, environment });
    expect((await api('GET', `/payments/${own.payment}/refunds`, auth)).body).toEqual({
      refunds: [expect.objectContaining({ id: own.refund })],
    });
    expect((await api('GET', `/refunds/${own.refund}`, auth)).body).toMatchObject({ id: own.refund });
    expect((await api('GET', `/subscriptions/${own.subscription}`, auth)).body).toMatchObject({
      id: own.subscription,
      environment,
    });
    expect((await api('DELETE', `/subscriptions/${own.subscription}`, auth)).status).toBe(200);
  });

  it.each(pairs)('a %s key gets 404 for every %s record, on every route', async (environment, other) => {
    const auth = environment === 'test' ? testAuth : liveAuth;
    const theirs = records[other];
    const answers = {
      getPayment: await api('GET', `/payments/${theirs.payment}`, auth),
      listRefunds: await api('GET', `/payments/${theirs.payment}/refunds`, auth),
      createRefund: await api('POST', `/payments/${theirs.payment}/refund`, auth, { externalId: ext('r'), amount: 1 }),
      getRefund: await api('GET', `/refunds/${theirs.refund}`, auth),
      getSubscription: await api('GET', `/subscriptions/${theirs.subscription}`, auth),
      cancelSubscription: await api('DELETE', `/subscriptions/${theirs.subscription}`, auth),
      updatePaymentMethod: await api('POST', `/subscriptions/${theirs.subscription}/payment-method`, auth, {
        cardToken: 'tok_success',
      }),
    };
    const statuses = Object.fromEntries(Object.entries(answers).map(([name, res]) => [name, res.status]));
    expect(statuses).toEqual({
      getPayment: 404,
      listRefunds: 404,
      createRefund: 404,
      getRefund: 404,
      getSubscription: 404,
      cancelSubscription: 404,
      updatePaymentMethod: 404,
    });
    for (const res of Object.values(answers)) expect(res.body).toMatchObject({ code: 'not_found' });
    // Nothing was refunded on the other environment's payment.
    const refunds = await stack.orm.em.fork().find(Refund, { payment: theirs.payment });
    expect(refunds.map((r) => r.id)).toEqual([theirs.refund]);
  });

  it("a test key's create never finds, nor reveals, a live record of the same externalId", async () => {
    const live = records.live;
    const payment = await api('POST', '/payments', testAuth, {
      amount: 10,
      currency: 'USD',
      externalId: externalIds.payment,
      customer: { email: 'c@example.com' },
      cardToken: 'tok_success',
    });
    expect(payment.status).toBe(400);
    expect(payment.body).toMatchObject({ code: 'external_id_conflict' });
    expect(JSON.stringify(payment.body)).not.toContain(live.payment);

    const subscription = await api('POST', '/subscriptions', testAuth, {
      amount: 10,
      currency: 'USD',
      billingIntervalDays: 30,
      externalId: externalIds.subscription,
      customer: { email: 'c@example.com' },
      cardToken: 'tok_success',
    });
    expect(subscription.status).toBe(400);
    expect(subscription.body).toMatchObject({ code: 'external_id_conflict' });
    expect(JSON.stringify(subscription.body)).not.toContain(live.subscription);

    const refund = await api('POST', `/payments/${records.test.payment}/refund`, testAuth, {
      externalId: externalIds.refund,
      amount: 1,
    });
    expect(refund.status).toBe(400);
    expect(refund.body).toMatchObject({ code: 'external_id_conflict' });
    expect(JSON.stringify(refund.body)).not.toContain(live.refund);
  });
});
