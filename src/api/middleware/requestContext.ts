import type { Middleware } from 'koa';
import type { Logger } from '../../logger';
import { newId } from '../../ids';
import { withLogContext } from '../../logContext';
import type { AppState } from '../context';

const CALLER_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * Gives every request an id (the caller's `X-Request-Id` if it is sane) and one access-log line.
 * The request is handled inside a log context (src/logContext.ts): every line logged for it
 * carries `requestId`, and every workflow it starts carries the id too (src/temporal/requestId.ts).
 * Logs carry method, route, status and timing; never headers.
 */
export function requestContext(logger: Logger): Middleware<AppState> {
  return (ctx, next) => {
    const incoming = ctx.get('X-Request-Id');
    const requestId = CALLER_REQUEST_ID.test(incoming) ? incoming : newId('request');
    return withLogContext({ requestId }, async () => {
      const started = process.hrtime.bigint();
      ctx.state.requestId = requestId;
      ctx.state.log = logger;
      ctx.set('X-Request-Id', requestId);
      try {
        await next();
      } finally {
        const level = ctx.status >= 500 ? 'error' : 'info';
        if (logger.isLevelEnabled(level)) {
          const ms = Number(process.hrtime.bigint() - started) / 1e6;
          logger[level](
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
      }
    });
  };
}
