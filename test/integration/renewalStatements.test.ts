import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { MikroORM } from '@mikro-orm/postgresql';
import type { Pool, PoolClient } from 'pg';
import {
  Email,
  Invoice,
  Merchant,
  MerchantEvent,
  Subscription,
  SubscriptionPhase,
  TestClock,
} from '../../src/db/entities';
import {
  applyInvoiceCharge,
  findSubscriptionView,
  insertSubscription,
  loadInvoiceForCharge,
  openPeriodInvoice,
  type InvoiceForCharge,
  type OpenInvoiceInput,
} from '../../src/domain/subscriptions';
import type { SubscriptionStatus } from '../../src/rules/subscriptionPlan';
import { startMailCatcher, type MailCatcher } from '../../dev/mail/catcher';
import { createMailer, EmailBusyError, EMAIL_CLAIM_SECONDS } from '../../activities/emails';
import type { ActivityDeps } from '../../activities/deps';
import { createTestMerchant, openTestOrm, type TestMerchant } from '../helpers/stack';
import { createMerchant } from '../../src/domain/merchants';
import { WITHHELD_TEST_EMAIL } from '../../src/domain/emails';
import { newId } from '../../src/ids';

/**
 * A renewal's state changes against PostgreSQL (decision 0032): the period's invoice opened in one
 * statement (every other case left to the general path), and every capture recorded by the general
 * path (amended for issue 43), once under concurrent calls: the invoice paid, one receipt (claimed
 * for the charge to send at once when asked), one `subscription.charge_succeeded` carrying the
 * subscription as the API answers it, with or without a callbackUrl.
 */
