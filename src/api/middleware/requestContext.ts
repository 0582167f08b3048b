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
    // The child logger is made on first use: most requests at `warn` never log.
    let log: Logger | undefined;
    Object.defineProperty(ctx.state, 'log', {
      get: () => (log ??= logger.child({ requestId })),
      enumerable: true,
      configurable: true,
    });
    ctx.set('X-Request-Id', requestId);
    try {
      await next();
    } finally {
      const level = ctx.status >= 500 ? 'error' : 'info';
      if (logger.isLevelEnabled(level)) {
        const ms = Number(process.hrtime.bigint() - started) / 1e6;
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
    }
  };
}
