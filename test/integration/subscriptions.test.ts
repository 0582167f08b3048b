import { Invoice } from '../../src/db/entities';
import { call, eventually } from '../helpers/http';
import { createTestMerchant, startPaymentStack, type PaymentStack, type TestMerchant } from '../helpers/stack';

type Sub = Record<string, any>;

describe('subscriptions: token flow renewals', () => {
  let stack: PaymentStack;
  let m: TestMerchant;
  beforeAll(async () => {
    stack = await startPaymentStack('subs', { billingDaySeconds: 1 });
    m = await createTestMerchant(stack.orm);
  });
  afterAll(() => stack.close());

  const post = (body: unknown) => call<Sub>(stack.api.baseUrl, 'POST', '/subscriptions', m.auth, body);
  const get = (id: string) => call<Sub>(stack.api.baseUrl, 'GET', `/subscriptions/${id}`, m.auth);
  const invoices = (subscriptionId: string) =>
    stack.orm.em.fork().find(Invoice, { subscription: subscriptionId }, { orderBy: { periodIndex: 'asc' } });

  it('charges at once, then once per period; each invoice once in the ledger', async () => {
    const res = await post({
      amount: 9.99,
      currency: 'usd',
      billingIntervalDays: 1,
      externalId: `sub-${Date.now()}`,
      cardToken: 'tok_success',
      customer: { email: 'ada@example.com', name: 'Ada' },
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ status: 'active', amount: 9.99, currency: 'USD', redirectUrl: null });
    const id = res.body.id as string;
    await eventually(
      () => invoices(id),
      (list) => list.filter((i) => i.status === 'paid').length >= 4,
      20_000,
      200,
    );
    const del = await call<Sub>(stack.api.baseUrl, 'DELETE', `/subscriptions/${id}`, m.auth);
    expect(del.status).toBe(200);
    expect(del.body.status).toBe('cancelled');
    const list = await invoices(id);
    const ledger = await stack.ledger('capture', id, 'subscriptionId');
    console.log(list.map((i) => [i.periodIndex, i.status, i.periodStart, i.periodEnd]), ledger.length, stack.mail().map(e => e.subject));
    expect((await get(id)).body.status).toBe('cancelled');
  });
});
