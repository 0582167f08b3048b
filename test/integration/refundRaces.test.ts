import { createTestMerchant, startPaymentStack, type PaymentStack, type TestMerchant } from '../helpers/stack';
import { call, eventually } from '../helpers/http';

/**
 * Money invariant 2 under concurrency: succeeded plus in-flight refunds never exceed the
 * payment, at most one refund in flight; checked against the provider's own ledger.
 */
describe('refund races', () => {
  let stack: PaymentStack;
  let merchant: TestMerchant;
  let seq = 0;
  const ext = (p: string) => `${p}-${Date.now()}-${++seq}`;
  const pay = async (amount: number) =>
    (
      await call(stack.api.baseUrl, 'POST', '/payments', merchant.auth, {
        amount,
        currency: 'USD',
        externalId: ext('p'),
        customer: { email: 'c@example.com' },
        cardToken: 'tok_success',
      })
    ).body.id as string;
  const refund = (paymentId: string, body: Record<string, unknown>) =>
    call(stack.api.baseUrl, 'POST', `/payments/${paymentId}/refund`, merchant.auth, body);
  const ledgerRefunds = (paymentId: string) => stack.ledger('refund', paymentId);
  const inFlight = async (paymentId: string) => {
    const rows: Array<{ n: string }> = await stack.orm.em
      .getConnection()
      .execute(`select count(*) as n from refunds where payment_id = ? and status = 'pending'`, [paymentId]);
    return Number(rows[0]!.n);
  };

  beforeAll(async () => {
    stack = await startPaymentStack('refund-races');
    merchant = await createTestMerchant(stack.orm, 'Race merchant');
  });
  afterEach(() => stack.sandbox('/_admin/faults', {}));
  afterAll(() => stack.close());

  it('20 concurrent refunds with distinct externalIds never refund more than captured (5 rounds)', async () => {
    for (let round = 0; round < 5; round++) {
      const paymentId = await pay(10);
      const answers = await Promise.all(
        Array.from({ length: 20 }, () => refund(paymentId, { externalId: ext('race'), amount: 3 })),
      );
      // Each answer is a success or one of the documented refusals; never a 5xx.
      for (const a of answers) expect([200, 409, 422]).toContain(a.status);
      const ok = answers.filter((a) => a.status === 200);
      expect(ok.length).toBeGreaterThanOrEqual(1);
      expect(ok.length).toBeLessThanOrEqual(3); // 3 x 3 <= 10 < 4 x 3
      for (const a of answers.filter((x) => x.status === 409))
        expect(['refund_in_flight', 'payment_not_refundable']).toContain(a.body.code);
      const ledger = await ledgerRefunds(paymentId);
      const refunded = ledger
        .filter((e) => e.status === 'succeeded')
        .reduce((sum, e) => sum + Math.round(e.amount * 100), 0);
      expect(refunded).toBeLessThanOrEqual(1000);
      expect(ledger).toHaveLength(ok.length);
      const payment = await call(stack.api.baseUrl, 'GET', `/payments/${paymentId}`, merchant.auth);
      expect(Math.round((payment.body.amountRefunded as number) * 100)).toBe(refunded);
      expect(await inFlight(paymentId)).toBe(0);
    }
  });

  it('with the provider holding refunds pending, at most one is ever in flight', async () => {
    await stack.sandbox('/_admin/faults', { refunds: 'pending' });
    const paymentId = await pay(10);
    const answers = await Promise.all(
      Array.from({ length: 20 }, () => refund(paymentId, { externalId: ext('pend'), amount: 1 })),
    );
    expect(answers.filter((a) => a.status === 200)).toHaveLength(1);
    expect(answers.filter((a) => a.status === 409 && a.body.code === 'refund_in_flight')).toHaveLength(19);
    expect(await inFlight(paymentId)).toBe(1);
    expect(await ledgerRefunds(paymentId)).toHaveLength(1);
  });

  it('one externalId sent for two payments at once: one refund, the other a 400 conflict', async () => {
    const [a, b] = [await pay(5), await pay(5)];
    const externalId = ext('cross');
    const answers = await Promise.all([refund(a, { externalId, amount: 1 }), refund(b, { externalId, amount: 1 })]);
    expect(answers.map((x) => x.status).sort()).toEqual([200, 400]);
    expect(answers.find((x) => x.status === 400)!.body).toMatchObject({ code: 'external_id_conflict' });
    expect((await ledgerRefunds(a)).length + (await ledgerRefunds(b)).length).toBe(1);
  });

  it('the same refund request sent 10 times concurrently makes one refund and one provider refund', async () => {
    const paymentId = await pay(10);
    const externalId = ext('same');
    const answers = await Promise.all(Array.from({ length: 10 }, () => refund(paymentId, { externalId, amount: 4 })));
    expect(answers.map((a) => a.status)).toEqual(Array(10).fill(200));
    expect(new Set(answers.map((a) => a.body.id)).size).toBe(1);
    const ledger = await ledgerRefunds(paymentId);
    expect(ledger).toEqual([expect.objectContaining({ reference: externalId, amount: 4, status: 'succeeded' })]);
    const settled = await eventually(
      () => call(stack.api.baseUrl, 'GET', `/payments/${paymentId}`, merchant.auth),
      (r) => r.body.amountRefunded === 4,
    );
    expect(settled.body).toMatchObject({ status: 'partially_refunded', amountRefundable: 6 });
  });
});
