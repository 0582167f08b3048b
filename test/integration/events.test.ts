import type { EntityManager } from '@mikro-orm/postgresql';
import { createTestMerchant, startPaymentStack, type PaymentStack, type TestMerchant } from '../helpers/stack';
import { call, eventually, type ErrorBody } from '../helpers/http';
import { startCallbackReceiver } from '../helpers/callbackReceiver';
import { paymentRow } from '../helpers/records';
import { createKey } from '../../src/domain/merchants';
import { basicAuth } from '../helpers/stack';
import { outboxEventCte, outboxEventFields, recordEvent, type EventInput } from '../../src/domain/events';
import { parameterisedRows } from '../../src/db/orm';
import { Merchant, MerchantEvent, type KeyEnvironment } from '../../src/db/entities';
import { sweepOrphansWorkflow } from '../../workflows/sweepOrphans';

/**
 * The event log (PRODUCT.md, "Events, webhook endpoints and deliveries"; decision 0065): every
 * event recorded (with or without a callbackUrl), listed and filtered as a merchant sees it over
 * the API, scoped to its merchant and environment, numbered per object, with its delivery attempts.
 */
type Json = Record<string, unknown>;
interface EventJson {
  id: string;
  type: string;
  createdAt: string;
  environment: KeyEnvironment;
  objectId: string;
  sequence: number;
  data: Json;
  deliveries?: Json[];
}
interface EventList {
  events: EventJson[];
  nextCursor: string | null;
}

