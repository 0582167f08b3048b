import type { Middleware } from 'koa';
import { isTemporalUnreachable, isUpdateAborted } from '../../temporal/grpcErrors';
import { databaseUnavailability } from '../../db/dbErrors';
import { AppError, type ErrorCode } from '../../errors';
import type { AppState } from '../context';
import { apiMetrics } from '../../metrics/api';

interface HttpLikeError {
  status?: number;
  statusCode?: number;
  expose?: boolean;
  message?: string;
}

/**
 * The code of each status Koa's own HTTP errors (from allowedMethods and the like) come with,
 * where we have one; any other exposable 4xx is answered as 400 `bad_request` (none is thrown
 * today: the body reader answers its 413 and 415 itself, and @koa/router throws only 405 and 501).
 */
const HTTP_ERROR_CODES: Partial<Record<number, ErrorCode>> = {
  404: 'not_found',
  405: 'method_not_allowed',
  413: 'payload_too_large',
  415: 'unsupported_media_type',
};

const HTTP_ERROR_MESSAGES: Partial<Record<ErrorCode, string>> = {
  not_found: 'Route not found.',
  method_not_allowed: 'Method not allowed on this route.',
};

/** Koa's own HTTP errors that may be shown: their 4xx, as one of our codes. */
function fromHttpError(err: HttpLikeError): AppError | undefined {
  const status = err.status ?? err.statusCode;
  if (!status || status < 400 || status >= 500 || !err.expose) return undefined;
  const code = HTTP_ERROR_CODES[status] ?? 'bad_request';
  return new AppError(code, HTTP_ERROR_MESSAGES[code] ?? err.message ?? 'Bad request.');
}

/**
 * Seconds a client is told to wait after a 503 `service_unavailable`: about what a PostgreSQL
 * restart or a Temporal frontend failover takes, short enough not to hold callers back for long.
 */
export const RETRY_AFTER_SECONDS = 5;

/** The dependency that is down or restarting, named in the message of its 503. */
export type UnavailableDependency = 'workflow service' | 'database';

const UNAVAILABLE_MESSAGES: Record<UnavailableDependency, string> = {
  'workflow service': 'The workflow service is temporarily unavailable; retry with the same externalId.',
  database: 'The database is temporarily unavailable; retry with the same externalId.',
};

/** A dependency is down or restarting: 503 with `Retry-After`, never 500 (a 500 means a bug). */
export function serviceUnavailable(dependency: UnavailableDependency = 'workflow service'): AppError {
  return new AppError(
    'service_unavailable',
    UNAVAILABLE_MESSAGES[dependency],
    {},
    { 'Retry-After': String(RETRY_AFTER_SECONDS) },
  );
}

/** A Temporal call that ended without an outcome (unreachable, overloaded, gave up, an Update aborted with its task): 503. */
export function fromTemporalError(err: unknown): AppError | undefined {
  return isTemporalUnreachable(err) || isUpdateAborted(err) ? serviceUnavailable('workflow service') : undefined;
}

/**
 * The one catch point. Only AppError (and Koa's exposable 4xx errors) reach the client as
 * they are; a dependency outage (Temporal, PostgreSQL) is a 503; anything else is logged with
 * its stack and answered as a bare 500.
 */
export function errorHandler(): Middleware<AppState> {
  const errorAnswers = apiMetrics().errors;
  return async (ctx, next) => {
    try {
      await next();
      if (ctx.status === 404 && ctx.body === undefined) throw new AppError('not_found', 'Route not found.');
    } catch (raw) {
      const database = raw instanceof AppError ? undefined : databaseUnavailability(raw);
      // Class and code only: the message of a database error carries the SQL and its parameters.
      if (database) ctx.state.log.warn({ dependency: 'database', ...database }, 'dependency unavailable');
      const known =
        raw instanceof AppError
          ? raw
          : (fromTemporalError(raw) ??
            (database ? serviceUnavailable('database') : undefined) ??
            fromHttpError(raw as HttpLikeError));
      const err = known ?? new AppError('internal_error', 'Internal error. Quote the request id when asking for help.');
      if (!known) ctx.state.log.error({ err: raw }, 'unhandled error');
      errorAnswers.inc({ code: err.code });
      ctx.status = err.status;
      ctx.set(err.headers);
      ctx.body = { code: err.code, message: err.message, details: err.details };
    }
  };
}
