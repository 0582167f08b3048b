import type { Middleware } from 'koa';
import type { Logger } from '../../logger';
import { newId } from '../../ids';
import type { AppState } from '../context';

const CALLER_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * Gives every request an id (the caller's `X-Request-Id` if it is sane), a child logger,
 * and one access-log line. Logs carry method, route, status and timing; never headers.
 */
export function requestContext(logger: Logger): Middleware<AppState> {
  return async (ctx, next) => {
    const started = process.hrtime.bigint();
    const incoming = ctx.get('X-Request-Id');
    const requestId = CALLER_REQUEST_ID.test(incoming) ? incoming : newId('request');
    ctx.state.requestId = requestId;
    ctx.state.log = logger.child({ requestId });
    ctx.set('X-Request-Id', requestId);
    try {
      await next();
    } finally {
      const ms = Number(process.hrtime.bigint() - started) / 1e6;
      const level = ctx.status >= 500 ? 'error' : 'info';
      ctx.state.log[level](
        {
          method: ctx.method,
          path: ctx.path,
          status: ctx.status,
          ms: Math.round(ms * 10) / 10,
          merchantId: ctx.state.caller?.merchantId,
        },
        'request',
      );
    }
  };
}
