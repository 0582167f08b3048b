import type { Middleware } from 'koa';
import type { Authenticator } from '../../auth/authenticator';
import type { AppState } from '../context';

export function authenticate(authenticator: Authenticator): Middleware<AppState> {
  return async (ctx, next) => {
    ctx.state.caller = await authenticator.authenticate(ctx.get('Authorization') || undefined);
    return next();
  };
}
