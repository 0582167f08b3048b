import {
  basicAuth,
  createTestMerchant,
  startPaymentStack,
  type PaymentStack,
  type TestMerchant,
} from '../helpers/stack';
import { call, eventually, type ErrorBody } from '../helpers/http';
import { createKey } from '../../src/domain/merchants';
import { newId } from '../../src/ids';
import { subscriptionWorkflowId } from '../../workflows/subscriptionApi';
import { sleep, subscriptionClient, succeededByInvoice } from '../helpers/subscriptions';

/**
 * PRODUCT.md "Test clocks (test keys only)", decision 0090: the routes, and a subscription on a
 * clock that waits for the clock, not for real time. The stack runs one-second billing days: a
 * clock's subscription ignores them (a billing day on a clock is 86,400 s of clock time).
 */
describe('test clocks', () => {
  const DAY = 86_400_000;
  const T = Date.parse('2027-01-01T00:00:00.000Z');
  let stack: PaymentStack;
  let merchant: TestMerchant;
  let other: TestMerchant;
  let liveAuth: string;
  let subs: ReturnType<typeof subscriptionClient>;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  type Body = Record<string, any>;
  const api = (method: string, path: string, body?: unknown, auth = merchant.auth) =>
    call<Body>(stack.api.baseUrl, method, path, auth, body);
  const iso = (ms: number) => new Date(ms).toISOString();

  /** Waits until the clock is ready again (its advance done). */
  const ready = (id: string, timeoutMs = 60_000) =>
    eventually(
      () => api('GET', `/test-clocks/${id}`).then((r) => r.body),
      (c) => c.status === 'ready',
      timeoutMs,
      100,
    );

  beforeAll(async () => {
    stack = await startPaymentStack('clocks', { billingDaySeconds: 1 });
    merchant = await createTestMerchant(stack.orm, 'Clock merchant');
    other = await createTestMerchant(stack.orm, 'Other clock merchant');
    const live = await createKey(stack.orm.em.fork(), merchant.merchantId, { environment: 'live', role: 'merchant' });
    liveAuth = basicAuth(live.apiKey.publicKey, live.secretKey);
    subs = subscriptionClient(stack, merchant);
  });
  afterAll(() => stack.close());

  it('creates, lists, reads and scopes clocks; live keys never see one', async () => {
    const before = Date.now();
    const plain = await api('POST', '/test-clocks', {});
    expect(plain.status).toBe(200);
    expect(plain.body).toEqual({
      id: expect.stringMatching(/^clk_[0-9A-HJKMNP-TV-Z]{26}$/),
      name: null,
      frozenTime: expect.any(String),
      status: 'ready',
      subscriptionCount: 0,
      createdAt: expect.any(String),
    });
    expect(Date.parse(plain.body.frozenTime)).toBeGreaterThanOrEqual(before - 5);
    const named = await api('POST', '/test-clocks', { frozenTime: iso(T), name: 'yearly plan' });
    expect(named.body).toMatchObject({ name: 'yearly plan', frozenTime: iso(T), status: 'ready' });
    expect((await api('GET', `/test-clocks/${named.body.id}`)).body).toEqual(named.body);

    const page1 = await api('GET', '/test-clocks?limit=1');
    expect(page1.status).toBe(200);
    expect(page1.body.testClocks.map((c: Body) => c.id)).toEqual([named.body.id]);
    expect(page1.body.nextCursor).toEqual(expect.any(String));
    const page2 = await api('GET', `/test-clocks?limit=1&cursor=${page1.body.nextCursor}`);
    expect(page2.body.testClocks.map((c: Body) => c.id)).toEqual([plain.body.id]);
    expect((await api('GET', '/test-clocks?limit=0')).status).toBe(400);

    // Another merchant's clock, a malformed id: 404.
    expect((await api('GET', `/test-clocks/${named.body.id}`, undefined, other.auth)).status).toBe(404);
    expect((await api('GET', '/test-clocks/clk_nope')).status).toBe(404);
    const foreign = await subs.create({ cardToken: 'tok_success', testClock: named.body.id, externalId: 'x' });
    expect(foreign.status).toBe(200);
    expect(
      (
        await call<ErrorBody>(stack.api.baseUrl, 'POST', '/subscriptions', other.auth, {
          amount: 10,
          currency: 'USD',
          billingIntervalDays: 30,
          externalId: `other-${Date.now()}`,
          cardToken: 'tok_success',
          testClock: named.body.id,
        })
      ).status,
    ).toBe(404);
    await subs.cancel(foreign.body.id);

    // Live keys: 404 on every route; `testClock` on a create is 400.
    for (const [method, path, body] of [
      ['POST', '/test-clocks', {}],
      ['GET', '/test-clocks', undefined],
      ['GET', `/test-clocks/${named.body.id}`, undefined],
      ['DELETE', `/test-clocks/${named.body.id}`, undefined],
      ['POST', `/test-clocks/${named.body.id}/advance`, { frozenTime: iso(T + DAY) }],
    ] as const) {
      const res = await api(method, path, body, liveAuth);
      expect([method, path, res.status, res.body.code]).toEqual([method, path, 404, 'not_found']);
    }
    const liveCreate = await call<ErrorBody>(stack.api.baseUrl, 'POST', '/subscriptions', liveAuth, {
      amount: 10,
      currency: 'USD',
      billingIntervalDays: 30,
      externalId: `live-${Date.now()}`,
      cardToken: 'tok_success',
      testClock: named.body.id,
    });
    expect(liveCreate.status).toBe(400);
    expect(liveCreate.body.code).toBe('validation_error');
    expect(liveCreate.body.details.issues?.[0]?.path).toBe('testClock');
  });

  it('refuses an advance backwards, to the same time, or beyond 5 years, and unknown fields', async () => {
    const clock = (await api('POST', '/test-clocks', { frozenTime: iso(T) })).body;
    for (const frozenTime of [iso(T - 1), iso(T), '2032-01-01T00:00:00.001Z', 'tomorrow']) {
      const res = await api('POST', `/test-clocks/${clock.id}/advance`, { frozenTime });
      expect([frozenTime, res.status, res.body.code]).toEqual([frozenTime, 400, 'validation_error']);
      expect(res.body.details.issues[0].path).toBe('frozenTime');
    }
    expect((await api('POST', `/test-clocks/${clock.id}/advance`, { frozenTime: iso(T + DAY), x: 1 })).status).toBe(
      400,
    );
    // Exactly 5 years is allowed; nothing is on the clock, so it is ready again at once.
    const five = await api('POST', `/test-clocks/${clock.id}/advance`, { frozenTime: '2032-01-01T00:00:00.000Z' });
    expect(five.status).toBe(200);
    expect((await ready(clock.id)).frozenTime).toBe('2032-01-01T00:00:00.000Z');
  });

  it('renews on the clock: 3 months advanced, exactly 3 renewals with clock-time periods; nothing while it stands still', async () => {
    const clock = (await api('POST', '/test-clocks', { frozenTime: iso(T), name: 'monthly' })).body;
    const created = await subs.create({ cardToken: 'tok_success', billingIntervalDays: 30, testClock: clock.id });
    expect(created.status).toBe(200);
    expect(created.body).toMatchObject({
      status: 'active',
      testClock: clock.id,
      createdAt: iso(T),
      currentPeriodStart: iso(T),
      currentPeriodEnd: iso(T + 30 * DAY),
    });
    const id = created.body.id as string;
    expect((await api('GET', `/test-clocks/${clock.id}`)).body.subscriptionCount).toBe(1);

    // A daily one too: with one-second billing days it would renew every second in real time.
    const daily = await subs.create({ cardToken: 'tok_success', billingIntervalDays: 1, testClock: clock.id });
    expect(daily.body.status).toBe('active');
    await sleep(2_500);
    expect(await subs.invoices(daily.body.id)).toHaveLength(1);
    expect(await subs.invoices(id)).toHaveLength(1);
    await subs.cancel(daily.body.id);

    const advanced = await api('POST', `/test-clocks/${clock.id}/advance`, { frozenTime: iso(T + 90 * DAY) });
    expect(advanced.status).toBe(200);
    expect(advanced.body.status).toBe('advancing');
    // While advancing: another advance and a create on the clock are 409.
    const again = await api('POST', `/test-clocks/${clock.id}/advance`, { frozenTime: iso(T + 91 * DAY) });
    expect([again.status, again.body.code]).toEqual([409, 'test_clock_advancing']);
    const onIt = await subs.create({ cardToken: 'tok_success', billingIntervalDays: 30, testClock: clock.id });
    expect([onIt.status, onIt.body.code]).toEqual([409, 'test_clock_advancing']);
    const gone = await api('DELETE', `/test-clocks/${clock.id}`);
    expect([gone.status, gone.body.code]).toEqual([409, 'test_clock_advancing']);

    const done = await ready(clock.id);
    expect(done).toMatchObject({ frozenTime: iso(T + 90 * DAY), subscriptionCount: 1 });
    const invoices = await subs.invoices(id);
    expect(invoices.map((i) => [i.status, i.periodStart.toISOString(), i.periodEnd.toISOString()])).toEqual(
      [0, 1, 2, 3].map((n) => ['paid', iso(T + n * 30 * DAY), iso(T + (n + 1) * 30 * DAY)]),
    );
    expect(invoices.map((i) => i.createdAt.toISOString())).toEqual([0, 1, 2, 3].map((n) => iso(T + n * 30 * DAY)));
    expect(invoices.map((i) => i.paidAt!.toISOString())).toEqual([0, 1, 2, 3].map((n) => iso(T + n * 30 * DAY)));
    const captures = await subs.captures(id);
    expect(captures).toHaveLength(4);
    expect([...succeededByInvoice(captures).values()]).toEqual([1, 1, 1, 1]);
    const view = (await subs.get(id)).body;
    expect(view).toMatchObject({
      status: 'active',
      createdAt: iso(T),
      currentPeriodStart: iso(T + 90 * DAY),
      currentPeriodEnd: iso(T + 120 * DAY),
    });
    // The receipts are dated in clock time.
    const receipts = await eventually(
      async () => subs.mail(id).filter((e) => /receipt/i.test(e.subject)),
      (l) => l.length >= 4,
    );
    expect(receipts.map((e) => Date.parse(e.date)).sort()).toEqual([0, 1, 2, 3].map((n) => T + n * 30 * DAY));
    // Standing still again: nothing more.
    await sleep(1_500);
    expect(await subs.invoices(id)).toHaveLength(4);
    await subs.cancel(id);
  });

  it('DELETE cancels its subscriptions (test_clock_deleted, no email, the event fires); then 404', async () => {
    const clock = (await api('POST', '/test-clocks', { frozenTime: iso(T), name: 'to delete' })).body;
    const sub = (await subs.create({ cardToken: 'tok_success', billingIntervalDays: 30, testClock: clock.id })).body;
    expect(sub.status).toBe('active');
    const customer = (
      await api('POST', '/customers', {
        externalId: `clock-cust-${Date.now()}`,
        email: 'c@example.com',
        testClock: clock.id,
      })
    ).body;
    expect((await api('DELETE', `/test-clocks/${clock.id}`, undefined, other.auth)).status).toBe(404);
    const deleted = await api('DELETE', `/test-clocks/${clock.id}`);
    expect(deleted.status).toBe(200);
    expect(deleted.body).toMatchObject({ id: clock.id, name: 'to delete', deleted: true, subscriptionCount: 1 });
    expect((await api('GET', `/test-clocks/${clock.id}`)).status).toBe(404);
    const view = (await subs.get(sub.id)).body;
    expect(view).toMatchObject({ status: 'cancelled', cancellationReason: 'test_clock_deleted', cancelledAt: iso(T) });
    const events = await eventually(
      () => api('GET', `/events?objectId=${sub.id}&type=subscription.cancelled`).then((r) => r.body.events as Body[]),
      (list) => list.length === 1,
    );
    expect(events[0]!.data.cancellationReason).toBe('test_clock_deleted');
    await sleep(500);
    expect(subs.mail(sub.id).filter((e) => /cancelled/i.test(e.subject))).toEqual([]);
    // The clock's customer lives in real time now: its subscriptions are not refused for the clock.
    expect((await api('GET', `/customers/${customer.id as string}`)).body).toMatchObject({
      testClock: null,
      createdAt: iso(T),
    });
    await api('POST', `/customers/${customer.id as string}/payment-methods`, { cardToken: 'tok_success' });
    const later = await subs.create({ customer: undefined, customerId: customer.id, billingIntervalDays: 30 });
    expect(later.body).toMatchObject({ status: 'active', testClock: null });
    await subs.cancel(later.body.id as string);
  });

  it('holds at most 100 subscriptions not cancelled: the 101st is 409 test_clock_full', async () => {
    const clock = (await api('POST', '/test-clocks', { frozenTime: iso(T) })).body;
    const first = (await subs.create({ cardToken: 'tok_success', billingIntervalDays: 30, testClock: clock.id })).body;
    // 99 more rows like it, written as a worker would have left them (no workflows: never advanced).
    await stack.orm.em.fork().transactional(async (tx) => {
      await tx.execute('create temp table clock_copies on commit drop as select * from subscriptions where id = ?', [
        first.id,
      ]);
      for (let i = 0; i < 99; i++) {
        await tx.execute('update clock_copies set id = ?, external_id = ?', [newId('subscription'), `copy-${i}-${T}`]);
        await tx.execute('insert into subscriptions select * from clock_copies');
      }
    });
    expect((await api('GET', `/test-clocks/${clock.id}`)).body.subscriptionCount).toBe(100);
    const full = await subs.create({ cardToken: 'tok_success', billingIntervalDays: 30, testClock: clock.id });
    expect([full.status, full.body.code, full.body.details?.limit]).toEqual([409, 'test_clock_full', 100]);
    // Nothing was kept for it.
    const kept: Array<{ n: string }> = await stack.orm.em
      .fork()
      .getConnection()
      .execute('select count(*) as n from subscriptions where test_clock_id = ?', [clock.id]);
    expect(Number(kept[0]!.n)).toBe(100);
    await subs.cancel(first.id as string);
    expect((await api('GET', `/test-clocks/${clock.id}`)).body.subscriptionCount).toBe(99);
    const fits = await subs.create({ cardToken: 'tok_success', billingIntervalDays: 30, testClock: clock.id });
    expect(fits.body.status).toBe('active');
    await subs.cancel(fits.body.id as string);
    await stack.orm.em
      .fork()
      .getConnection()
      .execute(`update subscriptions set status = 'cancelled' where test_clock_id = ?`, [clock.id]);
  });

  it('takes many creates on one clock at once (more than the API has database connections)', async () => {
    const clock = (await api('POST', '/test-clocks', { frozenTime: iso(T) })).body;
    // Before the fix every create hung: 10 held the API's pool waiting for the clock's lock, the
    // holder waited for an 11th connection.
    const created = await Promise.all(
      Array.from({ length: 16 }, () =>
        subs.create({ cardToken: 'tok_success', billingIntervalDays: 30, testClock: clock.id }),
      ),
    );
    expect(created.map((r) => [r.status, r.body.status])).toEqual(created.map(() => [200, 'active']));
    expect((await api('GET', `/test-clocks/${clock.id}`)).body.subscriptionCount).toBe(16);
    await Promise.all(created.map((r) => subs.cancel(r.body.id as string)));
  });

  it("a subscription whose run ended is taken up by the next advance, at the clock's time; a DELETE of another cancels it", async () => {
    const clock = (await api('POST', '/test-clocks', { frozenTime: iso(T) })).body;
    const lost = (await subs.create({ cardToken: 'tok_success', billingIntervalDays: 30, testClock: clock.id })).body;
    const other = (await subs.create({ cardToken: 'tok_success', billingIntervalDays: 30, testClock: clock.id })).body;
    expect([lost.status, other.status]).toEqual(['active', 'active']);
    // Both runs end without the subscriptions ending (an operator's terminate, a lost history).
    for (const id of [lost.id, other.id]) {
      await stack.api.client.workflow.getHandle(subscriptionWorkflowId(id as string)).terminate('run lost');
    }
    // The merchant cancels one: its run is taken up at the clock's time, the cancel first.
    const cancelled = await subs.cancel(other.id as string);
    expect(cancelled.body).toMatchObject({ status: 'cancelled', cancelledAt: iso(T) });
    // The clock's advance takes up the other where its record says: two renewals, on clock dates.
    await api('POST', `/test-clocks/${clock.id}/advance`, { frozenTime: iso(T + 61 * DAY) });
    await ready(clock.id);
    const invoices = await subs.invoices(lost.id as string);
    expect(invoices.map((i) => [iso(i.periodStart.getTime()), i.status])).toEqual([
      [iso(T), 'paid'],
      [iso(T + 30 * DAY), 'paid'],
      [iso(T + 60 * DAY), 'paid'],
    ]);
    expect([...succeededByInvoice(await subs.captures(lost.id as string)).values()]).toEqual([1, 1, 1]);
    expect((await subs.captures(other.id as string)).filter((c) => c.status === 'succeeded')).toHaveLength(1);
    await subs.cancel(lost.id as string);
  });

  it('expires a hosted authorization after 24 hours of clock time, not of real time', async () => {
    const clock = (await api('POST', '/test-clocks', { frozenTime: iso(T) })).body;
    const created = await subs.create({ billingIntervalDays: 30, testClock: clock.id });
    expect(created.body).toMatchObject({ status: 'pending', redirectUrl: expect.any(String) });
    const id = created.body.id as string;
    // The stack's authorization expiry is a day of one second: a clock's is 24 h of clock time.
    await sleep(2_000);
    expect((await subs.get(id)).body.status).toBe('pending');
    await api('POST', `/test-clocks/${clock.id}/advance`, { frozenTime: iso(T + DAY - 1000) });
    await ready(clock.id);
    expect((await subs.get(id)).body.status).toBe('pending');
    await api('POST', `/test-clocks/${clock.id}/advance`, { frozenTime: iso(T + DAY) });
    await ready(clock.id);
    expect((await subs.get(id)).body).toMatchObject({
      status: 'cancelled',
      cancellationReason: 'authorization_expired',
    });
    expect(await subs.captures(id)).toEqual([]);
  });

  it('asks for authentication on a renewal, reminds on the schedule and cancels at its end, in clock time', async () => {
    const clock = (await api('POST', '/test-clocks', { frozenTime: iso(T) })).body;
    // On-session first charge captures; the renewal needs the customer's authentication.
    const created = await subs.create({
      cardToken: 'tok_3ds_offsession',
      billingIntervalDays: 30,
      testClock: clock.id,
    });
    expect(created.body.status).toBe('active');
    const id = created.body.id as string;
    await api('POST', `/test-clocks/${clock.id}/advance`, { frozenTime: iso(T + 32 * DAY) });
    await ready(clock.id);
    const waiting = (await subs.get(id)).body;
    expect(waiting.status).toBe('past_due');
    expect(waiting.latestInvoice).toMatchObject({ status: 'requires_action', hostedUrl: expect.any(String) });
    // Reminders at T+31 and T+34, the end of the schedule ([1, 3, 5]) at T+39.
    await api('POST', `/test-clocks/${clock.id}/advance`, { frozenTime: iso(T + 40 * DAY) });
    await ready(clock.id);
    const ended = (await subs.get(id)).body;
    expect(ended).toMatchObject({ status: 'cancelled', cancellationReason: 'payment_failed' });
    expect(ended.latestInvoice.status).toBe('uncollectible');
    const asked = await eventually(
      async () => subs.mail(id).filter((e) => /action required/i.test(e.subject)),
      (l) => l.length >= 3,
    );
    expect(asked).toHaveLength(3);
    const renewalCaptures = (await subs.captures(id)).filter((c) => c.metadata.invoiceId === ended.latestInvoice.id);
    expect(renewalCaptures.filter((c) => c.status === 'succeeded')).toEqual([]);
  });

  it('a year of a 3-phase subscription with dunning, invoice by invoice', async () => {
    const clock = (await api('POST', '/test-clocks', { frozenTime: iso(T), name: 'three phases' })).body;
    // A free 14-day trial, two intro months at 5, then 10 every 30 days; renewals with this card
    // are declined until the merchant gives a new one.
    const created = await subs.create({
      cardToken: 'tok_renewal_insufficient_funds',
      amount: 10,
      billingIntervalDays: 30,
      phases: [
        { name: 'trial', iterations: 1, amount: 0, billingIntervalDays: 14 },
        { name: 'intro', iterations: 2, amount: 5, billingIntervalDays: 30 },
      ],
      testClock: clock.id,
    });
    expect(created.body.status).toBe('active');
    const id = created.body.id as string;

    // The first intro period (T+14) is declined, retried at T+15 (declined), next at T+18.
    await api('POST', `/test-clocks/${clock.id}/advance`, { frozenTime: iso(T + 16 * DAY) });
    await ready(clock.id);
    const pastDue = (await subs.get(id)).body;
    expect(pastDue.status).toBe('past_due');
    expect(pastDue.latestInvoice).toMatchObject({ amount: 5, attempts: 2, nextAttemptAt: iso(T + 18 * DAY) });
    // A new card: charged at once, at the clock's time.
    const updated = await call<Body>(stack.api.baseUrl, 'POST', `/subscriptions/${id}/payment-method`, merchant.auth, {
      cardToken: 'tok_success',
    });
    expect(updated.status).toBe(200);
    await subs.until(id, (v) => v.status === 'active');

    await api('POST', `/test-clocks/${clock.id}/advance`, { frozenTime: iso(T + 365 * DAY) });
    await ready(clock.id);
    const invoices = await subs.invoices(id);
    const starts = [0, 14, 44, ...Array.from({ length: 10 }, (_, i) => 74 + 30 * i)];
    expect(invoices.map((i) => [iso(i.periodStart.getTime()), Number(i.amountMinor), i.status])).toEqual(
      starts.map((d, n) => [iso(T + d * DAY), n === 0 ? 0 : n < 3 ? 500 : 1000, 'paid']),
    );
    expect(invoices[1]!.attempts).toBe(3);
    expect(invoices[1]!.paidAt!.toISOString()).toBe(iso(T + 16 * DAY));
    expect(invoices.slice(2).every((i) => i.attempts === 1 && i.paidAt!.getTime() === i.periodStart.getTime())).toBe(
      true,
    );
    const captures = await subs.captures(id);
    expect(captures.filter((c) => c.status === 'failed')).toHaveLength(2);
    expect([...succeededByInvoice(captures).values()]).toEqual(Array.from({ length: 12 }, () => 1));
    expect((await subs.get(id)).body).toMatchObject({
      status: 'active',
      currentPeriodStart: iso(T + 344 * DAY),
      currentPeriodEnd: iso(T + 374 * DAY),
    });
    await subs.cancel(id);
  });

  it("a hard decline waits for a new card for the schedule's total of clock time, then cancels", async () => {
    const clock = (await api('POST', '/test-clocks', { frozenTime: iso(T) })).body;
    const created = await subs.create({
      cardToken: 'tok_renewal_lost_card',
      billingIntervalDays: 30,
      testClock: clock.id,
    });
    expect(created.body.status).toBe('active');
    const id = created.body.id as string;
    await api('POST', `/test-clocks/${clock.id}/advance`, { frozenTime: iso(T + 38 * DAY) });
    await ready(clock.id);
    const waiting = (await subs.get(id)).body;
    expect(waiting).toMatchObject({ status: 'past_due' });
    expect(waiting.latestInvoice).toMatchObject({ declineType: 'hard', nextAttemptAt: null, attempts: 1 });
    await api('POST', `/test-clocks/${clock.id}/advance`, { frozenTime: iso(T + 40 * DAY) });
    await ready(clock.id);
    expect((await subs.get(id)).body).toMatchObject({
      status: 'cancelled',
      cancellationReason: 'payment_failed',
      cancelledAt: iso(T + 39 * DAY),
    });
    const renewal = (await subs.invoices(id))[1]!;
    expect((await subs.captures(id)).filter((c) => c.metadata.invoiceId === renewal.id)).toHaveLength(1);
  });

  it('advances through a soft-decline retry schedule to the cancellation, on clock-time dates', async () => {
    const clock = (await api('POST', '/test-clocks', { frozenTime: iso(T) })).body;
    // The first charge captures; every renewal and retry with this card is declined (insufficient_funds).
    const created = await subs.create({
      cardToken: 'tok_renewal_insufficient_funds',
      billingIntervalDays: 30,
      testClock: clock.id,
    });
    expect(created.body.status).toBe('active');
    const id = created.body.id as string;

    // Renewal at T+30 declined, retry at T+31 declined (next at T+34, schedule [1, 3, 5]).
    expect((await api('POST', `/test-clocks/${clock.id}/advance`, { frozenTime: iso(T + 32 * DAY) })).status).toBe(200);
    await ready(clock.id);
    let renewal = (await subs.invoices(id))[1]!;
    expect(renewal).toMatchObject({ status: 'open', attempts: 2, failureCode: 'insufficient_funds' });
    expect(renewal.nextAttemptAt!.toISOString()).toBe(iso(T + 34 * DAY));
    expect((await subs.get(id)).body.status).toBe('past_due');

    // T+34 and T+39 declined too: the schedule is exhausted, cancelled (payment_failed) at T+39.
    expect((await api('POST', `/test-clocks/${clock.id}/advance`, { frozenTime: iso(T + 45 * DAY) })).status).toBe(200);
    const done = await ready(clock.id);
    expect(done.subscriptionCount).toBe(0);
    renewal = (await subs.invoices(id))[1]!;
    expect(renewal.attempts).toBe(4);
    const view = (await subs.get(id)).body;
    // Cancelled at the last attempt's date, in clock time.
    expect(view).toMatchObject({
      status: 'cancelled',
      cancellationReason: 'payment_failed',
      cancelledAt: iso(T + 39 * DAY),
    });
    const renewalCaptures = (await subs.captures(id)).filter((c) => c.metadata.invoiceId === renewal.id);
    expect(renewalCaptures.map((c) => c.status)).toEqual(['failed', 'failed', 'failed', 'failed']);
    expect(await subs.invoices(id)).toHaveLength(2);
  });
});
