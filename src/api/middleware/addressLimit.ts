import type { Middleware } from 'koa';
import { AppError, errors } from '../../errors';
import type { AppState } from '../context';
import { rateLimitHeaders, type RateDecision, type RateLimiter } from '../rateLimiter';
import { clientAddress } from './authenticate';

/**
 * The per-address limit of the routes without authentication (decision 0081), counted in this
 * process's memory (never a database round trip) under the address TRUST_PROXY_HOPS vouches for
 * (clientAddress). Absent limiter: no limit.
 */
function tooMany(decision: RateDecision): AppError {
  return errors.rateLimited(
    `Too many requests from this address. Retry after ${decision.retryAfterSeconds} s.`,
    rateLimitHeaders(decision),
  );
}

/** Every request counts (`GET /readyz`: each costs a database and a Temporal round trip). */
export function limitEveryRequest(limiter: RateLimiter | undefined): Middleware<AppState> {
  return async (ctx, next) => {
    if (limiter) {
      const key = `unauth:${clientAddress(ctx)}`;
      const decision = limiter.spend(key) ?? (await limiter.consume(key));
      if (!decision.allowed) throw tooMany(decision);
    }
    return next();
  };
}

/**
 * Refused requests count (provider webhooks: a bad id, an unknown processor, a bad signature);
 * an address over its budget is refused before any work, until a token is due. A request that
 * verifies is never counted: a provider's steady traffic from one address is not limited.
 */
export function limitRefusals(limiter: RateLimiter | undefined): Middleware<AppState> {
  return async (ctx, next) => {
    if (!limiter) return next();
    const key = `unauth:${clientAddress(ctx)}`;
    const blocked = limiter.blocked(key);
    if (blocked) throw tooMany(blocked);
    try {
      return await next();
    } catch (err) {
      if (err instanceof AppError && err.status >= 400 && err.status < 500) {
        const decision = await limiter.consume(key);
        if (!decision.allowed) throw tooMany(decision);
      }
      throw err;
    }
  };
}
