import type { Middleware } from 'koa';
import type { Authenticator } from '../../auth/authenticator';
import { AppError } from '../../errors';
import { apiMetrics } from '../../metrics/api';
import type { AppState } from '../context';

export function authenticate(authenticator: Authenticator): Middleware<AppState> {
  const failures = apiMetrics().authFailures;
  return async (ctx, next) => {
    try {
      ctx.state.caller = await authenticator.authenticate(ctx.get('Authorization') || undefined);
    } catch (err) {
      // A refusal (401 / 403); a database outage is no authentication failure.
      if (err instanceof AppError) failures.inc({ code: err.code });
      throw err;
    }
    return next();
  };
}