describe('renewal state changes', () => {
  let orm: MikroORM;
  let merchant: TestMerchant;
  let catcher: MailCatcher;
  let mailDir: string;

  beforeAll(async () => {
    orm = await openTestOrm();
    merchant = await createTestMerchant(orm, 'Renewal statements merchant');
    mailDir = fs.mkdtempSync(path.join(os.tmpdir(), 'renewal-mail-'));
    catcher = await startMailCatcher({ port: 0, dir: mailDir });
  });
  afterAll(async () => {
    await catcher.close();
    await orm.close();
    fs.rmSync(mailDir, { recursive: true, force: true });
  });

  const DAY = 86_400_000;
  /** Emails addressed as outside production (decision 0066). */
  const dev = { profile: { production: false } };

  /** A subscription row in `status`, with period 0 paid (so the next is a renewal). */
  async function subscriptionIn(
    status: SubscriptionStatus,
    extra: {
      callbackUrl?: string;
      customerEmail?: string | null;
      noCard?: boolean;
      environment?: 'test' | 'live';
      merchantId?: string;
      externalId?: string;
      testClockId?: string;
      phases?: Array<{ name: string; iterations: number; amountMinor: number; billingIntervalDays: number }>;
    } = {},
  ): Promise<{ id: string; phaseId: string }> {
    const em = orm.em.fork();
    const merchantId = extra.merchantId ?? merchant.merchantId;
    const testClock = extra.testClockId ? await em.findOneOrFail(TestClock, extra.testClockId) : undefined;
    const { subscription, phases } = insertSubscription(em, await em.findOneOrFail(Merchant, merchantId), {
      merchantId,
      environment: extra.environment ?? 'test',
      processor: 'sandbox',
      externalId: extra.externalId ?? `renewal-${Date.now()}-${Math.random()}`,
      amountMinor: 1250,
      currency: 'USD',
      billingIntervalDays: 30,
      ...(extra.noCard ? {} : { cardToken: 'tok_visa' }),
      ...(extra.customerEmail === null ? {} : { customer: { email: extra.customerEmail ?? 'ada@example.com' } }),
      description: 'Gold plan',
      ...(extra.callbackUrl ? { callbackUrl: extra.callbackUrl } : {}),
      retryScheduleDays: [1, 2],
      phases: extra.phases ?? [],
      ...(testClock ? { testClock } : {}),
    });
    subscription.status = status;
    await em.flush();
    // The phase of period 0 (the first listed), as the workflow bills it.
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

  /** Opens period `index` (not asking for the charge's mark), which must be a new open invoice. */
  async function opening(sub: { id: string; phaseId: string }, index: number) {
    const opened = await openPeriodInvoice(orm.em.fork(), period(sub, index), dev);
    if (opened.kind !== 'open') throw new Error(`not opened: ${opened.kind}`);
    return opened;
  }

  const invoiceOf = (id: string) => orm.em.fork().findOneOrFail(Invoice, { id }, { populate: ['subscription'] });

  /** Opens period `index` and records its first attempt captured, as a charge does. */
  async function payingFirstAttempt(
    sub: { id: string; phaseId: string },
    index: number,
    transactionId: string,
    options?: { claimReceiptSeconds?: number },
  ) {
    const opened = await opening(sub, index);
    const invoice = await invoiceOf(opened.invoiceId);
    return applyInvoiceCharge(orm.em, invoice, 1, { kind: 'paid', transactionId }, null, { ...options, ...dev });
  }
  const subscriptionRow = (id: string) => orm.em.fork().findOneOrFail(Subscription, { id });
  const emailsOf = (subscriptionId: string) =>
    orm.em.fork().find(Email, { dedupeKey: { $like: `${subscriptionId}:%` } }, { orderBy: { createdAt: 'asc' } });
  const eventsOf = (subscriptionId: string, type: string) =>
    orm.em.fork().find(MerchantEvent, { resourceId: subscriptionId, type }, { orderBy: { createdAt: 'asc' } });
  /** The subscription as the API answers it now (GET /subscriptions/{id}). */
  const apiView = (subscriptionId: string) =>
    findSubscriptionView(orm.em, subscriptionId, { merchantId: merchant.merchantId, environment: 'test' });

  it('opens a period: the invoice and the current period, once, however many calls race', async () => {
    const sub = await subscriptionIn('active');
    const input = period(sub, 1);
    const opened = await Promise.all(Array.from({ length: 6 }, () => openPeriodInvoice(orm.em.fork(), input, dev)));
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

  /** What a charge reads of an invoice, from the entities the ORM loads (the reference). */
  async function chargeReadByOrm(invoiceId: string): Promise<InvoiceForCharge> {
    const i = await invoiceOf(invoiceId);
    const s = i.subscription;
    const em = orm.em.fork();
    const phases = await em.find(SubscriptionPhase, { subscription: s.id }, { orderBy: { position: 'asc' } });
    const merchantRow = await em.findOneOrFail(Merchant, s.merchant.id);
    const [version] = await em
      .getConnection()
      .execute<Array<{ xmin: string }>>(`select xmin::text as xmin from subscriptions where id = ?`, [s.id]);
    return {
      id: i.id,
      amountMinor: i.amountMinor,
      currency: i.currency,
      status: i.status,
      attempts: i.attempts,
      periodStart: i.periodStart,
      periodEnd: i.periodEnd,
      providerTransactionId: i.providerTransactionId,
      providerCallSentAt: i.providerCallSentAt,
      createdAt: i.createdAt,
      subscription: {
        id: s.id,
        merchant: { id: s.merchant.id },
        externalId: s.externalId,
        environment: s.environment,
        processor: s.processor,
        status: s.status,
        cardToken: s.cardToken,
        customerId: s.customerId,
        paymentMethodId: s.paymentMethodId,
        callbackUrl: s.callbackUrl,
        description: s.description,
        customer: s.customer,
        billingIntervalDays: s.billingIntervalDays,
        amountMinor: s.amountMinor,
        currency: s.currency,
        cancellationReason: s.cancellationReason,
        currentPeriodEnd: s.currentPeriodEnd,
      },
      snapshot: {
        version: version!.xmin,
        subscription: {
          id: s.id,
          externalId: s.externalId,
          amountMinor: s.amountMinor,
          currency: s.currency,
          billingIntervalDays: s.billingIntervalDays,
          status: s.status,
          currentPeriodStart: s.currentPeriodStart,
          currentPeriodEnd: s.currentPeriodEnd,
          redirectUrl: s.redirectUrl,
          clockCreatedAt: s.clockCreatedAt,
          createdAt: s.createdAt,
          updatedAt: s.updatedAt,
          cancelledAt: s.cancelledAt,
          cancellationReason: s.cancellationReason,
          environment: s.environment,
          processor: s.processor,
          customer: s.customer,
          customerId: s.customerId,
          description: s.description,
          metadata: s.metadata,
          callbackUrl: s.callbackUrl,
          returnUrl: s.returnUrl,
          retryScheduleDays: s.retryScheduleDays,
          testClock: s.testClock ? { id: s.testClock.id } : null,
        },
        phases: phases.map((p) => ({
          id: p.id,
          name: p.name,
          position: p.position,
          iterations: p.iterations,
          amountMinor: p.amountMinor,
          billingIntervalDays: p.billingIntervalDays,
        })),
        merchantEmail: merchantRow.email,
      },
    };
  }

  it('a charge reads without the ORM what the ORM loads: from the opening statement, and by id', async () => {
    const sub = await subscriptionIn('active', { customerEmail: 'grace@example.com' });
    const opened = await openPeriodInvoice(orm.em.fork(), period(sub, 1), { markChargeSent: true, ...dev });
    if (opened.kind !== 'open') throw new Error(`not opened: ${opened.kind}`);
    expect(opened.chargeMarkedSent).toBe(true);
    const reference = await chargeReadByOrm(opened.invoiceId);
    expect(reference.providerCallSentAt).not.toBeNull();
    // The opening's own answer: the same values, dates as Date objects.
    expect(opened.forCharge).toEqual(reference);
    expect(reference.periodStart).toBeInstanceOf(Date);
    // The prepared read by id.
    expect(await loadInvoiceForCharge(orm.em, opened.invoiceId)).toEqual(reference);
    expect(await loadInvoiceForCharge(orm.em, 'invoice_missing')).toBeNull();
    // The receipt a capture records names the period from what the charge read.
    const read = (await loadInvoiceForCharge(orm.em, opened.invoiceId))!;
    expect(
      await applyInvoiceCharge(orm.em, read, 1, { kind: 'paid', transactionId: 'txn_read' }, null, dev),
    ).toMatchObject({
      kind: 'paid',
    });
    const [receipt] = await emailsOf(sub.id);
    expect(receipt!.text).toContain(`Period: ${period(sub, 1).periodStart.toISOString()} to `);
    expect(receipt!.text).toContain('Provider transaction: txn_read');
    // Opened without asking for the charge: no charge read is answered.
    const plain = await openPeriodInvoice(orm.em.fork(), period(await subscriptionIn('active'), 1), dev);
    expect(plain.kind === 'open' && 'forCharge' in plain).toBe(false);
  });

  it('a cancelled subscription opens no period', async () => {
    const sub = await subscriptionIn('cancelled');
    expect(await openPeriodInvoice(orm.em.fork(), period(sub, 1), dev)).toEqual({ kind: 'cancelled' });
    expect(await orm.em.fork().count(Invoice, { subscription: sub.id })).toBe(0);
    expect(await openPeriodInvoice(orm.em.fork(), { ...period(sub, 1), subscriptionId: 'sub_missing' }, dev)).toEqual({
      kind: 'missing',
    });
  });

  it('a past_due subscription paid: active, invoice paid, one receipt, one event, once under 8 concurrent calls', async () => {
    const sub = await subscriptionIn('past_due');
    const opened = await opening(sub, 1);
    const invoice = await invoiceOf(opened.invoiceId);

    const applied = await Promise.all(
      Array.from({ length: 8 }, () =>
        applyInvoiceCharge(orm.em, invoice, 1, { kind: 'paid', transactionId: 'txn_renewal_1' }, null, dev),
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
    // No callbackUrl: the event is still recorded (the event log, decision 0065), once, with the
    // subscription as the API answers it after the change; no callback to deliver, so no event id.
    const events = await eventsOf(sub.id, 'subscription.charge_succeeded');
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ dedupeKey: `${sub.id}:charge_succeeded:${invoice.id}`, callbackUrl: null });
    expect(events[0]!.payload['data']).toEqual(await apiView(sub.id));
    expect(events[0]!.payload['data']).toMatchObject({
      status: 'active',
      latestInvoice: { id: invoice.id, status: 'paid' },
    });
  });

  it('renewals of a subscription without a callbackUrl: one charge_succeeded per paid invoice, carrying its view', async () => {
    const sub = await subscriptionIn('active');
    const invoiceIds: string[] = [];
    for (const index of [1, 2, 3]) {
      const opened = await opening(sub, index);
      const invoice = await loadInvoiceForCharge(orm.em, opened.invoiceId);
      // Retried and concurrent calls of each capture (a retried activity, a racing worker).
      const applied = await Promise.all(
        Array.from({ length: 8 }, () =>
          applyInvoiceCharge(orm.em, invoice!, 1, { kind: 'paid', transactionId: `txn_${index}` }, null, dev),
        ),
      );
      for (const a of applied) expect(a).toMatchObject({ kind: 'paid', outbox: { status: 'active', eventIds: [] } });
      invoiceIds.push(opened.invoiceId);
      // Each event carries the view of its own change: this period's invoice as the latest, paid.
      const [event] = (await eventsOf(sub.id, 'subscription.charge_succeeded')).slice(-1);
      expect(event!.payload['data']).toEqual(await apiView(sub.id));
    }
    const events = await eventsOf(sub.id, 'subscription.charge_succeeded');
    expect(events.map((e) => e.dedupeKey)).toEqual(invoiceIds.map((id) => `${sub.id}:charge_succeeded:${id}`));
    expect(events.map((e) => (e.payload['data'] as { latestInvoice: { id: string } }).latestInvoice.id)).toEqual(
      invoiceIds,
    );
    expect(await orm.em.fork().count(Invoice, { subscription: sub.id, status: 'paid' })).toBe(3);
    expect(await emailsOf(sub.id)).toHaveLength(3);
    // Nothing else was recorded for a renewal (no activation: the subscription was active).
    expect(await orm.em.fork().count(MerchantEvent, { resourceId: sub.id })).toBe(3);
  });

  it('a capture after a cancellation: the invoice paid (the money moved), the subscription stays cancelled', async () => {
    const sub = await subscriptionIn('active');
    const opened = await opening(sub, 1);
    const invoice = await invoiceOf(opened.invoiceId);
    await orm.em.fork().nativeUpdate(Subscription, { id: sub.id }, { status: 'cancelled' });
    await orm.em.fork().nativeUpdate(Invoice, { id: invoice.id }, { status: 'void', voidedAt: new Date() });

    const applied = await applyInvoiceCharge(
      orm.em,
      invoice,
      1,
      { kind: 'paid', transactionId: 'txn_late' },
      null,
      dev,
    );
    expect(applied).toMatchObject({ kind: 'paid', outbox: { status: 'cancelled' } });
    const paid = await invoiceOf(invoice.id);
    expect(paid).toMatchObject({ status: 'paid', voidedAt: null, providerTransactionId: 'txn_late' });
    expect((await subscriptionRow(sub.id)).status).toBe('cancelled');
    expect(await emailsOf(sub.id)).toHaveLength(1);
    const events = await eventsOf(sub.id, 'subscription.charge_succeeded');
    expect(events).toHaveLength(1);
    expect(events[0]!.payload['data']).toMatchObject({
      status: 'cancelled',
      latestInvoice: { id: invoice.id, status: 'paid' },
    });
  });

  it('no customer email: the receipt goes to the merchant', async () => {
    const sub = await subscriptionIn('active', { customerEmail: null });
    await payingFirstAttempt(sub, 1, 't');
    expect((await emailsOf(sub.id)).map((e) => e.to)).toEqual(['merchant@example.com']);
  });

  it('a first capture activates: the activated email and both events are recorded, named for the callback', async () => {
    const sub = await subscriptionIn('created', { callbackUrl: 'https://merchant.example/hooks' });
    const applied = await payingFirstAttempt(sub, 0, 'txn_first');
    expect(applied).toMatchObject({ kind: 'paid', outbox: { status: 'active' } });
    expect((await emailsOf(sub.id)).map((e) => e.dedupeKey.split(':')[2])).toEqual(['activated', 'receipt']);
    const events = await orm.em.fork().find(MerchantEvent, { resourceId: sub.id });
    expect(events.map((e) => e.type).sort()).toEqual(['subscription.activated', 'subscription.charge_succeeded']);
    if (applied.kind !== 'paid') throw new Error('not paid');
    expect(applied.outbox.eventIds.sort()).toEqual(events.map((e) => e.id).sort());
  });

  it('a retried attempt already recorded answers what was recorded, and changes nothing', async () => {
    const sub = await subscriptionIn('active', { callbackUrl: 'https://merchant.example/hooks' });
    const opened = await opening(sub, 1);
    const loaded = await invoiceOf(opened.invoiceId);
    const first = await applyInvoiceCharge(orm.em, loaded, 1, { kind: 'paid', transactionId: 'txn_a' }, null, dev);
    // The same (stale) invoice object again, as a retried activity that loaded it before would.
    const again = await applyInvoiceCharge(orm.em, loaded, 1, { kind: 'paid', transactionId: 'txn_b' }, null, dev);
    expect(again).toEqual(first);
    if (first.kind !== 'paid') throw new Error('not paid');
    // With a callbackUrl the event is named for delivery; the retry names the same one.
    const [event] = await eventsOf(sub.id, 'subscription.charge_succeeded');
    expect(first.outbox.eventIds).toEqual([event!.id]);
    expect(await eventsOf(sub.id, 'subscription.charge_succeeded')).toHaveLength(1);
    expect((await invoiceOf(loaded.id)).providerTransactionId).toBe('txn_a');
    // Opening the same period again finds the invoice (the general path).
    expect(await openPeriodInvoice(orm.em.fork(), period(sub, 1), dev)).toMatchObject({
      kind: 'paid',
      invoiceId: loaded.id,
      attempts: 1,
    });
  });

  const sentMarkOf = async (invoiceId: string) =>
    (await orm.em.fork().findOneOrFail(Invoice, { id: invoiceId })).providerCallSentAt;

  it('marks the first attempt sent in the statement that opens the invoice, only when asked and only then', async () => {
    const sub = await subscriptionIn('active');
    const opened = await openPeriodInvoice(orm.em.fork(), period(sub, 1), { markChargeSent: true, ...dev });
    if (opened.kind !== 'open') throw new Error(`not opened: ${opened.kind}`);
    expect(opened.chargeMarkedSent).toBe(true);
    expect(await sentMarkOf(opened.invoiceId)).toEqual(expect.any(Date));
    // Opened again (a retried step): found, not marked by this call (an earlier call may exist).
    const again = await openPeriodInvoice(orm.em.fork(), period(sub, 1), { markChargeSent: true, ...dev });
    expect(again).toMatchObject({ kind: 'open', invoiceId: opened.invoiceId });
    expect(again).not.toHaveProperty('chargeMarkedSent');

    // Not asked (the separate open step of older runs): no mark.
    const other = await subscriptionIn('active');
    const unmarked = await openPeriodInvoice(orm.em.fork(), period(other, 1), dev);
    if (unmarked.kind !== 'open') throw new Error(`not opened: ${unmarked.kind}`);
    expect(unmarked).not.toHaveProperty('chargeMarkedSent');
    expect(await sentMarkOf(unmarked.invoiceId)).toBeNull();

    // No card: no provider call will be made, so none is marked.
    const cardless = await subscriptionIn('active', { noCard: true });
    const noCard = await openPeriodInvoice(orm.em.fork(), period(cardless, 1), { markChargeSent: true, ...dev });
    if (noCard.kind !== 'open') throw new Error(`not opened: ${noCard.kind}`);
    expect(noCard).not.toHaveProperty('chargeMarkedSent');
    expect(await sentMarkOf(noCard.invoiceId)).toBeNull();
  });

  const mailer = () => createMailer({ orm, smtpUrl: `smtp://127.0.0.1:${catcher.port}` } as unknown as ActivityDeps);
  const caughtWith = (emailId: string) =>
    fs.readdirSync(mailDir).filter((f) => fs.readFileSync(path.join(mailDir, f), 'utf8').includes(`<${emailId}@`));

  it('a receipt recorded claimed is sent by its claimant without another claim, once; other senders find it busy', async () => {
    const sub = await subscriptionIn('active');
    const applied = await payingFirstAttempt(sub, 1, 'txn_claimed', { claimReceiptSeconds: EMAIL_CLAIM_SECONDS });
    if (applied.kind !== 'paid') throw new Error(`not paid: ${applied.kind}`);
    const [email] = await emailsOf(sub.id);
    expect(applied.outbox.emailIds).toEqual([email!.id]);
    expect(applied.claimed).toEqual([{ id: email!.id, to: email!.to, subject: email!.subject, text: email!.text }]);
    expect(email).toMatchObject({ attempts: 1, sentAt: null });
    expect(email!.claimedUntil!.getTime()).toBeGreaterThan(Date.now() + (EMAIL_CLAIM_SECONDS - 10) * 1000);

    // Anyone else (the workflow's sendEmail, a retried attempt) waits for the claimant.
    await expect(mailer().send(email!.id)).rejects.toBeInstanceOf(EmailBusyError);
    expect(await mailer().sendWithin([email!.id], 2_000, applied.claimed)).toEqual([]);
    expect(caughtWith(email!.id)).toHaveLength(1);
    const sent = await orm.em.fork().findOneOrFail(Email, { id: email!.id });
    expect(sent).toMatchObject({ attempts: 1, claimedUntil: null, sentAt: expect.any(Date) });
    expect(await mailer().send(email!.id)).toBe('already_sent');
    expect(caughtWith(email!.id)).toHaveLength(1);
    // The capture recorded its event too, in the same transaction.
    expect(await eventsOf(sub.id, 'subscription.charge_succeeded')).toHaveLength(1);
  });

  it('under concurrent captures only the call that recorded the receipt holds its claim', async () => {
    const sub = await subscriptionIn('active');
    const invoice = await invoiceOf((await opening(sub, 1)).invoiceId);
    const applied = await Promise.all(
      Array.from({ length: 8 }, () =>
        applyInvoiceCharge(orm.em, invoice, 1, { kind: 'paid', transactionId: 'txn_race' }, null, {
          claimReceiptSeconds: EMAIL_CLAIM_SECONDS,
          ...dev,
        }),
      ),
    );
    const [email] = await emailsOf(sub.id);
    expect(applied.filter((a) => a.kind === 'paid' && a.claimed)).toHaveLength(1);
    for (const a of applied) expect(a).toMatchObject({ kind: 'paid', outbox: { emailIds: [email!.id] } });
    expect(email).toMatchObject({ attempts: 1, sentAt: null });
    expect(await eventsOf(sub.id, 'subscription.charge_succeeded')).toHaveLength(1);
  });

  it('a claimed receipt with no time left to send it is released at once, for the next sender', async () => {
    const sub = await subscriptionIn('active');
    const applied = await payingFirstAttempt(sub, 1, 'txn_released', { claimReceiptSeconds: EMAIL_CLAIM_SECONDS });
    if (applied.kind !== 'paid' || !applied.claimed) throw new Error('not recorded claimed');
    const emailId = applied.outbox.emailIds[0]!;
    expect(await mailer().sendWithin([emailId], 0, applied.claimed)).toEqual([emailId]);
    expect(await orm.em.fork().findOneOrFail(Email, { id: emailId })).toMatchObject({
      claimedUntil: null,
      sentAt: null,
    });
    expect(await mailer().send(emailId)).toBe('sent');
    expect(caughtWith(emailId)).toHaveLength(1);
  });

  it('without the option the receipt is recorded unclaimed, as before', async () => {
    const sub = await subscriptionIn('active');
    const applied = await payingFirstAttempt(sub, 1, 'txn_plain');
    expect(applied).not.toHaveProperty('claimed');
    expect((await emailsOf(sub.id))[0]).toMatchObject({ attempts: 0, claimedUntil: null });
  });

  /** The statements sent to PostgreSQL while `fn` runs (every query goes through the ORM's pg pool). */
  async function statementsOf<T>(fn: () => Promise<T>): Promise<{ result: T; statements: string[] }> {
    const pool = (await orm.em.getConnection().getNativeClient()) as Pool;
    const statements: string[] = [];
    const patched: Array<{ client: PoolClient; query: PoolClient['query'] }> = [];
    const connect = pool.connect;
    pool.connect = (async () => {
      const client = await (connect as () => Promise<PoolClient>).call(pool);
      if (!patched.some((p) => p.client === client)) {
        const query = client.query;
        patched.push({ client, query });
        client.query = ((...args: unknown[]) => {
          const first = args[0] as string | { text: string };
          statements.push(typeof first === 'string' ? first : first.text);
          return (query as (...a: unknown[]) => unknown).apply(client, args);
        }) as PoolClient['query'];
      }
      return client;
    }) as Pool['connect'];
    try {
      return { result: await fn(), statements };
    } finally {
      pool.connect = connect;
      for (const p of patched) p.client.query = p.query;
    }
  }

  describe('a capture recorded in one statement from what its charge read (issue 45)', () => {
    /** The attempt's instant (a test clock's time, or a charge's): every date it records. */
    const at = new Date(Date.UTC(2026, 5, 1, 12, 0, 0, 123));
    const claimed = { claimReceiptSeconds: EMAIL_CLAIM_SECONDS, at, ...dev };

    /** Opens period `index` as openAndChargeInvoice does: the opening statement answers the charge's read. */
    async function openedForCharge(sub: { id: string; phaseId: string }, index: number): Promise<InvoiceForCharge> {
      const opened = await openPeriodInvoice(
        orm.em.fork(),
        { ...period(sub, index), at },
        { markChargeSent: true, ...dev },
      );
      if (opened.kind !== 'open' || !opened.forCharge) throw new Error(`not opened for a charge: ${opened.kind}`);
      return opened.forCharge;
    }

    it('a renewal captured: one statement, and a retry with the same read answers the same outbox', async () => {
      const sub = await subscriptionIn('active', { callbackUrl: 'https://merchant.example/hooks' });
      const read = await openedForCharge(sub, 1);
      const { result, statements } = await statementsOf(() =>
        applyInvoiceCharge(orm.em, read, 1, { kind: 'paid', transactionId: 'txn_one' }, null, claimed),
      );
      expect(statements).toHaveLength(1);
      if (result.kind !== 'paid') throw new Error(`not paid: ${result.kind}`);
      const [email] = await emailsOf(sub.id);
      const [event] = await eventsOf(sub.id, 'subscription.charge_succeeded');
      expect(result).toEqual({
        kind: 'paid',
        outbox: { status: 'active', emailIds: [email!.id], eventIds: [event!.id] },
        claimed: [{ id: email!.id, to: email!.to, subject: email!.subject, text: email!.text }],
      });
      expect(event!.payload['data']).toEqual(await apiView(sub.id));
      // The same read again (a retried activity): the statement changes nothing (the row moved
      // on), and the general path answers what the first call recorded.
      const again = await applyInvoiceCharge(
        orm.em,
        read,
        1,
        { kind: 'paid', transactionId: 'txn_two' },
        null,
        claimed,
      );
      expect(again).toEqual({ kind: 'paid', outbox: result.outbox });
      expect(await emailsOf(sub.id)).toHaveLength(1);
      expect(await orm.em.fork().count(MerchantEvent, { resourceId: sub.id })).toBe(1);
      expect((await invoiceOf(read.id)).providerTransactionId).toBe('txn_one');
    });

    it('anything changed since the read: the general path records it', async () => {
      const sub = await subscriptionIn('past_due');
      const read = await openedForCharge(sub, 1);
      // A new card meanwhile (the row's version moved on): its read is stale.
      await orm.em.fork().nativeUpdate(Subscription, { id: sub.id }, { cardToken: 'tok_mastercard' });
      const { result, statements } = await statementsOf(() =>
        applyInvoiceCharge(orm.em, read, 1, { kind: 'paid', transactionId: 'txn_stale' }, null, claimed),
      );
      expect(statements.length).toBeGreaterThan(1);
      expect(result).toMatchObject({ kind: 'paid', outbox: { status: 'active' } });
      expect(await emailsOf(sub.id)).toHaveLength(1);
      expect((await eventsOf(sub.id, 'subscription.charge_succeeded'))[0]!.payload['data']).toEqual(
        await apiView(sub.id),
      );
    });

    /** A raw row, as PostgreSQL holds it. */
    const rowsOf = (sql: string, values: unknown[]) =>
      orm.em.getConnection().execute<Array<Record<string, unknown>>>(sql, values);

    /**
     * Everything a capture records about a subscription, with one subscription's ids written as the
     * other's, and without what differs by nature (the random ids of new rows, real times of day).
     */
    async function recordOf(subscriptionId: string, invoiceId: string, replace: Array<[string, string]>) {
      const [subscription] = await rowsOf(`select * from subscriptions where id = ?`, [subscriptionId]);
      const [invoice] = await rowsOf(`select * from invoices where id = ?`, [invoiceId]);
      const emails = await rowsOf(`select * from emails where dedupe_key like ? order by dedupe_key`, [
        `${subscriptionId}:%`,
      ]);
      const events = await rowsOf(`select * from merchant_events where resource_id = ? order by sequence`, [
        subscriptionId,
      ]);
      const record = {
        subscription,
        invoice: { ...invoice, provider_call_sent_at: 'set' },
        emails: emails.map(({ id: _id, created_at: _c, claimed_until: claimedUntil, ...e }) => ({
          ...e,
          claimedFor: claimedUntil ? 'a while' : null,
        })),
        events: events.map(({ id: _id, created_at: _c, payload, ...e }) => {
          const { id: _pid, createdAt: _pc, ...body } = payload as Record<string, unknown>;
          return { ...e, payload: body };
        }),
      };
      return JSON.parse(replace.reduce((text, [from, to]) => text.split(from).join(to), JSON.stringify(record)));
    }

    /** Two subscriptions alike, captured: one in one statement (the charge's read), one by the general path. */
    async function capturedBothWays(
      status: SubscriptionStatus,
      index: number,
      extra: Parameters<typeof subscriptionIn>[1] = {},
    ) {
      const tag = `alike-${Date.now()}-${Math.random()}`;
      const fast = await subscriptionIn(status, { ...extra, externalId: `${tag}-a` });
      const general = await subscriptionIn(status, { ...extra, externalId: `${tag}-b` });
      const created = new Date(Date.UTC(2026, 4, 1));
      await orm.em
        .fork()
        .nativeUpdate(Subscription, { id: { $in: [fast.id, general.id] } }, { createdAt: created, updatedAt: created });
      const fastRead = await openedForCharge(fast, index);
      // An entity the ORM loaded carries no snapshot: the general path records it.
      const generalRead = await invoiceOf((await openedForCharge(general, index)).id);
      const paid = { kind: 'paid', transactionId: 'txn_alike' } as const;
      const { result: fastAnswer, statements } = await statementsOf(() =>
        applyInvoiceCharge(orm.em, fastRead, 1, paid, null, claimed),
      );
      expect(statements).toHaveLength(1);
      const generalAnswer = await applyInvoiceCharge(orm.em, generalRead, 1, paid, null, claimed);
      const phaseIds = async (id: string) =>
        (await orm.em.fork().find(SubscriptionPhase, { subscription: id }, { orderBy: { position: 'asc' } })).map(
          (p) => p.id,
        );
      const [fastPhases, generalPhases] = [await phaseIds(fast.id), await phaseIds(general.id)];
      const replace: Array<[string, string]> = [
        [fast.id, general.id],
        [fastRead.id, generalRead.id],
        [`${tag}-a`, `${tag}-b`],
        ...fastPhases.map((id, i): [string, string] => [id, generalPhases[i]!]),
      ];
      expect(await recordOf(fast.id, fastRead.id, replace)).toEqual(
        await recordOf(general.id, generalRead.id, replace),
      );
      // Answered alike: the same outbox (its new rows' ids aside) and the receipt claimed alike.
      const shape = (answer: Awaited<ReturnType<typeof applyInvoiceCharge>>, subscriptionId: string) => {
        if (answer.kind !== 'paid') throw new Error(`not paid: ${answer.kind}`);
        return {
          status: answer.outbox.status,
          emails: answer.outbox.emailIds.length,
          events: answer.outbox.eventIds.length,
          claimed: (answer.claimed ?? []).map(({ id: _id, ...c }) => ({
            ...c,
            text: c.text.split(subscriptionId).join('<subscription>'),
          })),
        };
      };
      const fastShape = shape(fastAnswer, fast.id);
      expect(JSON.parse(replace.reduce((t, [a, b]) => t.split(a).join(b), JSON.stringify(fastShape)))).toEqual(
        JSON.parse(JSON.stringify(shape(generalAnswer, general.id))),
      );
      return { fast, general, fastAnswer, generalAnswer };
    }

    it('a renewal of an active subscription with a callbackUrl: the same rows as the general path', async () => {
      const { fastAnswer } = await capturedBothWays('active', 1, { callbackUrl: 'https://merchant.example/hooks' });
      expect(fastAnswer).toMatchObject({ outbox: { status: 'active', emailIds: [expect.any(String)] } });
    });

    it('a past_due subscription without a customer email: the same rows (the receipt to the merchant)', async () => {
      await capturedBothWays('past_due', 2, { customerEmail: null });
    });

    it('a first capture on a test clock, with phases: the activation too, dated in clock time, the same rows', async () => {
      const em = orm.em.fork();
      const clock = em.create(TestClock, {
        id: newId('testClock'),
        merchant: em.getReference(Merchant, merchant.merchantId),
        environment: 'test',
        name: null,
        frozenTime: new Date(Date.UTC(2026, 5, 1, 9, 30, 0, 456)),
        status: 'advancing',
        advanceTo: new Date(Date.UTC(2027, 5, 1)),
        createdAt: new Date(),
        updatedAt: new Date(),
      });
      await em.flush();
      const { fast, fastAnswer } = await capturedBothWays('created', 0, {
        callbackUrl: 'https://merchant.example/hooks',
        testClockId: clock.id,
        phases: [{ name: 'intro', iterations: 2, amountMinor: 500, billingIntervalDays: 7 }],
      });
      expect(fastAnswer).toMatchObject({ outbox: { status: 'active' } });
      if (fastAnswer.kind !== 'paid') throw new Error('not paid');
      expect(fastAnswer.outbox.emailIds).toHaveLength(2);
      expect(fastAnswer.outbox.eventIds).toHaveLength(2);
      expect(fastAnswer.claimed).toEqual([expect.objectContaining({ datedAt: clock.frozenTime })]);
      const emails = await emailsOf(fast.id);
      expect(emails.map((e) => [e.dedupeKey.split(':')[2], e.datedAt?.toISOString(), e.attempts])).toEqual([
        ['activated', clock.frozenTime.toISOString(), 0],
        ['receipt', clock.frozenTime.toISOString(), 1],
      ]);
      const events = await orm.em.fork().find(MerchantEvent, { resourceId: fast.id }, { orderBy: { sequence: 'asc' } });
      expect(events.map((e) => [e.type, e.sequence])).toEqual([
        ['subscription.activated', 1],
        ['subscription.charge_succeeded', 2],
      ]);
      expect(events[1]!.payload['data']).toEqual(await apiView(fast.id));
    });
  });

  describe('in production (decision 0066)', () => {
    const production = { profile: { production: true } };
    const paying = async (sub: { id: string; phaseId: string }, transactionId: string) => {
      const invoice = await invoiceOf((await opening(sub, 1)).invoiceId);
      return applyInvoiceCharge(orm.em, invoice, 1, { kind: 'paid', transactionId }, null, production);
    };

    it("a test-environment renewal's receipt goes to the merchant, marked test mode, never to customer.email", async () => {
      const sub = await subscriptionIn('active');
      const applied = await paying(sub, 'txn_prod_test');
      const emails = await emailsOf(sub.id);
      expect(emails).toHaveLength(1);
      expect(emails[0]).toMatchObject({
        to: 'merchant@example.com',
        subject: '[Test mode] Payment receipt: 12.50 USD for Gold plan',
        sentAt: null,
      });
      expect(emails[0]!.text).toContain('on behalf of the customer address ada@example.com');
      expect(emails[0]!.text).toContain('Provider transaction: txn_prod_test');
      expect(applied).toEqual({ kind: 'paid', outbox: { status: 'active', emailIds: [emails[0]!.id], eventIds: [] } });
    });

    it("a live renewal's receipt goes to the customer, as always", async () => {
      const sub = await subscriptionIn('past_due', { environment: 'live' });
      await paying(sub, 'txn_prod_live');
      const emails = await emailsOf(sub.id);
      expect(emails.map((e) => [e.to, e.subject])).toEqual([
        ['ada@example.com', 'Payment receipt: 12.50 USD for Gold plan'],
      ]);
    });

    it('a payment-failed email of a test-environment subscription goes to the merchant too', async () => {
      const sub = await subscriptionIn('active');
      const invoice = await invoiceOf((await opening(sub, 1)).invoiceId);
      const declined = {
        kind: 'declined',
        transactionId: null,
        failureCode: 'insufficient_funds',
        failureMessage: 'No.',
      } as const;
      await applyInvoiceCharge(orm.em, invoice, 1, declined, DAY, production);
      const emails = await emailsOf(sub.id);
      expect(emails.map((e) => e.to)).toEqual(['merchant@example.com']);
      expect(emails[0]!.subject).toMatch(/^\[Test mode\] /);
    });

    it('a merchant without an email: the test-environment email is recorded withheld, never sent, never to the customer', async () => {
      const em = orm.em.fork();
      const { merchant: silent } = await createMerchant(em, { name: 'No email merchant', email: null });
      const sub = await subscriptionIn('active', { merchantId: silent.id });
      const applied = await paying(sub, 'txn_prod_withheld');
      const emails = await emailsOf(sub.id);
      expect(emails).toHaveLength(1);
      expect(emails[0]).toMatchObject({ to: '', lastError: WITHHELD_TEST_EMAIL });
      expect(emails[0]!.sentAt).not.toBeNull();
      // Nothing for a sender: the outbox names no email.
      expect(applied).toEqual({ kind: 'paid', outbox: { status: 'active', emailIds: [], eventIds: [] } });
      // A retried charge answers the same, recording nothing more.
      const again = await applyInvoiceCharge(
        orm.em,
        await loadInvoiceForCharge(orm.em, emails[0]!.dedupeKey.split(':').pop()!).then((i) => i!),
        1,
        { kind: 'paid', transactionId: 'txn_prod_withheld' },
        null,
        production,
      );
      expect(again).toMatchObject({ kind: 'paid', outbox: { emailIds: [] } });
      expect(await emailsOf(sub.id)).toHaveLength(1);
    });
  });
});
