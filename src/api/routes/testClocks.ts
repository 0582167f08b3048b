import { z } from 'zod';
import type { EntityManager } from '@mikro-orm/postgresql';
import { TEST_CLOCK_STATUSES } from '../../db/entities';
import { isId } from '../../ids';
import {
  MAX_ADVANCE_YEARS,
  MAX_CLOCK_SUBSCRIPTIONS,
  findTestClock,
  createTestClock,
  listTestClocks,
  testClockNotFound,
} from '../../domain/testClocks';
import { advanceTestClock, deleteTestClock, type TestClockUseCases } from '../../app/testClocks';
import type { Caller } from '../context';
import { CursorCodec } from '../cursor';
import { AUTH_ERRORS, defineRoute } from '../routing';
import { timestamp } from '../schemas';
import { isoInstant, page, type ListSettings } from './lists';

export const testClockSchema = z
  .object({
    id: z.string().describe('`clk_...`'),
    name: z.string().nullable(),
    frozenTime: timestamp.describe("the clock's time (moves in steps while `advancing`)"),
    status: z
      .enum(TEST_CLOCK_STATUSES)
      .describe(
        '`advancing` until everything due up to the advance’s `frozenTime` happened and every charge is decided',
      ),
    subscriptionCount: z
      .number()
      .int()
      .describe(`its subscriptions not cancelled (at most ${MAX_CLOCK_SUBSCRIPTIONS})`),
    createdAt: timestamp.describe('real time'),
  })
  .meta({ id: 'TestClock' });

export const createTestClockBody = z
  .object({
    frozenTime: isoInstant.optional().describe("the clock's starting time (default now)"),
    name: z.string().min(1).max(255).optional(),
  })
  .strict();

export const advanceTestClockBody = z
  .object({
    frozenTime: isoInstant.describe(
      `later than the clock's time, at most ${MAX_ADVANCE_YEARS} years ahead (400 \`validation_error\` otherwise)`,
    ),
  })
  .strict();

const listTestClocksQuery = z.object(page).strict();
const clockParams = z.object({ testClockId: z.string() });

const nextCursor = z.string().nullable().describe('pass as `cursor` for the next page; null on the last page');

/** Live keys never see a clock: every route answers them as an unknown one (404). */
function testOnly(caller: Caller): void {
  if (caller.environment !== 'test') throw testClockNotFound();
}

export function testClockRoutes(deps: TestClockUseCases & { em: EntityManager; settings: ListSettings }) {
  const { em } = deps;
  const codec = new CursorCodec(deps.settings.cursorSecret);
  const binding = (caller: Caller) => ({
    list: 'test_clocks',
    merchantId: caller.merchantId,
    environment: caller.environment,
  });
  const found = async (caller: Caller, id: string) => {
    testOnly(caller);
    if (!isId('testClock', id)) throw testClockNotFound();
    const clock = await findTestClock(em, caller, id);
    if (!clock) throw testClockNotFound();
    return clock;
  };
  return [
    defineRoute({
      method: 'post',
      path: '/test-clocks',
      operationId: 'createTestClock',
      tag: 'Test clocks',
      summary: 'Create a test clock (test keys only): subscriptions created on it live on its time.',
      description:
        'A subscription created with `testClock` waits for the clock, not for real time: nothing becomes due while it stands still; `POST /test-clocks/{id}/advance` makes everything due happen in clock-time order. Live keys: 404.',
      body: createTestClockBody,
      response: testClockSchema,
      errors: ['validation_error', ...AUTH_ERRORS, 'not_found'],
      handler: async ({ body, caller }) => {
        testOnly(caller);
        return createTestClock(em, caller, body);
      },
    }),
    defineRoute({
      method: 'get',
      path: '/test-clocks',
      operationId: 'listTestClocks',
      tag: 'Test clocks',
      summary: "List the caller's test clocks, newest first (by real creation time).",
      query: listTestClocksQuery,
      response: z.object({ testClocks: z.array(testClockSchema), nextCursor }),
      errors: ['validation_error', ...AUTH_ERRORS, 'not_found'],
      handler: async ({ query, caller }) => {
        testOnly(caller);
        const after = query.cursor === undefined ? undefined : codec.decode(query.cursor, binding(caller));
        const result = await listTestClocks(em, caller, { limit: query.limit, ...(after ? { after } : {}) });
        return {
          testClocks: result.items,
          nextCursor: result.next ? codec.encode(result.next, binding(caller)) : null,
        };
      },
    }),
    defineRoute({
      method: 'get',
      path: '/test-clocks/{testClockId}',
      operationId: 'getTestClock',
      tag: 'Test clocks',
      summary: 'Retrieve a test clock.',
      params: clockParams,
      response: testClockSchema,
      errors: [...AUTH_ERRORS, 'not_found'],
      handler: async ({ params, caller }) => found(caller, params.testClockId),
    }),
    defineRoute({
      method: 'delete',
      path: '/test-clocks/{testClockId}',
      operationId: 'deleteTestClock',
      tag: 'Test clocks',
      summary:
        'Delete a test clock: its subscriptions are cancelled (reason `test_clock_deleted`, no emails; their `subscription.cancelled` events fire).',
      params: clockParams,
      response: testClockSchema.extend({ deleted: z.literal(true) }).meta({ id: 'DeletedTestClock' }),
      errors: [...AUTH_ERRORS, 'not_found', 'test_clock_advancing', 'service_unavailable'],
      handler: async ({ params, caller }) => {
        await found(caller, params.testClockId);
        return deleteTestClock(deps, caller, params.testClockId);
      },
    }),
    defineRoute({
      method: 'post',
      path: '/test-clocks/{testClockId}/advance',
      operationId: 'advanceTestClock',
      tag: 'Test clocks',
      summary: 'Advance a test clock: everything due up to `frozenTime` happens in clock-time order.',
      description:
        'Answers the clock `advancing`; it reads `frozenTime` and `ready` once every renewal, retry, decline, email and event due by then happened and every charge it made is decided. While advancing, an advance, a create on the clock and its DELETE are 409 `test_clock_advancing`.',
      params: clockParams,
      body: advanceTestClockBody,
      response: testClockSchema,
      errors: ['validation_error', ...AUTH_ERRORS, 'not_found', 'test_clock_advancing', 'service_unavailable'],
      handler: async ({ params, body, caller }) => {
        testOnly(caller);
        if (!isId('testClock', params.testClockId)) throw testClockNotFound();
        return advanceTestClock(deps, caller, params.testClockId, body.frozenTime);
      },
    }),
  ];
}
