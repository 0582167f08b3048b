import type { MikroORM } from '@mikro-orm/postgresql';
import { Payment, Refund } from '../../src/db/entities';
import type { AppError } from '../../src/errors';
import { newId } from '../../src/ids';
import { createRefund, readRefundRequest, reserveRefundAsRead, settleRefund } from '../../src/domain/refunds';
import { createTestMerchant, openTestOrm } from '../helpers/stack';
import { paymentRow } from '../helpers/records';

/**
 * A refund's creation in one read and one conditional statement (readRefundRequest, then
 * reserveRefundAsRead), against PostgreSQL: the refund row and the payment's reserved slot as the
 * locked path writes them, and nothing written, the answer false, when the payment moved after
 * the read or the insert loses a race: createRefund then decides under the payment's lock.
 */
describe('a refund created from one read', () => {
  let orm: MikroORM;
  let merchantId: string;
  const scope = () => ({ merchantId, environment: 'test' as const });

  beforeAll(async () => {
    orm = await openTestOrm();
    merchantId = (await createTestMerchant(orm, 'Refund create merchant')).merchantId;
  });
  afterAll(() => orm.close(true));

  /** A captured 10.00 USD payment. */
  async function capturedPayment(overrides: Partial<Payment> = {}): Promise<Payment> {
    const em = orm.em.fork();
    const payment = paymentRow(em, merchantId, {
      status: 'succeeded',
      providerTransactionId: `txn_${Math.random().toString(36).slice(2)}`,
      ...overrides,
    });
    await em.flush();
    return payment;
  }
  const reload = async (paymentId: string) => {
    const em = orm.em.fork();
    return {
      payment: await em.findOneOrFail(Payment, { id: paymentId }),
      refunds: await em.find(Refund, { payment: paymentId }, { orderBy: { createdAt: 'asc' } }),
    };
  };
  const newRefund = (amountMinor: number, reason: string | null = null) => ({
    id: newId('refund'),
    externalId: `refund-${Math.random()}`,
    amountMinor,
    reason,
  });
  const setPayment = (id: string, changes: Partial<Payment>) =>
    orm.em.fork().nativeUpdate(Payment, { id }, { ...changes, updatedAt: new Date() });

  it('writes the pending refund and reserves its amount on the payment', async () => {
    const payment = await capturedPayment();
    const read = (await readRefundRequest(orm.em, scope(), payment.id, 'unused-external-id'))!;
    expect(read).toMatchObject({ payment: { id: payment.id, status: 'succeeded' }, named: null });
    const refund = newRefund(400, 'duplicate order');
    await expect(reserveRefundAsRead(orm.em, read.payment, refund)).resolves.toBe(true);

    const after = await reload(payment.id);
    expect(after.payment).toMatchObject({ status: 'succeeded', amountRefundedMinor: 0, amountPendingRefundMinor: 400 });
    expect(after.refunds).toHaveLength(1);
    expect(after.refunds[0]).toMatchObject({
      id: refund.id,
      externalId: refund.externalId,
      amountMinor: 400,
      currency: 'USD',
      reason: 'duplicate order',
      status: 'pending',
      failureCode: null,
      failureMessage: null,
      providerRefundId: null,
      providerCallSentAt: null,
    });
    expect(after.refunds[0]!.merchant.id).toBe(merchantId);
    expect(after.refunds[0]!.createdAt.getTime()).toBe(after.payment.updatedAt.getTime());
  });

  it('reads the refund an externalId already names, with its payment and environment', async () => {
    const payment = await capturedPayment();
    const { refund } = await createRefund(orm.em.fork(), scope(), payment.id, { externalId: `named-${Math.random()}` });
    const other = await capturedPayment();
    const read = (await readRefundRequest(orm.em, scope(), other.id, refund.externalId))!;
    expect(read.payment.id).toBe(other.id);
    expect(read.named).toEqual({
      id: refund.id,
      paymentId: payment.id,
      paymentEnvironment: 'test',
      externalId: refund.externalId,
      amountMinor: 1000,
      currency: 'USD',
    });
    await expect(readRefundRequest(orm.em, scope(), newId('payment'), refund.externalId)).resolves.toBeNull();
    await expect(
      readRefundRequest(orm.em, { merchantId, environment: 'live' }, payment.id, refund.externalId),
    ).resolves.toBeNull();
  });

  it('writes nothing when another refund was reserved after the read', async () => {
    const payment = await capturedPayment();
    const read = (await readRefundRequest(orm.em, scope(), payment.id, 'x'))!;
    await createRefund(orm.em.fork(), scope(), payment.id, { externalId: `first-${Math.random()}`, amount: 2 });
    await expect(reserveRefundAsRead(orm.em, read.payment, newRefund(300))).resolves.toBe(false);
    const after = await reload(payment.id);
    expect(after.payment.amountPendingRefundMinor).toBe(200);
    expect(after.refunds.map((r) => r.amountMinor)).toEqual([200]);
  });

  it('writes nothing when a refund settled after the read (the balance it computed is stale)', async () => {
    const payment = await capturedPayment();
    const read = (await readRefundRequest(orm.em, scope(), payment.id, 'x'))!;
    const { refund } = await createRefund(orm.em.fork(), scope(), payment.id, { externalId: `s-${Math.random()}` });
    await settleRefund(orm.em.fork(), refund.id, { status: 'failed', failureCode: 'declined' });
    // Status and balances are as read again, but the refunded amount is not:
    await setPayment(payment.id, { amountRefundedMinor: 100, status: 'succeeded' });
    await expect(reserveRefundAsRead(orm.em, read.payment, newRefund(1000))).resolves.toBe(false);
    const after = await reload(payment.id);
    expect(after.payment).toMatchObject({ amountRefundedMinor: 100, amountPendingRefundMinor: 0 });
    expect(after.refunds.map((r) => r.status)).toEqual(['failed']);
  });

  it('writes nothing when the payment changed status after the read', async () => {
    const payment = await capturedPayment();
    const read = (await readRefundRequest(orm.em, scope(), payment.id, 'x'))!;
    await setPayment(payment.id, { status: 'voided' });
    await expect(reserveRefundAsRead(orm.em, read.payment, newRefund(100))).resolves.toBe(false);
    const after = await reload(payment.id);
    expect(after.payment).toMatchObject({ status: 'voided', amountPendingRefundMinor: 0 });
    expect(after.refunds).toEqual([]);
  });

  it('an externalId taken after the read: false, and the reservation rolled back with the insert', async () => {
    const payment = await capturedPayment();
    const other = await capturedPayment();
    const read = (await readRefundRequest(orm.em, scope(), payment.id, 'x'))!;
    const taken = await createRefund(orm.em.fork(), scope(), other.id, { externalId: `taken-${Math.random()}` });
    const refund = { ...newRefund(100), externalId: taken.refund.externalId };
    await expect(reserveRefundAsRead(orm.em, read.payment, refund)).resolves.toBe(false);
    const after = await reload(payment.id);
    expect(after.payment.amountPendingRefundMinor).toBe(0);
    expect(after.refunds).toEqual([]);
  });

  it('createRefund: a replay answers the named refund without writing; ten requests at once reserve once', async () => {
    const payment = await capturedPayment();
    const externalId = `replay-${Math.random()}`;
    const first = await createRefund(orm.em.fork(), scope(), payment.id, { externalId, amount: 3 });
    const replay = await createRefund(orm.em.fork(), scope(), payment.id, { externalId, amount: 3 });
    expect(replay).toMatchObject({ created: false, payment: { id: payment.id } });
    expect(replay.refund).toMatchObject({ id: first.refund.id, externalId, amountMinor: 300, currency: 'USD' });
    expect((await reload(payment.id)).refunds.map((r) => r.id)).toEqual([first.refund.id]);

    const racing = await capturedPayment();
    const results = await Promise.allSettled(
      Array.from({ length: 10 }, (_, i) =>
        createRefund(orm.em.fork(), scope(), racing.id, { externalId: `race-${i}-${Math.random()}`, amount: 1 }),
      ),
    );
    const created = results.filter((r) => r.status === 'fulfilled');
    const refused = results.flatMap((r) => (r.status === 'rejected' ? [r.reason as AppError] : []));
    expect(created).toHaveLength(1);
    expect(refused.map((e) => e.code)).toEqual(Array(9).fill('refund_in_flight'));
    const winner = (created[0] as PromiseFulfilledResult<Awaited<ReturnType<typeof createRefund>>>).value;
    expect(refused.every((e) => e.details.refundId === winner.refund.id)).toBe(true);
    const after = await reload(racing.id);
    expect(after.payment.amountPendingRefundMinor).toBe(100);
    expect(after.refunds.map((r) => r.id)).toEqual([winner.refund.id]);
  });
});
