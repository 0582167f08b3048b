import { ApplicationFailure } from '@temporalio/common';
import type { ActivityInterceptors } from '@temporalio/worker';
import { databaseErrorSummary, describeDatabaseError } from '../db/dbErrors';

/**
 * What an activity's database error leaves in Temporal's history (issue 44, item 13; decision
 * 0074): its summary (SQLSTATE class and code, constraint, table, error type), never its message,
 * stack or cause. MikroORM writes the SQL and its parameters into the message and PostgreSQL's
 * detail quotes values (a customer's email, a card token): history keeps them for its retention and
 * the UI shows them to every operator. The same summary the logs get (src/db/dbErrors.ts).
 *
 * The failure keeps the error's type (e.g. `UniqueConstraintViolationException`) and stays
 * retryable, so retry policies and workflows see what they saw before; only the text changes.
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
