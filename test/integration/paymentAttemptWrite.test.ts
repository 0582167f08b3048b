import type { MikroORM } from '@mikro-orm/postgresql';
import { MerchantEvent, Payment } from '../../src/db/entities';
import {
  applyProviderPayment,
  applyProviderPaymentToRead,
  claimPaymentForAttempt,
  findPaymentView,
  presentPayment,
  type PaymentForAttempt,
} from '../../src/domain/payments';
import type { ProviderPayment } from '../../src/providers/types';
import { heardWithin, listeningHints } from '../helpers/outcomeHints';
import { createTestMerchant, openTestOrm } from '../helpers/stack';
import { paymentRow } from '../helpers/records';

/**
 * A payment attempt's write in one statement (applyProviderPaymentToRead), against PostgreSQL:
 * it writes what the ORM's path writes (row and outbox event, whose payload is the payment as
 * GET shows it afterwards), and it changes nothing, answering null, whenever the row moved after
 * the attempt read it: the general path then decides.
 */
describe('the payment attempt written in one statement', () => {
  let orm: MikroORM;
  let merchantId: string;

  beforeAll(async () => {
    orm = await openTestOrm();
    merchantId = (await createTestMerchant(orm, 'Attempt write merchant')).merchantId;
  });
  afterAll(() => orm.close(true));

  async function createdPayment(overrides: Partial<Payment> = {}): Promise<PaymentForAttempt> {
    const em = orm.em.fork();
    const payment = paymentRow(em, merchantId, {
      callbackUrl: 'https://merchant.example/hooks',
      cardToken: 'tok_success',
      ...overrides,
    });
    await em.flush();
    return (await claimPaymentForAttempt(orm.em, payment.id))!.payment;
  }

  const providerPayment = (p: PaymentForAttempt, over: Partial<ProviderPayment> = {}): ProviderPayment => ({
    transactionId: `txn_${p.id}`,
    status: 'succeeded',
    amountMinor: p.amountMinor,
    currency: p.currency,
    failureCode: null,
    failureMessage: null,
    redirectUrl: null,
    savedCardToken: null,
    actionUrl: null,
    ...over,
  });

  const reload = (id: string) => orm.em.fork().findOneOrFail(Payment, { id });
  const eventsOf = (id: string) =>
    orm.em.fork().find(MerchantEvent, { resourceId: id }, { orderBy: { createdAt: 'asc' } });

  it('reads the payment for its attempt and marks its call sent in one statement, saying whether one was outstanding', async () => {
    const em = orm.em.fork();
    const payment = paymentRow(em, merchantId, { cardToken: 'tok_success' });
    await em.flush();
    const first = await claimPaymentForAttempt(orm.em, payment.id);
    expect(first).toMatchObject({
      sentBefore: false,
      payment: { id: payment.id, status: 'created', cardToken: 'tok_success' },
    });
    const markedAt = (await reload(payment.id)).providerCallSentAt;
    expect(markedAt).toBeInstanceOf(Date);
    // A second attempt (a worker died mid-call): the earlier call is outstanding; the mark stays as it was.
    expect(await claimPaymentForAttempt(orm.em, payment.id)).toMatchObject({ sentBefore: true });
    expect((await reload(payment.id)).providerCallSentAt).toEqual(markedAt);
    // A settled payment is read, never marked.
    const settled = paymentRow(em, merchantId, { status: 'succeeded' });
    await em.flush();
    expect(await claimPaymentForAttempt(orm.em, settled.id)).toMatchObject({
      sentBefore: false,
      payment: { status: 'succeeded' },
    });
    expect((await reload(settled.id)).providerCallSentAt).toBeNull();
    expect(await claimPaymentForAttempt(orm.em, 'pay_01NOSUCHPAYMENT000000000000')).toBeNull();
  });

  it('a capture: the payment succeeded, one event whose payload is the payment as it now is', async () => {
    const read = await createdPayment({ saveCardEnabled: true });
    const pp = providerPayment(read, { savedCardToken: 'card_saved_1' });

    await expect(applyProviderPaymentToRead(orm.em, read, pp)).resolves.toBe('settled');

    const row = await reload(read.id);
    expect(row).toMatchObject({
      status: 'succeeded',
      providerTransactionId: pp.transactionId,
      savedCardToken: 'card_saved_1',
      failureCode: null,
    });
    expect(row.updatedAt.getTime()).toBeGreaterThanOrEqual(read.updatedAt.getTime());
    const events = await eventsOf(read.id);
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({
      type: 'payment.succeeded',
      dedupeKey: `${read.id}:payment.succeeded`,
      callbackUrl: 'https://merchant.example/hooks',
      attempts: 0,
      deliveredAt: null,
    });
    expect(events[0]!.payload).toMatchObject({ id: events[0]!.id, type: 'payment.succeeded' });
    expect(events[0]!.payload.data).toEqual(JSON.parse(JSON.stringify(presentPayment(row))));
  });

  it('the same write as the ORM path for a decline (row and event payload)', async () => {
    const viaStatement = await createdPayment();
    const viaOrm = await createdPayment();
    const declined = { status: 'failed', failureCode: 'card_declined', failureMessage: 'Declined.' } as const;

    await expect(
      applyProviderPaymentToRead(orm.em, viaStatement, providerPayment(viaStatement, declined)),
    ).resolves.toBe('settled');
    await applyProviderPayment(orm.em.fork(), viaOrm.id, providerPayment(viaOrm, declined));

    const [a, b] = [await reload(viaStatement.id), await reload(viaOrm.id)];
    const written = (p: Payment) => ({
      status: p.status,
      failureCode: p.failureCode,
      failureMessage: p.failureMessage,
      providerTransactionId: p.providerTransactionId === `txn_${p.id}`,
      redirectUrl: p.redirectUrl,
      savedCardToken: p.savedCardToken,
    });
    expect(written(a)).toEqual(written(b));
    expect(a).toMatchObject({ status: 'failed', failureCode: 'card_declined', failureMessage: 'Declined.' });
    const [[ea], [eb]] = [await eventsOf(a.id), await eventsOf(b.id)];
    expect(ea!.type).toBe('payment.failed');
    expect(eb!.type).toBe('payment.failed');
    expect(ea!.payload.data).toEqual(JSON.parse(JSON.stringify(presentPayment(a))));
    expect(eb!.payload.data).toEqual(JSON.parse(JSON.stringify(presentPayment(b))));
  });

  it('a decline without a code gets ours', async () => {
    const read = await createdPayment();
    await applyProviderPaymentToRead(orm.em, read, providerPayment(read, { status: 'failed' }));
    expect(await reload(read.id)).toMatchObject({
      status: 'failed',
      failureCode: 'payment_failed',
      failureMessage: 'The payment failed.',
    });
  });

  it('a hosted payment page: still created, with its transaction and redirect, and no event', async () => {
    const read = await createdPayment({ cardToken: null });
    const pp = providerPayment(read, { status: 'pending', redirectUrl: 'https://sandbox.example/pay/1' });

    await expect(applyProviderPaymentToRead(orm.em, read, pp)).resolves.toBe('created');

    expect(await reload(read.id)).toMatchObject({
      status: 'created',
      providerTransactionId: pp.transactionId,
      redirectUrl: 'https://sandbox.example/pay/1',
    });
    expect(await eventsOf(read.id)).toHaveLength(0);
  });

  it.each([
    ['settled by another path', { status: 'succeeded', providerTransactionId: 'txn_other' }],
    ['given a transaction by another path', { providerTransactionId: 'txn_other' }],
    ['given a redirect by another path', { redirectUrl: 'https://sandbox.example/pay/other' }],
  ] as const)('a row %s after the read: nothing written, null', async (_, change) => {
    const read = await createdPayment();
    await orm.em.fork().nativeUpdate(Payment, { id: read.id }, change);
    const before = await reload(read.id);

    await expect(applyProviderPaymentToRead(orm.em, read, providerPayment(read))).resolves.toBeNull();

    const after = await reload(read.id);
    expect(after).toMatchObject({ ...change, status: before.status, updatedAt: before.updatedAt });
    expect(await eventsOf(read.id)).toHaveLength(0);
  });

  it('a provider record of another amount: nothing written, null (the general path raises it)', async () => {
    const read = await createdPayment();
    await expect(
      applyProviderPaymentToRead(orm.em, read, providerPayment(read, { amountMinor: read.amountMinor + 1 })),
    ).resolves.toBeNull();
    expect(await reload(read.id)).toMatchObject({ status: 'created', providerTransactionId: null });
  });

  it('applied twice from the same read (a retried activity): the second writes nothing, one event', async () => {
    const read = await createdPayment();
    const pp = providerPayment(read);
    await expect(applyProviderPaymentToRead(orm.em, read, pp)).resolves.toBe('settled');
    await expect(applyProviderPaymentToRead(orm.em, read, pp)).resolves.toBeNull();
    expect(await eventsOf(read.id)).toHaveLength(1);
  });

  it('a payment without a callbackUrl: settled, its event recorded (the event log) with nowhere to deliver it', async () => {
    const read = await createdPayment({ callbackUrl: null });
    await expect(applyProviderPaymentToRead(orm.em, read, providerPayment(read))).resolves.toBe('settled');
    expect((await reload(read.id)).status).toBe('succeeded');
    const events = await eventsOf(read.id);
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({
      type: 'payment.succeeded',
      callbackUrl: null,
      environment: 'test',
      objectId: read.id,
      sequence: 1,
    });
  });
  it('tells a waiting API when it commits, with the payment as GET shows it; nothing when it writes nothing', async () => {
    const listener = await listeningHints(`attempt-hints-${process.pid}`);
    const json = (value: unknown) => JSON.parse(JSON.stringify(value)) as unknown;
    const asGet = async (id: string) =>
      json(presentPayment((await findPaymentView(orm.em, id, { merchantId, environment: 'test' }))!));
    try {
      const captured = await createdPayment({ metadata: { order: 'o-1' } });
      const settled = listener.waitFor(captured.id);
      await applyProviderPaymentToRead(orm.em, captured, providerPayment(captured));
      await expect(settled.outcome).resolves.toEqual({ kind: 'settled', payment: await asGet(captured.id) });
      settled.cancel();

      const hosted = await createdPayment({ cardToken: null });
      const created = listener.waitFor(hosted.id);
      const page = { status: 'pending' as const, redirectUrl: 'https://sandbox.example/pay/h' };
      await applyProviderPaymentToRead(orm.em, hosted, providerPayment(hosted, page));
      await expect(created.outcome).resolves.toEqual({ kind: 'created', payment: await asGet(hosted.id) });
      created.cancel();

      const moved = await createdPayment();
      await orm.em.fork().nativeUpdate(Payment, { id: moved.id }, { status: 'failed' });
      const none = listener.waitFor(moved.id);
      await expect(applyProviderPaymentToRead(orm.em, moved, providerPayment(moved))).resolves.toBeNull();
      expect(await heardWithin(none)).toBe('none');
      none.cancel();
    } finally {
      await listener.close();
    }
  });
});
