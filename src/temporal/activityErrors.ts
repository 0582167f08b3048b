import { ApplicationFailure } from '@temporalio/common';
import type { ActivityInterceptors } from '@temporalio/worker';
import { ACTIVITY_BUG } from '../../workflows/activityBug';
import { databaseErrorSummary, describeDatabaseError, type DatabaseErrorSummary } from '../db/dbErrors';

/**
 * What an activity's database error leaves in Temporal's history (issue 44, item 13; decision
 * 0074): its summary (SQLSTATE class and code, constraint, table, error type), never its message,
 * stack or cause. MikroORM writes the SQL and its parameters into the message and PostgreSQL's
 * detail quotes values (a customer's email, a card token): history keeps them for its retention and
 * the UI shows them to every operator. The same summary the logs get (src/db/dbErrors.ts).
 *
 * The failure keeps the error's type (e.g. `DeadlockException`) and stays retryable, unless it is a
 * bug (below): then it is the non-retryable ACTIVITY_BUG.
 */
export function databaseErrorScrubbingInterceptors(): ActivityInterceptors {
  return {
    inbound: {
      execute: async (input, next) => {
        try {
          return await next(input);
        } catch (err) {
          const summary = databaseErrorSummary(err);
          if (!summary) throw err;
          if (isDatabaseBug(summary)) {
            throw ApplicationFailure.create({
              message: `activity bug: ${summary.errorType}: ${describeDatabaseError(summary)}`,
              type: ACTIVITY_BUG,
              nonRetryable: true,
              details: [{ ...summary }],
            });
          }
          throw ApplicationFailure.create({
            message: describeDatabaseError(summary),
            type: summary.errorType,
            details: [summary],
          });
        }
      },
    },
  };
}

/**
 * SQLSTATE classes no retry can fix (issue 44, item 5; decision 0077): 22 data exception (a value
 * out of range, a bad cast), 23 integrity constraint violation, 42 syntax error or access rule
 * violation (a missing column, a bad statement). The unique violations the code expects (an
 * idempotent create racing its twin: createOrFindRefund, createOrFindSubscription, the refund's
 * reserve-and-insert) are caught where they happen and never leave their activity; one that does
 * is a bug. Everything else stays retryable: connection failures (08, 57P0x, 53), serialization
 * failures and deadlocks (40001, 40P01), lock timeouts (55P03).
 */
const BUG_SQLSTATE_CLASSES = new Set(['22', '23', '42']);

function isDatabaseBug(summary: DatabaseErrorSummary): boolean {
  return (
    summary.code !== undefined &&
    /^[0-9A-Z]{5}$/.test(summary.code) &&
    BUG_SQLSTATE_CLASSES.has(summary.code.slice(0, 2))
  );
}

/** JavaScript's programming errors: a retry runs the same code on the same input and fails alike. */
const PROGRAMMING_ERRORS: readonly (new (...args: never[]) => Error)[] = [
  TypeError,
  ReferenceError,
  RangeError,
  SyntaxError,
];

/**
 * Issue 44, item 5 (decision 0077): a bug in an activity (a TypeError, a ReferenceError, a
 * RangeError, a SyntaxError) is not retried every minute forever with an attempt count as its only
 * sign: it fails non-retryably as ACTIVITY_BUG (recognised by that type), which the workflow
 * interceptor (workflows/interceptors.ts) parks: the run marked `Stuck: activity_bug`, counted and
 * alerted, the call asked again later, the record where it is. The failure keeps the error's class
 * in its details and its message (a programming error's message names code, not data); any other
 * error passes through as it is (database errors: the interceptor above).
 */
export function activityBugInterceptors(): ActivityInterceptors {
  return {
    inbound: {
      execute: async (input, next) => {
        try {
          return await next(input);
        } catch (err) {
          if (!(err instanceof Error) || !PROGRAMMING_ERRORS.some((type) => err.constructor === type)) throw err;
          throw ApplicationFailure.create({
            message: `activity bug: ${err.name}: ${err.message}`,
            type: ACTIVITY_BUG,
            nonRetryable: true,
            details: [{ errorType: err.name }],
          });
        }
      },
    },
  };
}
