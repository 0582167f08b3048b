import type { EntityManager } from '@mikro-orm/postgresql';
import { LockMode } from '@mikro-orm/core';
import { Merchant, TestClock } from '../db/entities';
import { AppError, errors } from '../errors';
import { newId } from '../ids';
import type { RecordScope } from './scope';
import type { ListPosition, Page, PageRequest } from './paging';

/**
 * Test clocks (PRODUCT.md "Test clocks (test keys only)", decision 0090): a clock per merchant
 * and test environment; subscriptions created on it live on its time; an advance moves it
 * (workflows/testClock.ts) while it is `advancing`.
 */

/** Subscriptions not cancelled one clock may hold (`test_clock_full` beyond). */
export const MAX_CLOCK_SUBSCRIPTIONS = 100;
/** How far one advance may move a clock: 5 calendar years. */
export const MAX_ADVANCE_YEARS = 5;

export const testClockNotFound = () => errors.notFound('Test clock');

export function presentTestClock(c: TestClock, subscriptionCount: number) {
  return {
    id: c.id,
    name: c.name,
    frozenTime: c.frozenTime.toISOString(),
    status: c.status,
    subscriptionCount,
    createdAt: c.createdAt.toISOString(),
  };
}

export type TestClockResponse = ReturnType<typeof presentTestClock>;

const advancing = (c: TestClock) =>
  new AppError('test_clock_advancing', 'The test clock is advancing; try again once it is ready.', {
    testClockId: c.id,
  });

/** Subscriptions not cancelled per clock (the partial index subscriptions_test_clock_live_idx). */
async function liveCounts(em: EntityManager, clockIds: string[]): Promise<Map<string, number>> {
  if (clockIds.length === 0) return new Map();
  // `em.execute` runs in em's transaction when it has one (a create's, holding the clock's lock);
  // `getConnection().execute` would take a second pooled connection, and creates that hold the
  // whole pool while waiting for the lock would starve the one holding it.
  const rows: Array<{ test_clock_id: string; n: string | number }> = await em.execute(
    `select test_clock_id, count(*) as n from subscriptions
      where test_clock_id in (${clockIds.map(() => '?').join(', ')}) and status <> 'cancelled'
      group by test_clock_id`,
    clockIds,
  );
  return new Map(rows.map((r) => [r.test_clock_id, Number(r.n)]));
}

async function view(em: EntityManager, c: TestClock): Promise<TestClockResponse> {
  const counts = await liveCounts(em, [c.id]);
  return presentTestClock(c, counts.get(c.id) ?? 0);
}

export async function createTestClock(
  em: EntityManager,
  scope: RecordScope,
  input: { frozenTime?: Date | undefined; name?: string | undefined },
): Promise<TestClockResponse> {
  const fork = em.fork();
  const now = new Date();
  const clock = fork.create(TestClock, {
    id: newId('testClock'),
    merchant: fork.getReference(Merchant, scope.merchantId),
    environment: scope.environment,
    name: input.name ?? null,
    frozenTime: input.frozenTime ?? now,
    status: 'ready',
    advanceTo: null,
    createdAt: now,
    updatedAt: now,
  });
  await fork.flush();
  return presentTestClock(clock, 0);
}

export async function findTestClock(
  em: EntityManager,
  scope: RecordScope,
  id: string,
): Promise<TestClockResponse | null> {
  const fork = em.fork();
  const clock = await fork.findOne(TestClock, { id, merchant: scope.merchantId, environment: scope.environment });
  return clock ? view(fork, clock) : null;
}

/** GET /test-clocks: newest first by real creation time (Lists conventions). */
export async function listTestClocks(
  em: EntityManager,
  scope: RecordScope,
  page: PageRequest,
): Promise<Page<TestClockResponse>> {
  const fork = em.fork();
  const after = page.after;
  const rows = await fork.find(
    TestClock,
    {
      merchant: scope.merchantId,
      environment: scope.environment,
      ...(after
        ? { $or: [{ createdAt: { $lt: after.createdAt } }, { createdAt: after.createdAt, id: { $lt: after.id } }] }
        : {}),
    },
    { orderBy: { createdAt: 'desc', id: 'desc' }, limit: page.limit + 1 },
  );
  const kept = rows.slice(0, page.limit);
  const counts = await liveCounts(
    fork,
    kept.map((c) => c.id),
  );
  const last = kept[kept.length - 1];
  const next: ListPosition | null =
    rows.length > page.limit && last ? { createdAt: last.createdAt, id: last.id } : null;
  return { items: kept.map((c) => presentTestClock(c, counts.get(c.id) ?? 0)), next };
}

/** The latest instant one advance may reach from `from`. */
export function latestAdvance(from: Date): Date {
  const limit = new Date(from.getTime());
  limit.setUTCFullYear(limit.getUTCFullYear() + MAX_ADVANCE_YEARS);
  return limit;
}

const frozenTimeIssue = (message: string) =>
  errors.validation(`Invalid request body: frozenTime: ${message}`, {
    issues: [{ path: 'frozenTime', code: 'invalid_value', message }],
  });

/**
 * POST /test-clocks/{id}/advance, its record side: the clock becomes `advancing` towards `to`
 * (one conditional change under the row's lock: a second advance is refused: `test_clock_advancing`). Answers the clock.
 */
