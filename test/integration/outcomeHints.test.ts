import type { MikroORM } from '@mikro-orm/postgresql';
import { newId } from '../../src/ids';
import {
  PAYMENT_OUTCOME_CHANNEL,
  REFUND_OUTCOME_CHANNEL,
  OutcomeHintListener,
  publishPaymentOutcome,
  publishRefundSettled,
  type PaymentOutcomeHint,
  type RefundOutcomeHint,
} from '../../src/db/outcomeHints';
import { openTestOrm, testLogger } from '../helpers/stack';
import { testStack } from '../setup/stackInfo';

/** The worker's hint that a payment attempt's or a refund's outcome is committed, over real PostgreSQL. */
describe('outcome hints (LISTEN/NOTIFY)', () => {
  let orm: MikroORM;
  let listener: OutcomeHintListener;
  const appName = `outcomes-test-${process.pid}`;

  const until = async (check: () => boolean | Promise<boolean>, ms = 10_000) => {
    for (const end = Date.now() + ms; Date.now() < end;) {
      if (await check()) return;
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
    throw new Error('condition not reached');
  };
  /** The first of the hint and a short timeout (`none`): a hint that should not come. */
  const within = (p: Promise<PaymentOutcomeHint | RefundOutcomeHint>, ms: number) =>
    Promise.race([p, new Promise<'none'>((resolve) => setTimeout(() => resolve('none'), ms))]);

  beforeAll(async () => {
    orm = await openTestOrm();
    listener = OutcomeHintListener.start(testStack().databaseUrl, testLogger, appName);
    await until(() => listener.listening);
  });
  afterAll(async () => {
    await listener.close();
    await orm.close();
  });

  it('delivers a hint to the waiters of that payment only', async () => {
    const [a, b] = [newId('payment'), newId('payment')];
    const first = listener.waitFor(a);
    const second = listener.waitFor(a);
    const other = listener.waitFor(b);
    await publishPaymentOutcome(orm, a, { kind: 'settled' }, testLogger);
    await expect(first.outcome).resolves.toEqual({ kind: 'settled' });
    await expect(second.outcome).resolves.toEqual({ kind: 'settled' });
    expect(await within(other.outcome, 300)).toBe('none');
    for (const w of [first, second, other]) w.cancel();
  });

  it('carries a rejection with its code and message', async () => {
    const id = newId('payment');
    const wait = listener.waitFor(id);
    const rejected = { kind: 'rejected' as const, code: 'card_declined', message: 'Declined.' };
    await publishPaymentOutcome(orm, id, rejected, testLogger);
    await expect(wait.outcome).resolves.toEqual(rejected);
    wait.cancel();
  });

  it('ignores what is not a hint, and a cancelled waiter hears nothing', async () => {
    const id = newId('payment');
    const wait = listener.waitFor(id);
    const conn = orm.em.getConnection();
    await conn.execute('select pg_notify(?, ?)', [PAYMENT_OUTCOME_CHANNEL, 'not json']);
    await conn.execute('select pg_notify(?, ?)', [
      PAYMENT_OUTCOME_CHANNEL,
      JSON.stringify({ paymentId: id, outcome: { kind: 'provider_timeout' } }),
    ]);
    expect(await within(wait.outcome, 300)).toBe('none');
    wait.cancel();
    const cancelled = listener.waitFor(id);
    cancelled.cancel();
    await publishPaymentOutcome(orm, id, { kind: 'settled' }, testLogger);
    expect(await within(cancelled.outcome, 300)).toBe('none');
  });

  it('keeps a payment view only if it is that payment in the state the hint says; else the kind alone', async () => {
    const id = newId('payment');
    const conn = orm.em.getConnection();
    const send = (outcome: object) =>
      conn.execute('select pg_notify(?, ?)', [PAYMENT_OUTCOME_CHANNEL, JSON.stringify({ paymentId: id, outcome })]);
    const cases = [
      [
        { kind: 'settled', payment: { id, status: 'succeeded' } },
        { kind: 'settled', payment: { id, status: 'succeeded' } },
      ],
      [{ kind: 'settled', payment: { id: newId('payment'), status: 'succeeded' } }, { kind: 'settled' }],
      [{ kind: 'settled', payment: { id, status: 'created' } }, { kind: 'settled' }],
      [{ kind: 'created', payment: { id, status: 'succeeded' } }, { kind: 'created' }],
    ] as const;
    for (const [sent, heard] of cases) {
      const wait = listener.waitFor(id);
      await send(sent);
      await expect(wait.outcome).resolves.toEqual(heard);
      wait.cancel();
    }
  });

  it('delivers a refund hint to the waiters of that refund only, never to a payment waiter', async () => {
    const [a, b] = [newId('refund'), newId('refund')];
    const first = listener.waitForRefund(a);
    const other = listener.waitForRefund(b);
    const paymentWaiter = listener.waitFor(a);
    await publishRefundSettled(orm, a, testLogger);
    await expect(first.outcome).resolves.toEqual({ kind: 'settled' });
    expect(await within(other.outcome, 300)).toBe('none');
    expect(await within(paymentWaiter.outcome, 1)).toBe('none');
    // A payment hint under the same id is not a refund's.
    const second = listener.waitForRefund(a);
    await publishPaymentOutcome(orm, a, { kind: 'settled' }, testLogger);
    expect(await within(second.outcome, 300)).toBe('none');
    await orm.em
      .getConnection()
      .execute('select pg_notify(?, ?)', [
        REFUND_OUTCOME_CHANNEL,
        JSON.stringify({ refundId: a, outcome: { kind: 'pending' } }),
      ]);
    expect(await within(second.outcome, 300)).toBe('none');
    for (const w of [first, other, paymentWaiter, second]) w.cancel();
  });

  it('listens again after its connection is killed', async () => {
    await orm.em
      .getConnection()
      .execute('select pg_terminate_backend(pid) from pg_stat_activity where application_name = ?', [appName]);
    await until(() => !listener.listening);
    await until(() => listener.listening);
    const id = newId('payment');
    const wait = listener.waitFor(id);
    await publishPaymentOutcome(orm, id, { kind: 'created' }, testLogger);
    await expect(wait.outcome).resolves.toEqual({ kind: 'created' });
    wait.cancel();
  });
});
