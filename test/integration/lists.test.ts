import type { EntityManager } from '@mikro-orm/postgresql';
import type { MikroORM } from '@mikro-orm/postgresql';
import { paymentRow } from '../helpers/records';
import {
  basicAuth,
  createTestMerchant,
  openTestOrm,
  startTestApi,
  type TestApi,
  type TestMerchant,
} from '../helpers/stack';
import { call, type ErrorBody, type JsonResponse } from '../helpers/http';
import { createKey, setMerchantStatus } from '../../src/domain/merchants';
import { insertSubscription } from '../../src/domain/subscriptions';
import { Invoice, Merchant, type KeyEnvironment, type Payment, type PaymentStatus } from '../../src/db/entities';
import { newId } from '../../src/ids';

/**
 * PRODUCT.md, "Lists": GET /payments, GET /subscriptions and GET /subscriptions/{id}/invoices on
 * the real API and PostgreSQL. Records are written straight to the database (as workers would
 * have left them) at known creation times, so order, pages and filters can be checked exactly.
 */
type Json = Record<string, unknown>;
interface ListBody {
  payments?: Json[];
  subscriptions?: Json[];
  invoices?: Json[];
  nextCursor: string | null;
}

describe('lists', () => {
  let orm: MikroORM;
  let api: TestApi;
  let seq = 0;
  const get = <T = ListBody>(path: string, auth: string | undefined) => call<T>(api.baseUrl, 'GET', path, auth);

  beforeAll(async () => {
    orm = await openTestOrm();
    api = await startTestApi({ orm });
  });
  afterAll(async () => {
    await api.close();
    await orm.close();
  });

  /** `count` payments of the merchant, created 1 s apart from `base` (oldest first), flushed. */
  async function insertPayments(
    merchant: TestMerchant,
    count: number,
    opts: { base?: Date; environment?: KeyEnvironment; status?: (i: number) => PaymentStatus; stepMs?: number } = {},
  ): Promise<Payment[]> {
    const em = orm.em.fork();
    const base = opts.base ?? new Date('2025-01-01T00:00:00.000Z');
    const rows = Array.from({ length: count }, (_, i) => {
      const createdAt = new Date(base.getTime() + i * (opts.stepMs ?? 1000));
      return paymentRow(em, merchant.merchantId, {
        externalId: `list-${++seq}`,
        environment: opts.environment ?? 'test',
        status: opts.status?.(i) ?? 'succeeded',
        providerTransactionId: `tx_${seq}`,
        createdAt,
        updatedAt: createdAt,
      });
    });
    await em.flush();
    return rows;
  }

  /** Every page of a list, following nextCursor; `between` runs after each page. */
  async function walk(
    path: string,
    key: 'payments' | 'subscriptions' | 'invoices',
    auth: string,
    between?: (page: number) => Promise<void>,
  ): Promise<{ items: Json[]; pages: number }> {
    const items: Json[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const sep = path.includes('?') ? '&' : '?';
      const res: JsonResponse<ListBody> = await get(
        cursor ? `${path}${sep}cursor=${encodeURIComponent(cursor)}` : path,
        auth,
      );
      expect(res.status).toBe(200);
      items.push(...(res.body[key] ?? []));
      cursor = res.body.nextCursor;
      pages++;
      if (cursor && between) await between(pages);
      if (pages > 1000) throw new Error('the walk does not end');
    } while (cursor);
    return { items, pages };
  }

  const ids = (items: Json[]) => items.map((i) => i.id as string);

  describe('GET /payments', () => {
    it('answers newest first, 20 by default, items exactly as GET /payments/{id} shows them', async () => {
      const merchant = await createTestMerchant(orm, 'List default');
      const rows = await insertPayments(merchant, 25);
      const first = await get('/payments', merchant.auth);
      expect(first.status).toBe(200);
      expect(Object.keys(first.body).sort()).toEqual(['nextCursor', 'payments']);
      expect(ids(first.body.payments!)).toEqual(
        rows
          .slice(5)
          .reverse()
          .map((r) => r.id),
      );
      expect(first.body.nextCursor).toEqual(expect.any(String));
      for (const item of first.body.payments!.slice(0, 3)) {
        expect(item).toEqual((await get<Json>(`/payments/${item.id as string}`, merchant.auth)).body);
      }
      const second = await get(`/payments?cursor=${encodeURIComponent(first.body.nextCursor!)}`, merchant.auth);
      expect(ids(second.body.payments!)).toEqual(
        rows
          .slice(0, 5)
          .reverse()
          .map((r) => r.id),
      );
      expect(second.body.nextCursor).toBeNull();
    });

    it('answers an empty list with a null cursor, and exactly `limit` items without a next page', async () => {
      const merchant = await createTestMerchant(orm, 'List empty');
      expect((await get('/payments', merchant.auth)).body).toEqual({ payments: [], nextCursor: null });
      await insertPayments(merchant, 3);
      const page = await get('/payments?limit=3', merchant.auth);
      expect(page.body.payments).toHaveLength(3);
      expect(page.body.nextCursor).toBeNull();
      const bounds = await get('/payments?limit=1', merchant.auth);
      expect(bounds.body.payments).toHaveLength(1);
      expect((await get('/payments?limit=100', merchant.auth)).body.payments).toHaveLength(3);
    });

    it('walks every payment once, in order, while payments are created between pages', async () => {
      const merchant = await createTestMerchant(orm, 'List walk');
      // Ties on created_at: ten payments in each millisecond, ordered by id among themselves.
      const base = new Date(Date.now() - 60_000);
      const existing: Payment[] = [];
      for (let ms = 0; ms < 5; ms++) {
        existing.push(...(await insertPayments(merchant, 10, { base: new Date(base.getTime() + ms), stepMs: 0 })));
      }
      const expected = [...existing]
        .sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime() || (a.id < b.id ? -1 : 1))
        .reverse()
        .map((p) => p.id);
      const created: string[] = [];
      const walked = await walk('/payments?limit=7', 'payments', merchant.auth, async () => {
        // New payments, at "now" and within the very milliseconds already walked.
        const now = await insertPayments(merchant, 2, { base: new Date() });
        const sameMs = await insertPayments(merchant, 2, { base: new Date(base.getTime() + 4), stepMs: 0 });
        created.push(...now.map((p) => p.id), ...sameMs.map((p) => p.id));
      });
      const seen = ids(walked.items);
      expect(new Set(seen).size).toBe(seen.length); // nothing twice
      // Nothing that existed when the walk began is skipped, and the order is the list's.
      expect(seen.filter((id) => !created.includes(id))).toEqual(expected);
      expect(walked.pages).toBeGreaterThanOrEqual(8);
      // A new walk sees everything, still once each.
      const again = ids((await walk('/payments?limit=100', 'payments', merchant.auth)).items);
      expect(new Set(again)).toEqual(new Set([...expected, ...created]));
      expect(again).toHaveLength(expected.length + created.length);
    });

    it('filters by status, externalId and creation time (from inclusive, to exclusive)', async () => {
      const merchant = await createTestMerchant(orm, 'List filters');
      const statuses: PaymentStatus[] = ['succeeded', 'failed', 'created', 'refunded'];
      const rows = await insertPayments(merchant, 12, { status: (i) => statuses[i % 4]! });
      const byStatus = await get('/payments?status=failed', merchant.auth);
      expect(ids(byStatus.body.payments!)).toEqual(
        rows
          .filter((_, i) => i % 4 === 1)
          .reverse()
          .map((r) => r.id),
      );
      for (const item of byStatus.body.payments!) expect(item.status).toBe('failed');

      const one = rows[5]!;
      const byExternal = await get(`/payments?externalId=${encodeURIComponent(one.externalId)}`, merchant.auth);
      expect(ids(byExternal.body.payments!)).toEqual([one.id]);
      expect((await get('/payments?externalId=nope', merchant.auth)).body.payments).toEqual([]);

      const from = rows[3]!.createdAt.toISOString();
      const to = rows[7]!.createdAt.toISOString();
      const range = await get(`/payments?createdFrom=${from}&createdTo=${to}`, merchant.auth);
      expect(ids(range.body.payments!)).toEqual([rows[6]!.id, rows[5]!.id, rows[4]!.id, rows[3]!.id]);
      // Offsets are instants too: the same range written in another zone.
      const shifted = (d: Date) => new Date(d.getTime() + 2 * 3600_000).toISOString().replace('Z', '+02:00');
      const zoned = await get(
        `/payments?createdFrom=${encodeURIComponent(shifted(rows[3]!.createdAt))}&createdTo=${encodeURIComponent(
          shifted(rows[7]!.createdAt),
        )}`,
        merchant.auth,
      );
      expect(ids(zoned.body.payments!)).toEqual(ids(range.body.payments!));

      // Filters and pages together: every page keeps the filter.
      const walked = await walk(`/payments?status=succeeded&createdFrom=${from}&limit=1`, 'payments', merchant.auth);
      expect(ids(walked.items)).toEqual([rows[8]!.id, rows[4]!.id]);
    });

    it('never shows another merchant nor the other environment', async () => {
      const mine = await createTestMerchant(orm, 'List mine');
      const theirs = await createTestMerchant(orm, 'List theirs');
      const live = await createKey(orm.em.fork(), mine.merchantId, { environment: 'live', role: 'merchant' });
      const liveAuth = basicAuth(live.apiKey.publicKey, live.secretKey);
      const testRows = await insertPayments(mine, 3);
      const liveRows = await insertPayments(mine, 2, { environment: 'live' });
      const theirRows = await insertPayments(theirs, 4);

      const asTest = await walk('/payments?limit=2', 'payments', mine.auth);
      expect(ids(asTest.items).sort()).toEqual(testRows.map((r) => r.id).sort());
      const asLive = await walk('/payments?limit=2', 'payments', liveAuth);
      expect(ids(asLive.items).sort()).toEqual(liveRows.map((r) => r.id).sort());
      for (const item of asLive.items) expect(item.environment).toBe('live');
      const asThem = await walk('/payments', 'payments', theirs.auth);
      expect(ids(asThem.items).sort()).toEqual(theirRows.map((r) => r.id).sort());

      // The externalId filter does not reach across either.
      const liveExternal = liveRows[0]!.externalId;
      expect((await get(`/payments?externalId=${liveExternal}`, mine.auth)).body.payments).toEqual([]);
      expect((await get(`/payments?externalId=${liveExternal}`, theirs.auth)).body.payments).toEqual([]);
    });
  });

  describe('cursors', () => {
    let merchant: TestMerchant;
    let cursor: string;
    beforeAll(async () => {
      merchant = await createTestMerchant(orm, 'List cursors');
      await insertPayments(merchant, 5);
      cursor = (await get('/payments?limit=2', merchant.auth)).body.nextCursor!;
    });

    async function expectRefused(path: string, auth = merchant.auth) {
      const res = await get<ErrorBody>(path, auth);
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({
        code: 'validation_error',
        details: { issues: [expect.objectContaining({ path: 'cursor', code: 'invalid_cursor' })] },
      });
    }

    it('is opaque: no id nor timestamp in clear', () => {
      expect(cursor).toMatch(/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/);
      expect(cursor).not.toMatch(/pay_|20\d\d-/);
    });

    it('is refused when tampered with, truncated or garbled', async () => {
      const [payload, mac] = cursor.split('.') as [string, string];
      const flip = (s: string, at: number) => s.slice(0, at) + (s[at] === 'A' ? 'B' : 'A') + s.slice(at + 1);
      // A payload that moves the position, signed with the old MAC.
      const moved = Buffer.from(
        JSON.stringify({ ...JSON.parse(Buffer.from(payload, 'base64url').toString()), t: 0 }),
      ).toString('base64url');
      for (const bad of [
        `${flip(payload, 3)}.${mac}`,
        `${payload}.${flip(mac, 5)}`,
        `${moved}.${mac}`,
        cursor.slice(0, -2),
        payload,
        `${cursor}.x`,
        'garbage',
        '%%%',
      ]) {
        await expectRefused(`/payments?cursor=${encodeURIComponent(bad)}`);
      }
      const long = await get<ErrorBody>(`/payments?cursor=${'x'.repeat(600)}`, merchant.auth);
      expect(long.status).toBe(400);
      expect(long.body.details.issues!.map((i) => i.path)).toEqual(['cursor']);
    });

    it('is refused on another list, with other filters, or for another caller', async () => {
      await expectRefused(`/subscriptions?cursor=${cursor}`);
      await expectRefused(`/payments?cursor=${cursor}&status=succeeded`);
      const other = await createTestMerchant(orm, 'List cursor thief');
      await expectRefused(`/payments?cursor=${cursor}`, other.auth);
      const live = await createKey(orm.em.fork(), merchant.merchantId, { environment: 'live', role: 'merchant' });
      await expectRefused(`/payments?cursor=${cursor}`, basicAuth(live.apiKey.publicKey, live.secretKey));
      // The limit may change between pages.
      expect((await get(`/payments?cursor=${cursor}&limit=1`, merchant.auth)).status).toBe(200);
    });

    it('is valid on another API process sharing the secret', async () => {
      const second = await startTestApi({ orm });
      try {
        const res = await call<ListBody>(second.baseUrl, 'GET', `/payments?limit=2&cursor=${cursor}`, merchant.auth);
        expect(res.status).toBe(200);
        expect(res.body.payments).toHaveLength(2);
      } finally {
        await second.close();
      }
    });
  });

  describe('validation', () => {
    let merchant: TestMerchant;
    beforeAll(async () => {
      merchant = await createTestMerchant(orm, 'List validation');
    });

    it.each([
      ['/payments?limit=0', 'limit'],
      ['/payments?limit=101', 'limit'],
      ['/payments?limit=abc', 'limit'],
      ['/payments?limit=1.5', 'limit'],
      ['/payments?limit=', 'limit'],
      ['/payments?limit=1&limit=2', 'limit'],
      ['/payments?status=paid', 'status'],
      ['/payments?createdFrom=yesterday', 'createdFrom'],
      ['/payments?createdTo=2026-01-01', 'createdTo'],
      ['/payments?externalId=', 'externalId'],
      ['/payments?cursor=', 'cursor'],
      ['/payments?page=2', 'page'],
      ['/subscriptions?status=paid', 'status'],
      ['/subscriptions?limit=500', 'limit'],
      ['/subscriptions?createdFrom=2026-01-01T00:00:00Z', 'createdFrom'],
      ['/subscriptions/sub_01J0000000000000000000000A/invoices?status=open', 'status'],
      ['/subscriptions/sub_01J0000000000000000000000A/invoices?limit=-1', 'limit'],
    ])('GET %s is 400 validation_error naming %s', async (path, field) => {
      const res = await get<ErrorBody>(path, merchant.auth);
      expect(res.status).toBe(400);
      expect(res.body.code).toBe('validation_error');
      expect(res.body.details.issues!.map((i) => i.path)).toContain(field);
    });
  });

  describe('authentication (every list)', () => {
    const paths = ['/payments', '/subscriptions', '/subscriptions/sub_01J0000000000000000000000A/invoices'];
    let merchant: TestMerchant;
    beforeAll(async () => {
      merchant = await createTestMerchant(orm, 'List auth');
    });

    it.each(paths)('%s: 401 without or with wrong credentials', async (path) => {
      for (const auth of [undefined, 'Bearer x', basicAuth(merchant.publicKey, `${merchant.secretKey}x`)]) {
        const res = await get<ErrorBody>(path, auth);
        expect(res.status).toBe(401);
        expect(res.body.code).toBe('unauthorized');
        expect(res.headers.get('www-authenticate')).toMatch(/^Basic /);
      }
    });

    it.each(paths)('%s: 403 for an admin key, and for an inactive merchant', async (path) => {
      const admin = await createKey(orm.em.fork(), merchant.merchantId, { environment: 'test', role: 'admin' });
      const forbidden = await get<ErrorBody>(path, basicAuth(admin.apiKey.publicKey, admin.secretKey));
      expect(forbidden.status).toBe(403);
      expect(forbidden.body.code).toBe('forbidden');
      const inactive = await createTestMerchant(orm, 'List inactive');
      await setMerchantStatus(orm.em.fork(), inactive.merchantId, false);
      const refused = await get<ErrorBody>(path, inactive.auth);
      expect(refused.status).toBe(403);
      expect(refused.body.code).toBe('merchant_inactive');
    });
  });

  describe('GET /subscriptions and GET /subscriptions/{id}/invoices', () => {
    /** A subscription at `createdAt` with `periods` invoices (the last one open unless told). */
    async function insertSubscriptionWithInvoices(
      em: EntityManager,
      merchant: TestMerchant,
      opts: {
        createdAt: Date;
        periods?: number;
        environment?: KeyEnvironment;
        status?: 'active' | 'past_due' | 'cancelled';
        cancellationReason?: string;
        lastInvoice?: Partial<Invoice>;
      },
    ) {
      const { subscription, phases } = insertSubscription(em, em.getReference(Merchant, merchant.merchantId), {
        merchantId: merchant.merchantId,
        environment: opts.environment ?? 'test',
        processor: 'sandbox',
        externalId: `list-sub-${++seq}`,
        amountMinor: 1250,
        currency: 'USD',
        billingIntervalDays: 30,
        retryScheduleDays: [1, 3],
        phases: [{ name: 'trial', iterations: 1, amountMinor: 0, billingIntervalDays: 7 }],
        customer: { email: 'c@example.com' },
      });
      subscription.status = opts.status ?? 'active';
      subscription.createdAt = opts.createdAt;
      subscription.updatedAt = opts.createdAt;
      if (opts.status === 'cancelled') {
        subscription.cancelledAt = opts.createdAt;
        subscription.cancellationReason = opts.cancellationReason ?? 'merchant_request';
      }
      const invoices: Invoice[] = [];
      const periods = opts.periods ?? 0;
      for (let i = 0; i < periods; i++) {
        const start = new Date(opts.createdAt.getTime() + i * 30 * 86_400_000);
        const last = i === periods - 1;
        invoices.push(
          em.create(Invoice, {
            id: newId('invoice'),
            merchant: subscription.merchant,
            subscription,
            periodIndex: i,
            phase: i === 0 ? phases[0]! : phases[1]!,
            amountMinor: i === 0 ? 0 : 1250,
            currency: 'USD',
            periodStart: start,
            periodEnd: new Date(start.getTime() + 30 * 86_400_000),
            status: last ? 'open' : 'paid',
            attempts: i === 0 ? 0 : 1,
            providerTransactionId: null,
            failureCode: null,
            failureMessage: null,
            declineType: null,
            hostedUrl: null,
            nextAttemptAt: null,
            paidAt: last ? null : start,
            voidedAt: null,
            createdAt: start,
            updatedAt: start,
            ...(last ? opts.lastInvoice : {}),
          }),
        );
      }
      return { subscription, invoices };
    }

    it('lists subscriptions newest first, each as GET /subscriptions/{id} shows it, with filters', async () => {
      const merchant = await createTestMerchant(orm, 'List subscriptions');
      const em = orm.em.fork();
      const base = Date.parse('2025-03-01T00:00:00.000Z');
      const made = [];
      for (let i = 0; i < 7; i++) {
        made.push(
          await insertSubscriptionWithInvoices(em, merchant, {
            createdAt: new Date(base + i * 1000),
            periods: i % 3,
            status: i % 2 === 0 ? 'active' : 'past_due',
          }),
        );
      }
      const other = await createTestMerchant(orm, 'List subscriptions (other)');
      await insertSubscriptionWithInvoices(em, other, { createdAt: new Date(base), periods: 1 });
      await insertSubscriptionWithInvoices(em, merchant, {
        createdAt: new Date(base + 500),
        environment: 'live',
        periods: 1,
      });
      await em.flush();

      const walked = await walk('/subscriptions?limit=3', 'subscriptions', merchant.auth);
      expect(walked.pages).toBe(3);
      expect(ids(walked.items)).toEqual(made.map((m) => m.subscription.id).reverse());
      for (const item of walked.items) {
        expect(item).toEqual((await get<Json>(`/subscriptions/${item.id as string}`, merchant.auth)).body);
      }
      const withInvoice = walked.items.find((s) => s.latestInvoice !== null) as { latestInvoice: Json };
      expect(withInvoice.latestInvoice).toMatchObject({ status: 'open' });

      const pastDue = await get('/subscriptions?status=past_due', merchant.auth);
      expect(ids(pastDue.body.subscriptions!)).toEqual(
        made
          .filter((_, i) => i % 2 === 1)
          .map((m) => m.subscription.id)
          .reverse(),
      );
      const one = made[4]!.subscription;
      expect(
        ids((await get(`/subscriptions?externalId=${one.externalId}`, merchant.auth)).body.subscriptions!),
      ).toEqual([one.id]);
    });

    it("lists a subscription's invoices newest first, in the published shape, page by page", async () => {
      const merchant = await createTestMerchant(orm, 'List invoices');
      const em = orm.em.fork();
      const { subscription, invoices } = await insertSubscriptionWithInvoices(em, merchant, {
        createdAt: new Date('2025-01-01T00:00:00.000Z'),
        periods: 5,
        status: 'past_due',
        lastInvoice: {
          attempts: 2,
          failureCode: 'card_declined',
          failureMessage: 'Declined.',
          declineType: 'soft',
          nextAttemptAt: new Date('2025-05-02T00:00:00.000Z'),
        },
      });
      await em.flush();
      const walked = await walk(`/subscriptions/${subscription.id}/invoices?limit=2`, 'invoices', merchant.auth);
      expect(walked.pages).toBe(3);
      expect(ids(walked.items)).toEqual(invoices.map((i) => i.id).reverse());
      const last = invoices[4]!;
      expect(walked.items[0]).toEqual({
        id: last.id,
        subscriptionId: subscription.id,
        status: 'open',
        amount: 12.5,
        currency: 'USD',
        periodStart: last.periodStart.toISOString(),
        periodEnd: last.periodEnd.toISOString(),
        attempts: 2,
        nextAttemptAt: '2025-05-02T00:00:00.000Z',
        failureCode: 'card_declined',
        failureMessage: 'Declined.',
        declineType: 'soft',
        hostedUrl: null,
        paidAt: null,
        createdAt: last.createdAt.toISOString(),
      });
      expect(walked.items[4]).toMatchObject({ status: 'paid', amount: 0, paidAt: expect.any(String) });
      // The subscription's own view shows the same invoice as the list (PRODUCT.md: the full invoice).
      const view = await get<Json>(`/subscriptions/${subscription.id}`, merchant.auth);
      expect(view.body.latestInvoice).toEqual(walked.items[0]);
    });

    it('shows an invoice the service gave up on as uncollectible, and a merchant-voided one as void', async () => {
      const merchant = await createTestMerchant(orm, 'List uncollectible');
      const em = orm.em.fork();
      const failed = {
        status: 'void' as const,
        attempts: 4,
        failureCode: 'card_declined',
        failureMessage: 'Declined.',
        voidedAt: new Date(),
      };
      const gaveUp = await insertSubscriptionWithInvoices(em, merchant, {
        createdAt: new Date('2025-02-01T00:00:00.000Z'),
        periods: 2,
        status: 'cancelled',
        cancellationReason: 'payment_failed',
        lastInvoice: failed,
      });
      const byMerchant = await insertSubscriptionWithInvoices(em, merchant, {
        createdAt: new Date('2025-02-02T00:00:00.000Z'),
        periods: 2,
        status: 'cancelled',
        cancellationReason: 'merchant_request',
        lastInvoice: failed,
      });
      await em.flush();
      const statuses = async (id: string) =>
        (await get(`/subscriptions/${id}/invoices`, merchant.auth)).body.invoices!.map((i) => i.status);
      expect(await statuses(gaveUp.subscription.id)).toEqual(['uncollectible', 'paid']);
      expect(await statuses(byMerchant.subscription.id)).toEqual(['void', 'paid']);
      const view = await get<Json>(`/subscriptions/${gaveUp.subscription.id}`, merchant.auth);
      expect(view.body.latestInvoice).toMatchObject({ status: 'uncollectible' });
    });

    it("is 404 for another merchant's or environment's subscription, and for a malformed id", async () => {
      const merchant = await createTestMerchant(orm, 'List invoices 404');
      const other = await createTestMerchant(orm, 'List invoices 404 (other)');
      const em = orm.em.fork();
      const theirs = await insertSubscriptionWithInvoices(em, other, { createdAt: new Date(), periods: 2 });
      const live = await insertSubscriptionWithInvoices(em, merchant, {
        createdAt: new Date(),
        periods: 1,
        environment: 'live',
      });
      await em.flush();
      for (const path of [
        `/subscriptions/${theirs.subscription.id}/invoices`,
        `/subscriptions/${live.subscription.id}/invoices`,
        '/subscriptions/sub_01J0000000000000000000000A/invoices',
        '/subscriptions/not-an-id/invoices',
        `/subscriptions/${theirs.invoices[0]!.id}/invoices`,
      ]) {
        const res = await get<ErrorBody>(path, merchant.auth);
        expect(res.status).toBe(404);
        expect(res.body).toEqual({ code: 'not_found', message: 'Subscription not found.', details: {} });
      }
      // Their own callers see them.
      expect((await get(`/subscriptions/${theirs.subscription.id}/invoices`, other.auth)).body.invoices).toHaveLength(
        2,
      );
    });
  });

  it('is described in the OpenAPI document', async () => {
    const doc = (await call<Json>(api.baseUrl, 'GET', '/openapi.json', undefined)).body as {
      paths: Record<string, Record<string, { parameters?: Array<{ name: string; in: string }>; responses: Json }>>;
      components: { schemas: Record<string, unknown> };
    };
    const params = (path: string) => (doc.paths[path]?.get?.parameters ?? []).map((p) => `${p.in}:${p.name}`);
    expect(params('/payments')).toEqual(
      expect.arrayContaining([
        'query:limit',
        'query:cursor',
        'query:status',
        'query:externalId',
        'query:createdFrom',
        'query:createdTo',
      ]),
    );
    expect(params('/subscriptions')).toEqual(
      expect.arrayContaining(['query:limit', 'query:cursor', 'query:status', 'query:externalId']),
    );
    expect(params('/subscriptions/{subscriptionId}/invoices')).toEqual(
      expect.arrayContaining(['path:subscriptionId', 'query:limit', 'query:cursor']),
    );
    for (const path of ['/payments', '/subscriptions', '/subscriptions/{subscriptionId}/invoices']) {
      expect(Object.keys(doc.paths[path]!.get!.responses)).toEqual(
        expect.arrayContaining(['200', '400', '401', '403']),
      );
    }
    expect(doc.components.schemas.Invoice).toBeDefined();
  });
});
