import type { EntityManager } from '@mikro-orm/postgresql';
import { TestClock } from '../db/entities';
import { AppError } from '../errors';
import {
  abandonAdvance,
  beginAdvance,
  clockSubscriptionIds,
  detachClockCustomers,
  findTestClock,
  testClockNotFound,
  type TestClockResponse,
} from '../domain/testClocks';
import type { RecordScope } from '../domain/scope';
import type { TestClockGateway } from '../temporal/testClockGateway';
import { cancelSubscription, type SubscriptionUseCases } from './subscriptions';
import { workflowServiceUnavailable } from './workflowTrouble';

/** The test clock use cases (decision 0090): the record, the clock's advance workflow, its subscriptions' cancels. */
export interface TestClockUseCases {
  em: EntityManager;
  testClocks: Pick<TestClockGateway, 'startAdvance'>;
  subscriptions: SubscriptionUseCases['subscriptions'];
}

/** The reason a clock's DELETE cancels its subscriptions with (PRODUCT.md). */
export const TEST_CLOCK_DELETED = 'test_clock_deleted';

/**
 * POST /test-clocks/{id}/advance: the clock becomes `advancing` (409 if it is already), then its
 * advance workflow is started; one that cannot be started leaves the clock `ready` again (503).
 */
export async function advanceTestClock(
  deps: TestClockUseCases,
  caller: RecordScope,
  clockId: string,
  to: Date,
): Promise<TestClockResponse> {
  const clock = await beginAdvance(deps.em, caller, clockId, to);
  try {
    await deps.testClocks.startAdvance(clockId, caller.merchantId);
  } catch (err) {
    await abandonAdvance(deps.em, clockId);
    throw workflowServiceUnavailable('The workflow service did not take the advance; the clock did not move. Retry.', {
      testClock: { ...clock, status: 'ready' },
      cause: err instanceof Error ? err.name : 'unknown',
    });
  }
  return clock;
}

/**
 * DELETE /test-clocks/{id}: 409 while advancing; each subscription not cancelled is cancelled as a
 * DELETE with reason `test_clock_deleted` and no email (its `subscription.cancelled` event fires),
 * then the clock is removed (its subscriptions keep their clock-time dates). Answers the clock as
 * it was, `deleted: true`.
 */
export async function deleteTestClock(
  deps: TestClockUseCases,
  caller: RecordScope,
  clockId: string,
): Promise<TestClockResponse & { deleted: true }> {
  const before = await findTestClock(deps.em, caller, clockId);
  if (!before) throw testClockNotFound();
  if (before.status === 'advancing') {
    throw new AppError('test_clock_advancing', 'The test clock is advancing; delete it once it is ready.', {
      testClockId: clockId,
    });
  }
  for (const subscriptionId of await clockSubscriptionIds(deps.em, clockId)) {
    await cancelSubscription(deps, caller, subscriptionId, { reason: TEST_CLOCK_DELETED, notify: false });
  }
  const removed = await deps.em.fork().nativeDelete(TestClock, {
    id: clockId,
    merchant: caller.merchantId,
    environment: caller.environment,
    status: 'ready',
  });
  if (removed === 0) {
    // An advance began meanwhile: the clock stays (its subscriptions are cancelled already).
    throw new AppError('test_clock_advancing', 'The test clock is advancing; delete it once it is ready.', {
      testClockId: clockId,
    });
  }
  await detachClockCustomers(deps.em.fork(), clockId);
  return { ...before, deleted: true as const };
}