export async function beginAdvance(
  em: EntityManager,
  scope: RecordScope,
  id: string,
  to: Date,
): Promise<TestClockResponse> {
  const fork = em.fork();
  const clock = await fork.transactional(async (tx) => {
    const c = await tx.findOne(
      TestClock,
      { id, merchant: scope.merchantId, environment: scope.environment },
      { lockMode: LockMode.PESSIMISTIC_WRITE },
    );
    if (!c) throw testClockNotFound();
    if (c.status === 'advancing') throw advancing(c);
    if (to.getTime() <= c.frozenTime.getTime()) {
      throw frozenTimeIssue(`must be later than the clock's time (${c.frozenTime.toISOString()}).`);
    }
    const limit = latestAdvance(c.frozenTime);
    if (to.getTime() > limit.getTime()) {
      throw frozenTimeIssue(
        `at most ${MAX_ADVANCE_YEARS} years after the clock's time (${limit.toISOString()} at the latest).`,
      );
    }
    c.status = 'advancing';
    c.advanceTo = to;
    c.updatedAt = new Date();
    return c;
  });
  return view(fork, clock);
}

/** An advance that could not be started (the workflow service refused or did not answer): ready again. */
export async function abandonAdvance(em: EntityManager, id: string): Promise<void> {
  await em
    .fork()
    .nativeUpdate(TestClock, { id, status: 'advancing' }, { status: 'ready', advanceTo: null, updatedAt: new Date() });
}

/**
 * A customer created on a clock: one of the caller's (`not_found`), not advancing
 * (`test_clock_advancing`). Customers take no seat: the limit counts subscriptions.
 */
export async function clockForCreate(em: EntityManager, scope: RecordScope, clockId: string): Promise<TestClock> {
  const clock = await em.findOne(TestClock, {
    id: clockId,
    merchant: scope.merchantId,
    environment: scope.environment,
  });
  if (!clock) throw testClockNotFound();
  if (clock.status === 'advancing') throw advancing(clock);
  return clock;
}

/**
 * A subscription created on a clock (under the create's transaction): the clock's row locked,
 * in scope (`not_found`), not advancing (`test_clock_advancing`), not full (`test_clock_full`).
 * Answers the clock's time: the subscription's clock-time creation.
 */
export async function takeClockSeat(tx: EntityManager, scope: RecordScope, clockId: string): Promise<TestClock> {
  const clock = await tx.findOne(
    TestClock,
    { id: clockId, merchant: scope.merchantId, environment: scope.environment },
    { lockMode: LockMode.PESSIMISTIC_WRITE },
  );
  if (!clock) throw testClockNotFound();
  if (clock.status === 'advancing') throw advancing(clock);
  const counts = await liveCounts(tx, [clock.id]);
  const current = counts.get(clock.id) ?? 0;
  if (current >= MAX_CLOCK_SUBSCRIPTIONS) {
    throw new AppError(
      'test_clock_full',
      `A test clock holds at most ${MAX_CLOCK_SUBSCRIPTIONS} subscriptions not cancelled.`,
      { testClockId: clock.id, limit: MAX_CLOCK_SUBSCRIPTIONS },
    );
  }
  return clock;
}

/**
 * A deleted clock's customers live in real time from then on (their clock-time `createdAt` stays,
 * as its subscriptions' dates do): a subscription created for one later is not refused for a
 * clock that is gone.
 */
export async function detachClockCustomers(em: EntityManager, clockId: string): Promise<void> {
  await em.execute(`update customers set test_clock_id = null where test_clock_id = ?`, [clockId]);
}

/** The clock's subscriptions not cancelled, in real creation order (the advance's order). */
export async function clockSubscriptionIds(em: EntityManager, clockId: string): Promise<string[]> {
  const rows: Array<{ id: string }> = await em
    .getConnection()
    .execute(`select id from subscriptions where test_clock_id = ? and status <> 'cancelled' order by created_at, id`, [
      clockId,
    ]);
  return rows.map((r) => r.id);
}

/** One step of an advance: the clock reads `nowMs` (what GET shows while advancing). */
export async function setClockTime(em: EntityManager, clockId: string, nowMs: number): Promise<void> {
  await em
    .getConnection()
    .execute(
      `update test_clocks set frozen_time = greatest(frozen_time, ?), updated_at = now() where id = ? and status = 'advancing'`,
      [new Date(nowMs), clockId],
    );
}

/** The advance is over: the clock reads its target and is ready. Answers the target (null: not advancing). */
export async function finishAdvance(em: EntityManager, clockId: string): Promise<number | null> {
  const rows: Array<{ frozen_time: Date }> = await em.getConnection().execute(
    `update test_clocks set frozen_time = coalesce(advance_to, frozen_time), advance_to = null, status = 'ready',
            updated_at = now()
      where id = ? and status = 'advancing' returning frozen_time`,
    [clockId],
  );
  return rows[0] ? new Date(rows[0].frozen_time).getTime() : null;
}

/** The clock's state for its advance workflow: its time and target (null: gone). */
export async function clockAdvanceOf(
  em: EntityManager,
  clockId: string,
): Promise<{ frozenTimeMs: number; advanceToMs: number | null; status: string } | null> {
  const clock = await em.fork().findOne(TestClock, { id: clockId });
  if (!clock) return null;
  return {
    frozenTimeMs: clock.frozenTime.getTime(),
    advanceToMs: clock.advanceTo?.getTime() ?? null,
    status: clock.status,
  };
}
