import type { MikroORM } from '@mikro-orm/postgresql';
import { Email, Invoice, Merchant, MerchantEvent, Subscription } from '../../src/db/entities';
import {
  applyInvoiceCharge,
  insertSubscription,
  openPeriodInvoice,
  type OpenInvoiceInput,
} from '../../src/domain/subscriptions';
import type { SubscriptionStatus } from '../../src/domain/subscriptionPlan';
import { createTestMerchant, openTestOrm, type TestMerchant } from '../helpers/stack';

/**
 * The renewal's one-statement state changes (issue 12) against PostgreSQL: they record what the
 * general path records, all or nothing, once under concurrent calls, and leave every other case
 * (activation, callbacks, retries) to the general path.
 */
describe('renewal state changes in one statement', () => {
  let orm: MikroORM;
  let merchant: TestMerchant;

  beforeAll(async () => {
    orm = await openTestOrm();
    merchant = await createTestMerchant(orm, 'Renewal statements merchant');
  });
  afterAll(() => orm.close());

  const DAY = 86_400_000;

  /** A subscription row in `status`, with period 0 paid (so the next is a renewal). */
  async function subscriptionIn(
    status: SubscriptionStatus,
    extra: { callbackUrl?: string; customerEmail?: string | null } = {},
  ): Promise<{ id: string; phaseId: string }> {
    const em = orm.em.fork();
    const { subscription, phases } = insertSubscription(em, await em.findOneOrFail(Merchant, merchant.merchantId), {
      merchantId: merchant.merchantId,
      environment: 'test',
      processor: 'sandbox',
      externalId: `renewal-${Date.now()}-${Math.random()}`,
      amountMinor: 1250,
      currency: 'USD',
      billingIntervalDays: 30,
      cardToken: 'tok_visa',
      ...(extra.customerEmail === null ? {} : { customer: { email: extra.customerEmail ?? 'ada@example.com' } }),
      description: 'Gold plan',
      ...(extra.callbackUrl ? { callbackUrl: extra.callbackUrl } : {}),
      retryScheduleDays: [1, 2],
      phases: [],
    });
    subscription.status = status;
    await em.flush();
    return { id: subscription.id, phaseId: phases[0]!.id };
  }

  const period = (sub: { id: string; phaseId: string }, index: number): OpenInvoiceInput => ({
    subscriptionId: sub.id,
    periodIndex: index,
    phaseId: sub.phaseId,
    amountMinor: 1250,
    periodStart: new Date(Date.UTC(2026, 0, 1) + index * 30 * DAY),
    periodEnd: new Date(Date.UTC(2026, 0, 1) + (index + 1) * 30 * DAY),
  });

  const invoiceOf = (id: string) => orm.em.fork().findOneOrFail(Invoice, { id }, { populate: ['subscription'] });
  const subscriptionRow = (id: string) => orm.em.fork().findOneOrFail(Subscription, { id });
  const emailsOf = (subscriptionId: string) =>
    orm.em.fork().find(Email, { dedupeKey: { $like: `${subscriptionId}:%` } }, { orderBy: { createdAt: 'asc' } });

  it('opens a period: the invoice and the current period, once, however many calls race', async () => {
    const sub = await subscriptionIn('active');
    const input = period(sub, 1);
    const opened = await Promise.all(Array.from({ length: 6 }, () => openPeriodInvoice(orm.em.fork(), input)));
    const ids = new Set(opened.map((o) => (o.kind === 'open' ? o.invoiceId : o.kind)));
    expect([...ids]).toHaveLength(1);
    for (const o of opened) expect(o).toMatchObject({ kind: 'open', attempts: 0, outbox: { status: 'active' } });

    const invoices = await orm.em.fork().find(Invoice, { subscription: sub.id });
    expect(invoices).toHaveLength(1);
    expect(invoices[0]).toMatchObject({ periodIndex: 1, amountMinor: 1250, currency: 'USD', status: 'open' });
    expect(invoices[0]!.periodStart.toISOString()).toBe(input.periodStart.toISOString());
    const s = await subscriptionRow(sub.id);
    expect(s.currentPeriodStart?.toISOString()).toBe(input.periodStart.toISOString());
    expect(s.currentPeriodEnd?.toISOString()).toBe(input.periodEnd.toISOString());
  });

  it('a cancelled subscription opens no period', async () => {
    const sub = await subscriptionIn('cancelled');
    expect(await openPeriodInvoice(orm.em.fork(), period(sub, 1))).toEqual({ kind: 'cancelled' });
    expect(await orm.em.fork().count(Invoice, { subscription: sub.id })).toBe(0);
    expect(await openPeriodInvoice(orm.em.fork(), { ...period(sub, 1), subscriptionId: 'sub_missing' })).toEqual({
      kind: 'missing',
    });
  });

  it('a past_due subscription paid: active, invoice paid, one receipt, once under 8 concurrent calls', async () => {
    const sub = await subscriptionIn('past_due');
    const opened = await openPeriodInvoice(orm.em.fork(), period(sub, 1));
    if (opened.kind !== 'open') throw new Error(`not opened: ${opened.kind}`);
    const invoice = await invoiceOf(opened.invoiceId);

    const applied = await Promise.all(
      Array.from({ length: 8 }, () =>
        applyInvoiceCharge(orm.em, invoice, 1, { kind: 'paid', transactionId: 'txn_renewal_1' }, null),
      ),
    );
    const emails = await emailsOf(sub.id);
    expect(emails).toHaveLength(1);
    expect(emails[0]).toMatchObject({
      dedupeKey: `${sub.id}:email:receipt:${invoice.id}`,
      to: 'ada@example.com',
      subject: 'Payment receipt: 12.50 USD for Gold plan',
    });
    expect(emails[0]!.text).toContain('Provider transaction: txn_renewal_1');
    expect(emails[0]!.text).toContain(`Invoice: ${invoice.id}`);
    // Every call answers the one receipt (the first recorded it, the others find it unsent).
    for (const a of applied)
      expect(a).toEqual({ kind: 'paid', outbox: { status: 'active', emailIds: [emails[0]!.id], eventIds: [] } });

    const paid = await invoiceOf(invoice.id);
    expect(paid).toMatchObject({
      status: 'paid',
      attempts: 1,
      providerTransactionId: 'txn_renewal_1',
      failureCode: null,
    });
    expect(paid.paidAt).not.toBeNull();
    expect((await subscriptionRow(sub.id)).status).toBe('active');
  });

  it('a capture after a cancellation: the invoice paid (the money moved), the subscription stays cancelled', async () => {
    const sub = await subscriptionIn('active');
    const opened = await openPeriodInvoice(orm.em.fork(), period(sub, 1));
    if (opened.kind !== 'open') throw new Error(`not opened: ${opened.kind}`);
    const invoice = await invoiceOf(opened.invoiceId);
    await orm.em.fork().nativeUpdate(Subscription, { id: sub.id }, { status: 'cancelled' });
    await orm.em.fork().nativeUpdate(Invoice, { id: invoice.id }, { status: 'void', voidedAt: new Date() });

    const applied = await applyInvoiceCharge(orm.em, invoice, 1, { kind: 'paid', transactionId: 'txn_late' }, null);
    expect(applied).toMatchObject({ kind: 'paid', outbox: { status: 'cancelled' } });
    const paid = await invoiceOf(invoice.id);
    expect(paid).toMatchObject({ status: 'paid', voidedAt: null, providerTransactionId: 'txn_late' });
    expect((await subscriptionRow(sub.id)).status).toBe('cancelled');
    expect(await emailsOf(sub.id)).toHaveLength(1);
  });

  it('no customer email: the receipt goes to the merchant', async () => {
    const sub = await subscriptionIn('active', { customerEmail: null });
    const opened = await openPeriodInvoice(orm.em.fork(), period(sub, 1));
    if (opened.kind !== 'open') throw new Error(`not opened: ${opened.kind}`);
    await applyInvoiceCharge(orm.em, await invoiceOf(opened.invoiceId), 1, { kind: 'paid', transactionId: 't' }, null);
    expect((await emailsOf(sub.id)).map((e) => e.to)).toEqual(['merchant@example.com']);
  });

  it('activation and callbacks take the general path: the activated email and the events are recorded', async () => {
    const sub = await subscriptionIn('created', { callbackUrl: 'https://merchant.example/hooks' });
    const opened = await openPeriodInvoice(orm.em.fork(), period(sub, 0));
    if (opened.kind !== 'open') throw new Error(`not opened: ${opened.kind}`);
    const applied = await applyInvoiceCharge(
      orm.em,
      await invoiceOf(opened.invoiceId),
      1,
      { kind: 'paid', transactionId: 'txn_first' },
      null,
    );
    expect(applied).toMatchObject({ kind: 'paid', outbox: { status: 'active' } });
    expect((await emailsOf(sub.id)).map((e) => e.dedupeKey.split(':')[2])).toEqual(['activated', 'receipt']);
    const events = await orm.em.fork().find(MerchantEvent, { resourceId: sub.id });
    expect(events.map((e) => e.type).sort()).toEqual(['subscription.activated', 'subscription.charge_succeeded']);
    if (applied.kind !== 'paid') throw new Error('not paid');
    expect(applied.outbox.eventIds.sort()).toEqual(events.map((e) => e.id).sort());
  });

  it('a retried attempt already recorded answers what was recorded, and changes nothing', async () => {
    const sub = await subscriptionIn('active');
    const opened = await openPeriodInvoice(orm.em.fork(), period(sub, 1));
    if (opened.kind !== 'open') throw new Error(`not opened: ${opened.kind}`);
    const loaded = await invoiceOf(opened.invoiceId);
    const first = await applyInvoiceCharge(orm.em, loaded, 1, { kind: 'paid', transactionId: 'txn_a' }, null);
    // The same (stale) invoice object again, as a retried activity that loaded it before would.
    const again = await applyInvoiceCharge(orm.em, loaded, 1, { kind: 'paid', transactionId: 'txn_b' }, null);
    expect(again).toEqual(first);
    expect((await invoiceOf(loaded.id)).providerTransactionId).toBe('txn_a');
    // Opening the same period again finds the invoice (the general path).
    expect(await openPeriodInvoice(orm.em.fork(), period(sub, 1))).toMatchObject({
      kind: 'paid',
      invoiceId: loaded.id,
      attempts: 1,
    });
  });
});
