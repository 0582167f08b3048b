import { createHash } from 'node:crypto';
import type { Middleware } from 'koa';
import type { Authenticator } from '../../auth/authenticator';
import { AppError, errors } from '../../errors';
import { apiMetrics } from '../../metrics/api';
import type { AppContext, AppState } from '../context';
import { rateLimitHeaders, type RateLimiter } from '../rateLimiter';

/** The rate limits of authenticated routes (PRODUCT.md, "Rate limits"); an absent one is off. */
export interface AuthLimits {
  /** Per API key, across every API process. */
  perKey?: RateLimiter;
  /** Failed authentications per client address, across every API process. */
  authFailures?: RateLimiter;
}

/**
 * The client's address: behind TRUST_PROXY_HOPS trusted proxies, the one the farthest of them saw
 * (the first of the last TRUST_PROXY_HOPS `X-Forwarded-For` entries: Koa keeps only those);
 * otherwise, or without the header, the socket's peer. Entries before those are whatever the
 * client wrote, so a client could pick a fresh address per attempt, or someone else's.
 */
export function clientAddress(ctx: AppContext): string {
  const forwarded = ctx.request.ips;
  const address = forwarded.length > 0 ? forwarded[0]! : (ctx.req.socket.remoteAddress ?? '');
  // Bounded key length whatever a header carries.
  return address.length <= 64 ? address : createHash('sha256').update(address).digest('hex');
}

export function authenticate(authenticator: Authenticator, limits: AuthLimits = {}): Middleware<AppState> {
  const { perKey, authFailures } = limits;
  const failures = apiMetrics().authFailures;
  return async (ctx, next) => {
    const header = ctx.get('Authorization') || undefined;
    const address = authFailures ? `addr:${clientAddress(ctx)}` : '';
    try {
      // Credentials that verify are never refused, whatever the address's failures (an address
      // can be shared or spoofed; a secret of 256 random bits is not guessed by retrying).
      ctx.state.caller = await authenticator.authenticate(header);
    } catch (err) {
      // A refusal (401 / 403); a database outage is no authentication failure.
      if (err instanceof AppError) failures.inc({ code: err.code });
      // Presented credentials that are refused (401) count against the address; none at all do
      // not. Over the budget the refusal is 429 (with when to retry) instead of 401.
      if (authFailures && header !== undefined && err instanceof AppError && err.status === 401) {
        const blocked = authFailures.blocked(address);
        if (blocked) throw tooManyFailures(blocked);
        const decision = await authFailures.consume(address);
        if (!decision.allowed) throw tooManyFailures(decision);
      }
      throw err;
    }
    if (perKey) {
      const key = `key:${ctx.state.caller.apiKeyId}`;
      // Most requests spend from this process's lease: no await then.
      const decision = perKey.spend(key) ?? (await perKey.consume(key));
      // On every answer of the route, errors included (the error handler keeps set headers).
      ctx.set(rateLimitHeaders(decision));
      if (!decision.allowed) {
        throw errors.rateLimited(
          `Rate limit exceeded: at most ${perKey.rule.burst} requests at once and ${perKey.rule.ratePerSecond} per second per API key. Retry after ${decision.retryAfterSeconds} s.`,
          rateLimitHeaders(decision),
        );
      }
    }
    return next();
  };
}

function tooManyFailures(decision: Parameters<typeof rateLimitHeaders>[0]): AppError {
  return errors.rateLimited(
    `Too many failed authentications from this address. Retry after ${decision.retryAfterSeconds} s.`,
    rateLimitHeaders(decision),
  );
}
