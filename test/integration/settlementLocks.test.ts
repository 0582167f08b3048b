import type { MikroORM } from '@mikro-orm/postgresql';
import { Payment, Refund } from '../../src/db/entities';
import { applyProviderPayment, voidPayment } from '../../src/domain/payments';
import { createRefund, settleRefund } from '../../src/domain/refunds';
import { createTestMerchant, openTestOrm } from '../helpers/stack';
import { paymentRow } from '../helpers/records';

/**
 * The general (ORM) settlements lock the rows they change, never their merchant's. A lock on the
 * merchant's row would make every settlement of a merchant wait on any transaction that touches
 * that row: a payment or outbox event being inserted (its foreign key takes a key-share lock on
 * the merchant), a webhook secret being set. Here a transaction holds such a lock, as an open
 * payment insert does, while each settlement of another record of that merchant runs.
 */
describe('a settlement locks its records, not its merchant', () => {
  let orm: MikroORM;
  let merchantId: string;

  beforeAll(async () => {
    orm = await openTestOrm();
    merchantId = (await createTestMerchant(orm, 'Settlement locks merchant')).merchantId;
  });
  afterAll(() => orm.close(true));

  /** Runs `settle` while another transaction holds a key-share lock on the merchant's row. */
  async function whileMerchantKeyShared(settle: () => Promise<unknown>): Promise<'finished' | 'waited'> {
    const pool = await orm.em.getConnection().getNativeClient();
    const holder = await pool.connect();
    let timer: NodeJS.Timeout | undefined;
    let open = false;
    try {
      await holder.query('begin');
      open = true;
      await holder.query('select id from merchants where id = $1 for key share', [merchantId]);
      const finished = settle().then(() => 'finished' as const);
      const waited = new Promise<'waited'>((resolve) => (timer = setTimeout(() => resolve('waited'), 2_000)));
      const first = await Promise.race([finished, waited]);
      await holder.query('rollback');
      open = false;
      await finished; // it completes either way once the lock is gone
      return first;
    } finally {
      clearTimeout(timer);
      if (open) await holder.query('rollback');
      holder.release();
    }
  }

  async function storedPayment(overrides: Partial<Payment>): Promise<Payment> {
    const em = orm.em.fork();
    const payment = paymentRow(em, merchantId, overrides);
    await em.flush();
    return payment;
  }

  it('a provider payment applied (hosted page, webhook) does not wait on its merchant', async () => {
    const payment = await storedPayment({ status: 'created', providerTransactionId: 'txn_locks_apply' });
    const outcome = await whileMerchantKeyShared(() =>
      applyProviderPayment(orm.em.fork(), payment.id, {
        transactionId: 'txn_locks_apply',
        status: 'succeeded',
        amountMinor: 1000,
        currency: 'USD',
        failureCode: null,
        failureMessage: null,
        redirectUrl: null,
        savedCardToken: null,
        actionUrl: null,
      }),
    );
    expect(outcome).toBe('finished');
    expect((await orm.em.fork().findOneOrFail(Payment, { id: payment.id })).status).toBe('succeeded');
  });

  it('a payment voided at its expiry does not wait on its merchant', async () => {
    const payment = await storedPayment({ status: 'created' });
    expect(await whileMerchantKeyShared(() => voidPayment(orm.em.fork(), payment.id))).toBe('finished');
    expect((await orm.em.fork().findOneOrFail(Payment, { id: payment.id })).status).toBe('voided');
  });

  it('a refund settled by reconciliation does not wait on its merchant', async () => {
    const payment = await storedPayment({ status: 'succeeded', providerTransactionId: 'txn_locks_refund' });
    const { refund } = await createRefund(orm.em.fork(), { merchantId, environment: 'test' }, payment.id, {
      externalId: `locks-refund-${Math.random()}`,
      amount: 4,
    });
    const outcome = await whileMerchantKeyShared(() =>
      settleRefund(orm.em.fork(), refund.id, { status: 'succeeded', providerRefundId: 're_locks' }),
    );
    expect(outcome).toBe('finished');
    expect((await orm.em.fork().findOneOrFail(Refund, { id: refund.id })).status).toBe('succeeded');
    expect((await orm.em.fork().findOneOrFail(Payment, { id: payment.id })).amountRefundedMinor).toBe(400);
  });
});
