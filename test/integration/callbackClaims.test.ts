import { startCallbackReceiver } from '../helpers/callbackReceiver';
import { startDeliveryFixture } from '../helpers/merchantEventDelivery';

/**
 * How delivery steps share a merchant's deliveries (decision 0069): one step per merchant at a
 * time (its lease), each due job claimed by the step attempting it, a failed attempt retried on
 * its schedule, at most EVENT_DELIVERY_CONCURRENCY_PER_MERCHANT attempts at once, and a host
 * that keeps failing paused without spending attempts. The real delivery step
 * (activities/eventDeliveries.ts) on the real database, POSTing to real HTTP endpoints; what a
 * lost step leaves behind (a lease, a claim) is written as it would leave it.
 */
describe('delivery steps: lease, claims, retries, concurrency, host pause', () => {
  let fixture: Awaited<ReturnType<typeof startDeliveryFixture>>;
  const receivers: Array<{ close(): Promise<void> }> = [];

  /** A merchant endpoint (closed after the test). */
  const receiver = async (...args: Parameters<typeof startCallbackReceiver>) => {
    const started = await startCallbackReceiver(...args);
    receivers.push(started);
    return started;
  };
  const step = (opts: Parameters<typeof fixture.deliverer>[0] = {}) => fixture.deliverer(opts).deliverDueEvents();
  const sql = (text: string, values: unknown[]) => fixture.sql(text, values);
  /** Waits until `iso` (a step's nextDueAt) has passed. */
  const until = (iso: string) =>
    new Promise((resolve) => setTimeout(resolve, Math.max(0, Date.parse(iso) - Date.now()) + 50));

  beforeAll(async () => {
    fixture = await startDeliveryFixture('Delivery claims merchant');
  });
  afterEach(async () => {
    while (receivers.length > 0) await receivers.pop()!.close();
    await fixture.reset();
  });
  afterAll(() => fixture.close());

  it('two steps of one merchant at once: one POST per event; the second finds the lease held and tries nothing', async () => {
    const endpoint = await receiver([], { delayMs: 800 });
    const eventIds = [await fixture.eventFor(endpoint.url), await fixture.eventFor(endpoint.url)];
    const answers = await Promise.all([step(), step()]);
    const [ran, held] = [...answers].sort((a, b) => b.attempted - a.attempted);
    expect(ran).toMatchObject({ attempted: 2, nextDueAt: null });
    // Held: it answers when the lease lapses (its workflow sleeps until then, or until woken).
    expect(held!.attempted).toBe(0);
    expect(Date.parse(held!.nextDueAt!)).toBeGreaterThan(Date.now());
    expect(endpoint.received.map((r) => r.json.id).sort()).toEqual([...eventIds].sort());
    for (const id of eventIds) {
      expect(await fixture.jobOf(id)).toMatchObject({ status: 'succeeded', attempts: 1, claimedUntil: null });
      expect(await fixture.attemptsOf(id)).toEqual([expect.objectContaining({ attempt: 1, status: 'succeeded' })]);
    }
    // The lease went with its step: the next one runs (nothing left to do).
    expect(await sql(`select 1 from delivery_leases where merchant_id = ?`, [fixture.merchantId])).toEqual([]);
    expect(await step()).toMatchObject({ attempted: 0, nextDueAt: null });
    expect(endpoint.received).toHaveLength(2);
  });

  it('a lease left by a lost step holds until it lapses, then the event is delivered', async () => {
    const endpoint = await receiver();
    const eventId = await fixture.eventFor(endpoint.url);
    // A step whose worker died: its lease runs on for a while.
    await sql(
      `insert into delivery_leases (merchant_id, holder, until) values (?, 'lost', now() + interval '2 seconds')`,
      [fixture.merchantId],
    );
    const [lease] = await sql(`select until from delivery_leases where merchant_id = ?`, [fixture.merchantId]);
    const held = await step();
    expect(held).toEqual({ attempted: 0, emailIds: [], nextDueAt: new Date(lease!.until as Date).toISOString() });
    expect(endpoint.received).toEqual([]);
    expect(await fixture.jobOf(eventId)).toMatchObject({ status: 'pending', attempts: 0, claimedUntil: null });
    expect(await fixture.attemptsOf(eventId)).toEqual([]);

    await until(held.nextDueAt!);
    expect(await step()).toMatchObject({ attempted: 1, nextDueAt: null });
    expect(endpoint.received.map((r) => r.json.id)).toEqual([eventId]);
    expect(await fixture.jobOf(eventId)).toMatchObject({ status: 'succeeded', attempts: 1 });
    // The lapsed lease was taken over, then released.
    expect(await sql(`select 1 from delivery_leases where merchant_id = ?`, [fixture.merchantId])).toEqual([]);
  });

  it('a job claimed by a lost step is not POSTed until its claim lapses', async () => {
    const endpoint = await receiver();
    const eventId = await fixture.eventFor(endpoint.url);
    // A step whose worker died mid-POST: the merchant's lease lapsed, the job's claim still runs.
    await sql(`update delivery_jobs set claimed_until = now() + interval '2 seconds' where event_id = ?`, [eventId]);
    const claimedUntil = (await fixture.jobOf(eventId)).claimedUntil!;
    const held = await step();
    // Not attempted; due again when the claim lapses.
    expect(held).toEqual({ attempted: 0, emailIds: [], nextDueAt: claimedUntil.toISOString() });
    expect(endpoint.received).toEqual([]);
    expect(await fixture.attemptsOf(eventId)).toEqual([]);

    await until(held.nextDueAt!);
    expect(await step()).toMatchObject({ attempted: 1, nextDueAt: null });
    expect(endpoint.received.map((r) => r.json.id)).toEqual([eventId]);
    expect(await fixture.jobOf(eventId)).toMatchObject({ status: 'succeeded', attempts: 1, claimedUntil: null });
  });

  it('a failed attempt (HTTP 500) is retried on its schedule: the same event, the same body', async () => {
    const endpoint = await receiver([500]);
    const eventId = await fixture.eventFor(endpoint.url);
    const before = Date.now();
    const failed = await step();
    expect(failed.attempted).toBe(1);
    const job = await fixture.jobOf(eventId);
    expect(job).toMatchObject({ status: 'pending', attempts: 1, claimedUntil: null, lastError: 'HTTP 500' });
    // retryInitialSeconds (1 s) after the failure.
    expect(job.nextAttemptAt.getTime()).toBeGreaterThanOrEqual(before + 1000 - 50);
    expect(job.nextAttemptAt.getTime()).toBeLessThanOrEqual(Date.now() + 1000 + 50);
    expect(failed.nextDueAt).toBe(job.nextAttemptAt.toISOString());
    expect(await fixture.attemptsOf(eventId)).toEqual([
      { attempt: 1, url: endpoint.url, status: 'failed', httpStatus: 500, error: 'HTTP 500' },
    ]);
    // Not due yet: a step now tries nothing.
    expect(await step()).toMatchObject({ attempted: 0, nextDueAt: failed.nextDueAt });
    expect(endpoint.received).toHaveLength(1);

    await until(failed.nextDueAt!);
    expect(await step()).toMatchObject({ attempted: 1, nextDueAt: null });
    expect(endpoint.received).toHaveLength(2);
    const [first, second] = endpoint.received;
    expect(second!.json.id).toBe(eventId);
    expect(second!.body).toBe(first!.body);
    expect(await fixture.jobOf(eventId)).toMatchObject({ status: 'succeeded', attempts: 2, lastError: null });
    expect(await fixture.attemptsOf(eventId)).toEqual([
      expect.objectContaining({ attempt: 1, status: 'failed', httpStatus: 500 }),
      expect.objectContaining({ attempt: 2, status: 'succeeded', httpStatus: 200, error: null }),
    ]);
  });

  it('at most concurrencyPerMerchant attempts at once: 6 due events, 2 at a time, all delivered', async () => {
    const endpoint = await receiver([], { delayMs: 300 });
    const eventIds: string[] = [];
    for (let i = 0; i < 6; i++) eventIds.push(await fixture.eventFor(endpoint.url));
    const started = Date.now();
    expect(await step({ concurrencyPerMerchant: 2 })).toMatchObject({ attempted: 6, nextDueAt: null });
    expect(endpoint.maxInFlight).toBe(2);
    // Three rounds of two.
    expect(Date.now() - started).toBeGreaterThanOrEqual(900);
    expect(endpoint.received.map((r) => r.json.id).sort()).toEqual([...eventIds].sort());
    for (const id of eventIds) expect(await fixture.jobOf(id)).toMatchObject({ status: 'succeeded', attempts: 1 });
  });

  it("5 failures in a row pause a host: its other due jobs wait without an attempt; another host's go", async () => {
    const failing = await receiver([500, 500, 500, 500, 500, 500, 500, 500]);
    const other = await receiver([], { host: '127.0.0.2' });
    const failingIds: string[] = [];
    for (let i = 0; i < 7; i++) failingIds.push(await fixture.eventFor(failing.url));
    const otherId = await fixture.eventFor(other.url);

    // One at a time, oldest first: five failures, then the pause.
    const answer = await step({ concurrencyPerMerchant: 1 });
    expect(answer.attempted).toBe(6);
    expect(failing.received).toHaveLength(5);
    const [pause] = await sql(
      `select failures, paused_until from delivery_host_pauses where merchant_id = ? and host = ?`,
      [fixture.merchantId, new URL(failing.url).host],
    );
    expect(pause).toMatchObject({ failures: 5 });
    const pausedUntil = new Date(pause!.paused_until as Date);
    // 30 s from the fifth failure.
    expect(pausedUntil.getTime() - Date.now()).toBeGreaterThan(25_000);
    for (const id of failingIds.slice(0, 5)) {
      expect(await fixture.jobOf(id)).toMatchObject({ status: 'pending', attempts: 1, lastError: 'HTTP 500' });
    }
    for (const id of failingIds.slice(5)) {
      expect(await fixture.jobOf(id)).toMatchObject({ status: 'pending', attempts: 0, nextAttemptAt: pausedUntil });
      expect(await fixture.attemptsOf(id)).toEqual([]);
    }
    // The same merchant's delivery to another host was not held by the pause.
    expect(other.received.map((r) => r.json.id)).toEqual([otherId]);
    expect(await fixture.jobOf(otherId)).toMatchObject({ status: 'succeeded', attempts: 1 });

    // The failed ones' retries come due during the pause: deferred by the next step too, unspent.
    // A retry that came due while the first step still ran was deferred by it already (its
    // nextAttemptAt is the pause's end): wait only for those due inside the pause.
    const retries = await Promise.all(failingIds.slice(0, 5).map((id) => fixture.jobOf(id)));
    const retryTimes = retries.map((j) => j.nextAttemptAt.getTime()).filter((t) => t < pausedUntil.getTime());
    if (retryTimes.length > 0) await until(new Date(Math.max(...retryTimes)).toISOString());
    expect(Date.now()).toBeLessThan(pausedUntil.getTime());
    expect(await step({ concurrencyPerMerchant: 1 })).toMatchObject({
      attempted: 0,
      nextDueAt: pausedUntil.toISOString(),
    });
    expect(failing.received).toHaveLength(5);
    for (const id of failingIds) {
      expect(await fixture.jobOf(id)).toMatchObject({ status: 'pending', nextAttemptAt: pausedUntil });
    }
    for (const id of failingIds.slice(0, 5)) expect(await fixture.attemptsOf(id)).toHaveLength(1);
  });

  it('attempts in flight when a host pauses do not lengthen its pause (4 at once)', async () => {
    const failing = await receiver(Array<number>(20).fill(500), { delayMs: 100 });
    const ids: string[] = [];
    for (let i = 0; i < 10; i++) ids.push(await fixture.eventFor(failing.url));
    const answer = await step({ concurrencyPerMerchant: 4 });
    // The fifth failure paused it; those already POSTing when it did still ran, no new one started.
    expect(answer.attempted).toBeGreaterThanOrEqual(5);
    expect(answer.attempted).toBeLessThanOrEqual(8);
    expect(failing.received).toHaveLength(answer.attempted);
    const [pause] = await sql(
      `select failures, paused_until from delivery_host_pauses where merchant_id = ? and host = ?`,
      [fixture.merchantId, new URL(failing.url).host],
    );
    // Five failures in a row: 30 s, not doubled by the failures of attempts begun before it.
    expect(pause).toMatchObject({ failures: 5 });
    const pausedUntil = new Date(pause!.paused_until as Date);
    expect(pausedUntil.getTime() - Date.now()).toBeLessThanOrEqual(30_000);
    const jobs = await Promise.all(ids.map((id) => fixture.jobOf(id)));
    expect(jobs.filter((j) => j.attempts === 1)).toHaveLength(answer.attempted);
    for (const job of jobs.filter((j) => j.attempts === 0)) expect(job.nextAttemptAt).toEqual(pausedUntil);
  });
});