describe('event log', () => {
  let stack: PaymentStack;
  let merchant: TestMerchant;
  let other: TestMerchant;
  let seq = 0;
  const ext = (p = 'ev') => `${p}-${Date.now()}-${++seq}`;
  const api = <T = Json>(method: string, path: string, auth = merchant.auth, body?: unknown) =>
    call<T>(stack.api.baseUrl, method, path, auth, body);
  const events = (query: string, auth = merchant.auth) => api<EventList>('GET', `/events?${query}`, auth);
  const pay = async (extra: Json = {}, auth = merchant.auth) => {
    const res = await api('POST', '/payments', auth, {
      amount: 10,
      currency: 'USD',
      externalId: ext('p'),
      customer: { email: 'c@example.com' },
      cardToken: 'tok_success',
      ...extra,
    });
    expect(res.body).toMatchObject({ status: 'succeeded' });
    return res.body as Json & { id: string };
  };

  beforeAll(async () => {
    stack = await startPaymentStack('events', { callbackRetryInitialSeconds: 1 });
    merchant = await createTestMerchant(stack.orm, 'Events merchant');
    other = await createTestMerchant(stack.orm, 'Events other merchant');
  });
  afterAll(() => stack.close());

  it("lists a payment's life without a callbackUrl: its events, numbered per object, a refund's under the refund", async () => {
    const payment = await pay();
    const refund = await api('POST', `/payments/${payment.id}/refund`, merchant.auth, { externalId: ext('r') });
    expect(refund.body).toMatchObject({ status: 'succeeded' });
    const refundId = refund.body.id as string;

    const ofPayment = await eventually(
      () => events(`objectId=${payment.id}`),
      (r) => r.body.events?.length === 2,
    );
    expect(ofPayment.status).toBe(200);
    const paymentNow = (await api('GET', `/payments/${payment.id}`)).body;
    expect(ofPayment.body).toEqual({
      events: [
        {
          id: expect.stringMatching(/^evt_/),
          type: 'payment.refunded',
          createdAt: expect.stringMatching(/Z$/),
          environment: 'test',
          objectId: payment.id,
          sequence: 2,
          data: paymentNow,
        },
        {
          id: expect.stringMatching(/^evt_/),
          type: 'payment.succeeded',
          createdAt: expect.stringMatching(/Z$/),
          environment: 'test',
          objectId: payment.id,
          sequence: 1,
          data: expect.objectContaining({ id: payment.id, status: 'succeeded' }),
        },
      ],
      nextCursor: null,
    });
    const ofRefund = await events(`objectId=${refundId}`);
    expect(ofRefund.body.events).toEqual([
      expect.objectContaining({
        type: 'refund.succeeded',
        objectId: refundId,
        sequence: 1,
        environment: 'test',
        data: (await api('GET', `/refunds/${refundId}`)).body,
      }),
    ]);

    // Filters: a family, an exact type, and both with the object.
    const payments = await events(`type=payment.*&objectId=${payment.id}`);
    expect(payments.body.events.map((e) => e.type)).toEqual(['payment.refunded', 'payment.succeeded']);
    const refunds = await events(`type=refund.*&objectId=${refundId}`);
    expect(refunds.body.events.map((e) => e.type)).toEqual(['refund.succeeded']);
    const exact = await events(`type=payment.succeeded&objectId=${payment.id}`);
    expect(exact.body.events.map((e) => e.type)).toEqual(['payment.succeeded']);
    expect((await events(`type=refund.*&objectId=${payment.id}`)).body.events).toEqual([]);

    // The single GET: the same event, with its (no) deliveries.
    const one = await api<EventJson>('GET', `/events/${ofPayment.body.events[1]!.id}`);
    expect(one.status).toBe(200);
    expect(one.body).toEqual({ ...ofPayment.body.events[1], deliveries: [] });
  });

  it('GET /events/{id} shows each callback attempt (failed, then succeeded); the delivered body carries the new fields', async () => {
    const receiver = await startCallbackReceiver([500]);
    try {
      const payment = await pay({ callbackUrl: receiver.url });
      await eventually(
        async () => receiver.received.length,
        (n) => n >= 2,
        15_000,
      );
      const [first, second] = receiver.received;
      expect(second!.body).toBe(first!.body);
      expect(first!.json).toEqual({
        id: expect.stringMatching(/^evt_/),
        type: 'payment.succeeded',
        createdAt: expect.stringMatching(/Z$/),
        environment: 'test',
        objectId: payment.id,
        sequence: 1,
        data: (await api('GET', `/payments/${payment.id}`)).body,
      });
      const shown = await eventually(
        () => api<EventJson>('GET', `/events/${first!.json.id}`),
        (r) => r.body.deliveries?.length === 2 && r.body.deliveries.every((d) => d.status !== 'pending'),
        10_000,
      );
      const { deliveries, ...event } = shown.body;
      expect(event).toEqual(first!.json);
      expect(deliveries).toEqual([
        {
          endpointId: null,
          url: receiver.url,
          attempt: 1,
          status: 'failed',
          httpStatus: 500,
          error: 'HTTP 500',
          durationMs: expect.any(Number),
          at: expect.stringMatching(/Z$/),
        },
        {
          endpointId: null,
          url: receiver.url,
          attempt: 2,
          status: 'succeeded',
          httpStatus: 200,
          error: null,
          durationMs: expect.any(Number),
          at: expect.stringMatching(/Z$/),
        },
      ]);
      expect(Date.parse(deliveries![1]!.at as string)).toBeGreaterThan(Date.parse(deliveries![0]!.at as string));
      // Listed without its deliveries.
      const listed = await events(`objectId=${payment.id}`);
      expect(listed.body.events).toEqual([first!.json]);
    } finally {
      await receiver.close();
    }
  });

  it("scoped like every record: another merchant's event is 404 and never listed; a test key never sees a live event", async () => {
    const payment = await pay();
    const listed = await eventually(
      () => events(`objectId=${payment.id}`),
      (r) => r.body.events?.length === 1,
    );
    const eventId = listed.body.events[0]!.id;

    const stranger = await api<ErrorBody>('GET', `/events/${eventId}`, other.auth);
    expect(stranger.status).toBe(404);
    expect(stranger.body).toMatchObject({ code: 'not_found' });
    expect((await events(`objectId=${payment.id}`, other.auth)).body.events).toEqual([]);

    // A live event of the same merchant (as a live payment's worker would have left it).
    const em = stack.orm.em.fork();
    const live = paymentRow(em, merchant.merchantId, { environment: 'live', status: 'succeeded' });
    const liveEvent = recordEvent(em, {
      merchant: em.getReference(Merchant, merchant.merchantId),
      type: 'payment.succeeded',
      resourceId: live.id,
      dedupeKey: `${live.id}:payment.succeeded`,
      callbackUrl: null,
      environment: 'live',
      data: { id: live.id },
    });
    await em.flush();
    const liveKey = await createKey(stack.orm.em.fork(), merchant.merchantId, {
      environment: 'live',
      role: 'merchant',
    });
    const liveAuth = basicAuth(liveKey.apiKey.publicKey, liveKey.secretKey);

    expect((await api('GET', `/events/${liveEvent.id}`)).status).toBe(404);
    expect((await events(`objectId=${live.id}`)).body.events).toEqual([]);
    expect((await events('limit=100')).body.events.some((e) => e.environment === 'live')).toBe(false);
    const seenLive = await api<EventJson>('GET', `/events/${liveEvent.id}`, liveAuth);
    expect(seenLive.body).toMatchObject({ id: liveEvent.id, environment: 'live', objectId: live.id, sequence: 1 });
    expect((await api('GET', `/events/${eventId}`, liveAuth)).status).toBe(404);
    expect((await events('limit=100', liveAuth)).body.events.map((e) => e.id)).toEqual([liveEvent.id]);

    // A malformed or unknown id: 404.
    expect((await api('GET', '/events/nope')).status).toBe(404);
    expect((await api('GET', '/events/evt_01JAAAAAAAAAAAAAAAAAAAAAAA')).status).toBe(404);
  });

  /** `count` events of one new merchant's object, created 1 s apart from `base` (oldest first). */
  async function insertEvents(merchantId: string, count: number, base: Date) {
    const em = stack.orm.em.fork();
    const payment = paymentRow(em, merchantId, { status: 'succeeded' });
    const types = ['payment.succeeded', 'refund.succeeded', 'payment.partially_refunded'] as const;
    const rows = Array.from({ length: count }, (_, i) => {
      const fields = outboxEventFields(
        {
          type: types[i % 3]!,
          resourceId: payment.id,
          dedupeKey: `${payment.id}:${i}`,
          callbackUrl: null,
          environment: 'test',
          data: { id: payment.id },
        },
        new Date(base.getTime() + i * 1000),
      );
      return em.create(MerchantEvent, {
        ...fields,
        merchant: em.getReference(Merchant, merchantId),
        attempts: 0,
        deliveredAt: null,
        lastError: null,
      });
    });
    await em.flush();
    return { paymentId: payment.id, ids: rows.map((r) => r.id) };
  }

  it('pages with cursors, newest first, and filters by dates (from inclusive, to exclusive)', async () => {
    const pager = await createTestMerchant(stack.orm, 'Events pager');
    const base = new Date('2026-01-01T00:00:00.000Z');
    const { ids } = await insertEvents(pager.merchantId, 7, base);
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page: { status: number; body: EventList } = await events(
        `limit=3${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
        pager.auth,
      );
      expect(page.status).toBe(200);
      expect(page.body.events.length).toBeLessThanOrEqual(3);
      seen.push(...page.body.events.map((e) => e.id));
      cursor = page.body.nextCursor;
    } while (cursor);
    expect(seen).toEqual([...ids].reverse());

    const ranged = await events(
      `createdFrom=${new Date(base.getTime() + 2000).toISOString()}&createdTo=${new Date(base.getTime() + 5000).toISOString()}`,
      pager.auth,
    );
    expect(ranged.body.events.map((e) => e.id)).toEqual([ids[4], ids[3], ids[2]]);
    const refunds = await events('type=refund.*', pager.auth);
    expect(refunds.body.events.map((e) => e.id)).toEqual([ids[4], ids[1]]);

    // A cursor is bound to its filters.
    const first = await events('limit=2', pager.auth);
    const moved = await events(
      `limit=2&type=payment.*&cursor=${encodeURIComponent(first.body.nextCursor!)}`,
      pager.auth,
    );
    expect(moved.status).toBe(400);
  });

  it.each([
    ['type=payment.nope', 'type'],
    ['type=nope.*', 'type'],
    ['type=*', 'type'],
    ['limit=0', 'limit'],
    ['limit=101', 'limit'],
    ['createdFrom=yesterday', 'createdFrom'],
    ['cursor=garbage', 'cursor'],
    ['colour=blue', ''],
  ])('a bad filter (%s): 400 validation_error with details', async (query, path) => {
    const res = await api<ErrorBody>('GET', `/events?${query}`);
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ code: 'validation_error', details: expect.any(Object) });
    if (path) expect(JSON.stringify(res.body.details)).toContain(path);
  });

  it('numbers concurrent changes to one object 1..n, without gaps or repeats, through both writers; a duplicate takes no number', async () => {
    const em0 = stack.orm.em.fork();
    const payment = paymentRow(em0, merchant.merchantId, { status: 'succeeded' });
    await em0.flush();
    const input = (i: number): EventInput => ({
      type: 'payment.succeeded',
      resourceId: payment.id,
      dedupeKey: `${payment.id}:concurrent:${i}`,
      callbackUrl: null,
      environment: 'test',
      data: { id: payment.id },
    });
    // Each writer holds its transaction open a moment after inserting, so they overlap.
    const viaOrm = (i: number) =>
      stack.orm.em.fork().transactional(async (tx: EntityManager) => {
        recordEvent(tx, { merchant: tx.getReference(Merchant, merchant.merchantId), ...input(i) });
        await tx.flush();
        await tx.execute('select pg_sleep(0.02)');
      });
    const viaStatement = async (i: number) => {
      const cte = outboxEventCte('evented', 'source', outboxEventFields(input(i)));
      await parameterisedRows(
        stack.orm.em.fork(),
        `with source as (select merchant_id from payments where id = ?), ${cte.sql} select 1 as done`,
        [payment.id, ...cte.values],
      );
    };
    const n = 30;
    await Promise.all(
      Array.from({ length: n }, (_, i) => (i % 2 === 0 ? viaOrm(i) : viaStatement(i))).concat(
        // Duplicates of five of them, recorded by the statement (on conflict do nothing).
        [1, 3, 5, 7, 9].map((i) => viaStatement(i)),
      ),
    );
    const rows: Array<{ sequence: number }> = await stack.orm.em
      .fork()
      .getConnection()
      .execute('select sequence from merchant_events where object_id = ? order by sequence', [payment.id]);
    expect(rows.map((r) => r.sequence)).toEqual(Array.from({ length: n }, (_, i) => i + 1));
  });

  it('prunes events older than 30 days with their deliveries (the sweeper), keeping the object numbering', async () => {
    const pruned = await createTestMerchant(stack.orm, 'Events pruned');
    const { paymentId, ids } = await insertEvents(pruned.merchantId, 2, new Date(Date.now() - 31 * 86_400_000));
    const conn = stack.orm.em.fork().getConnection();
    await conn.execute(
      `insert into event_deliveries (id, event_id, endpoint_id, url, attempt, status, at)
       values ('evd_test_${Date.now()}', ?, null, 'http://example.com', 1, 'failed', now())`,
      [ids[0]],
    );
    const young = await insertEvents(pruned.merchantId, 1, new Date());
    await stack.worker.client.workflow.execute(sweepOrphansWorkflow, {
      taskQueue: stack.taskQueue,
      workflowId: `sweep-events-${Date.now()}`,
      args: [{ graceSeconds: 1, pageSize: 10, maxRows: 100, merchantId: pruned.merchantId, kinds: ['merchantEvents'] }],
    });
    const listed = await events('limit=100', pruned.auth);
    expect(listed.body.events.map((e) => e.id)).toEqual(young.ids);
    expect((await api('GET', `/events/${ids[0]}`, pruned.auth)).status).toBe(404);
    const left: unknown[] = await conn.execute('select id from event_deliveries where event_id in (?, ?)', ids);
    expect(left).toEqual([]);
    // The object's counter stays: its next event goes on from where it was.
    const em = stack.orm.em.fork();
    const next = recordEvent(em, {
      merchant: em.getReference(Merchant, pruned.merchantId),
      type: 'payment.refunded',
      resourceId: paymentId,
      dedupeKey: `${paymentId}:after-prune`,
      callbackUrl: null,
      environment: 'test',
      data: { id: paymentId },
    });
    await em.flush();
    expect((await api<EventJson>('GET', `/events/${next.id}`, pruned.auth)).body.sequence).toBe(3);
  });
});
