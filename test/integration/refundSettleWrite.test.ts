import type { MikroORM } from '@mikro-orm/postgresql';
import { MerchantEvent, Payment, Refund } from '../../src/db/entities';
import { presentPayment } from '../../src/domain/payments';
import {
  claimRefundForAttempt,
  createRefund,
  findRefundWithPayment,
  presentRefund,
  settleRefund,
  settleRefundFromRead,
  type RefundWithPayment,
} from '../../src/domain/refunds';
import { heardWithin, listeningHints } from '../helpers/outcomeHints';
import { createTestMerchant, openTestOrm } from '../helpers/stack';
import { paymentRow } from '../helpers/records';

/**
 * A refund's settlement in one statement (settleRefundFromRead), against PostgreSQL: it writes
 * what the ORM's path writes (refund, payment balance and status, outbox events whose payloads
 * are the records as GET shows them afterwards), all or nothing, and writes nothing, answering
 * false, when either row moved after the attempt read them: the general path then decides.
 */
describe('a refund settled in one statement', () => {
  let orm: MikroORM;
  let merchantId: string;

  beforeAll(async () => {
    orm = await openTestOrm();
    merchantId = (await createTestMerchant(orm, 'Refund settle merchant')).merchantId;
  });
  afterAll(() => orm.close(true));

  /** A captured 10.00 USD payment with a pending refund of `amount` (major units), as the API makes it. */
  async function pendingRefund(amount = 4): Promise<RefundWithPayment> {
    const em = orm.em.fork();
    const payment = paymentRow(em, merchantId, {
      status: 'succeeded',
      providerTransactionId: `txn_${Math.random().toString(36).slice(2)}`,
      callbackUrl: 'https://merchant.example/hooks',
    });
    await em.flush();
    const { refund } = await createRefund(orm.em.fork(), { merchantId, environment: 'test' }, payment.id, {
      externalId: `refund-${Math.random()}`,
      amount,
    });
    return (await findRefundWithPayment(orm.em, refund.id))!;
  }

  const reload = async (read: RefundWithPayment) => {
    const em = orm.em.fork();
    return {
      refund: await em.findOneOrFail(Refund, { id: read.id }),
      payment: await em.findOneOrFail(Payment, { id: read.payment.id }),
      events: await em.find(MerchantEvent, { resourceId: read.id }, { orderBy: { type: 'asc' } }),
    };
  };
  const json = (value: unknown) => JSON.parse(JSON.stringify(value)) as unknown;

  it("an attempt's read marks the refund's call sent in the same statement, saying whether one was outstanding", async () => {
    const read = await pendingRefund(2);
    const first = await claimRefundForAttempt(orm.em, read.id);
    // What the attempt reads is what findRefundWithPayment reads.
    expect(first).toEqual({ refund: read, sentBefore: false });
    const markedAt = (await reload(read)).refund.providerCallSentAt;
    expect(markedAt).toBeInstanceOf(Date);
    expect(await claimRefundForAttempt(orm.em, read.id)).toMatchObject({ sentBefore: true });
    expect((await reload(read)).refund.providerCallSentAt).toEqual(markedAt);
    // Settled: read, never marked.
    const other = await pendingRefund(1);
    await settleRefundFromRead(orm.em, other, { status: 'succeeded', providerRefundId: 're_claim' });
    expect(await claimRefundForAttempt(orm.em, other.id)).toMatchObject({
      sentBefore: false,
      refund: { status: 'succeeded' },
    });
    expect((await reload(other)).refund.providerCallSentAt).toBeNull();
    expect(await claimRefundForAttempt(orm.em, 're_01NOSUCHREFUND0000000000000')).toBeNull();
  });

  it('a partial refund: refund succeeded, the payment partially refunded, two events showing both as they now are', async () => {
    const read = await pendingRefund(4);
    await expect(
      settleRefundFromRead(orm.em, read, { status: 'succeeded', providerRefundId: 're_partial' }),
    ).resolves.toBe(true);

    const { refund, payment, events } = await reload(read);
    expect(refund).toMatchObject({ status: 'succeeded', providerRefundId: 're_partial', failureCode: null });
    expect(payment).toMatchObject({
      status: 'partially_refunded',
      amountRefundedMinor: 400,
      amountPendingRefundMinor: 0,
    });
    expect(events.map((e) => e.type)).toEqual(['payment.partially_refunded', 'refund.succeeded']);
    expect(events[0]!.payload.data).toEqual(json(presentPayment(payment)));
    expect(events[1]!.payload.data).toEqual(json(presentRefund(refund, payment)));
    expect(events[1]).toMatchObject({ dedupeKey: `${read.id}:refund.succeeded`, attempts: 0, deliveredAt: null });
  });

  it('the whole balance: the payment refunded, payment.refunded recorded', async () => {
    const read = await pendingRefund(10);
    await settleRefundFromRead(orm.em, read, { status: 'succeeded', providerRefundId: 're_full' });
    const { payment, events } = await reload(read);
    expect(payment).toMatchObject({ status: 'refunded', amountRefundedMinor: 1000, amountPendingRefundMinor: 0 });
    expect(events.map((e) => e.type)).toEqual(['payment.refunded', 'refund.succeeded']);
  });

  it('the same rows and payloads as the ORM path for a declined refund', async () => {
    const viaStatement = await pendingRefund(3);
    const viaOrm = await pendingRefund(3);
    const declined = { status: 'failed', failureCode: 'insufficient_funds', failureMessage: 'No funds.' } as const;

    await expect(settleRefundFromRead(orm.em, viaStatement, declined)).resolves.toBe(true);
    await settleRefund(orm.em.fork(), viaOrm.id, declined);

    const [a, b] = [await reload(viaStatement), await reload(viaOrm)];
    const written = (r: Awaited<ReturnType<typeof reload>>) => ({
      refund: { status: r.refund.status, failureCode: r.refund.failureCode, failureMessage: r.refund.failureMessage },
      payment: {
        status: r.payment.status,
        refunded: r.payment.amountRefundedMinor,
        pending: r.payment.amountPendingRefundMinor,
      },
      events: r.events.map((e) => e.type),
    });
    expect(written(a)).toEqual(written(b));
    expect(written(a)).toEqual({
      refund: { status: 'failed', failureCode: 'insufficient_funds', failureMessage: 'No funds.' },
      payment: { status: 'succeeded', refunded: 0, pending: 0 },
      events: ['refund.failed'],
    });
    expect(a.events[0]!.payload.data).toEqual(json(presentRefund(a.refund, a.payment)));
    expect(b.events[0]!.payload.data).toEqual(json(presentRefund(b.refund, b.payment)));
  });

  it.each([
    [
      'settled by the general path',
      (read: RefundWithPayment) => settleRefund(orm.em.fork(), read.id, { status: 'succeeded' }),
    ],
    [
      'given its provider refund id (a pending answer)',
      (read: RefundWithPayment) =>
        orm.em
          .fork()
          .nativeUpdate(Refund, { id: read.id }, { providerRefundId: 're_other', updatedAt: new Date(Date.now() + 5) }),
    ],
    [
      'whose payment changed',
      (read: RefundWithPayment) =>
        orm.em.fork().nativeUpdate(Payment, { id: read.payment.id }, { updatedAt: new Date(Date.now() + 5) }),
    ],
  ])('a refund %s after the read: nothing written, false', async (_, change) => {
    const read = await pendingRefund(2);
    await change(read);
    const before = await reload(read);

    await expect(
      settleRefundFromRead(orm.em, read, { status: 'succeeded', providerRefundId: 're_late' }),
    ).resolves.toBe(false);

    const after = await reload(read);
    expect(after.refund).toEqual(before.refund);
    expect(after.payment).toEqual(before.payment);
    expect(after.events.map((e) => e.id)).toEqual(before.events.map((e) => e.id));
  });

  it('tells a waiting API when it commits, with the refund as GET shows it; nothing when it writes nothing', async () => {
    const listener = await listeningHints(`settle-hints-${process.pid}`);
    try {
      const read = await pendingRefund(3);
      const hint = listener.waitForRefund(read.id);
      await settleRefundFromRead(orm.em, read, { status: 'succeeded', providerRefundId: 're_hinted' });
      const { refund, payment } = await reload(read);
      await expect(hint.outcome).resolves.toEqual({ kind: 'settled', refund: json(presentRefund(refund, payment)) });
      hint.cancel();

      const moved = await pendingRefund(2);
      await settleRefund(orm.em.fork(), moved.id, { status: 'failed' });
      const none = listener.waitForRefund(moved.id);
      await expect(settleRefundFromRead(orm.em, moved, { status: 'succeeded' })).resolves.toBe(false);
      expect(await heardWithin(none)).toBe('none');
      none.cancel();
    } finally {
      await listener.close();
    }
  });

  it('applied twice from the same read, at once: refunded once, one set of events', async () => {
    const read = await pendingRefund(5);
    const settled = await Promise.all(
      [1, 2, 3].map(() => settleRefundFromRead(orm.em, read, { status: 'succeeded', providerRefundId: 're_once' })),
    );
    expect(settled.filter(Boolean)).toHaveLength(1);
    const { payment, events } = await reload(read);
    expect(payment).toMatchObject({ amountRefundedMinor: 500, amountPendingRefundMinor: 0 });
    expect(events.map((e) => e.type)).toEqual(['payment.partially_refunded', 'refund.succeeded']);
  });
});
