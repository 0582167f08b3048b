import type { Middleware } from 'koa';
import { isTemporalUnreachable } from '../../temporal/grpcErrors';
import { AppError } from '../../errors';
import type { AppState } from '../context';

interface HttpLikeError {
  status?: number;
  statusCode?: number;
  expose?: boolean;
  message?: string;
}

/** Koa's own HTTP errors (from allowedMethods and the like) that may be shown as they are. */
function fromHttpError(err: HttpLikeError): AppError | undefined {
  const status = err.status ?? err.statusCode;
  if (!status || status < 400 || status >= 500 || !err.expose) return undefined;
  if (status === 405) return new AppError(405, 'method_not_allowed', 'Method not allowed on this route.');
  if (status === 404) return new AppError(404, 'not_found', 'Route not found.');
  return new AppError(status, 'bad_request', err.message ?? 'Bad request.');
}

/** gRPC UNAVAILABLE / DEADLINE_EXCEEDED from Temporal: nothing was decided; the caller may retry. */
export function fromTemporalError(err: unknown): AppError | undefined {
  return isTemporalUnreachable(err) ? serviceUnavailable() : undefined;
}

export function serviceUnavailable(): AppError {
  return new AppError(
    503,
    'service_unavailable',
    'The workflow service is temporarily unavailable; retry with the same externalId.',
  );
}

/**
 * The one catch point. Only AppError (and Koa's exposable 4xx errors) reach the client as
 * they are; anything else is logged with its stack and answered as a bare 500.
 */
export function errorHandler(): Middleware<AppState> {
  return async (ctx, next) => {
    try {
      await next();
      if (ctx.status === 404 && ctx.body === undefined) throw new AppError(404, 'not_found', 'Route not found.');
    } catch (raw) {
      const known = raw instanceof AppError ? raw : (fromTemporalError(raw) ?? fromHttpError(raw as HttpLikeError));
      const err =
        known ?? new AppError(500, 'internal_error', 'Internal error. Quote the request id when asking for help.');
      if (!known) ctx.state.log.error({ err: raw }, 'unhandled error');
      ctx.status = err.status;
      ctx.set(err.headers);
      ctx.body = { code: err.code, message: err.message, details: err.details };
    }
  };
}
