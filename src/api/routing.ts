import type Router from '@koa/router';
import type { Middleware } from 'koa';
import { type z } from 'zod';
import type { AppContext, AppState, Caller } from './context';
import { jsonBody } from './middleware/jsonBody';
import { bodyTextIssues, parseOrThrow, queryTextIssues } from './validation';
import type { ErrorCode } from '../errors';

/**
 * A route is declared once: its schemas validate the request, describe the response in the
 * OpenAPI document, and its handler gets typed, validated input.
 */
export interface RouteInput<B, Q, P> {
  body: B;
  query: Q;
  params: P;
  caller: Caller;
  ctx: AppContext;
}

export interface RouteDef<B = unknown, Q = unknown, P = unknown> {
  method: 'get' | 'post' | 'patch' | 'delete';
  /** OpenAPI-style path, e.g. `/payments/{paymentId}`. */
  path: string;
  operationId: string;
  summary: string;
  tag: string;
  description?: string;
  body?: z.ZodType<B>;
  query?: z.ZodType<Q>;
  params?: z.ZodType<P>;
  response: z.ZodType;
  /** The status of a success (PRODUCT.md, "API conventions": 200; `POST /events/{id}/resend`: 202). */
  successStatus?: 200 | 202;
  /**
   * The error codes this route can answer, for the docs: codes only; each one's status comes
   * from the one table (src/errors.ts).
   */
  errors: readonly ErrorCode[];
  handler: (input: RouteInput<B, Q, P>) => Promise<unknown>;
}

export function defineRoute<B = undefined, Q = undefined, P = undefined>(def: RouteDef<B, Q, P>): RouteDef<B, Q, P> {
  return def;
}

/** The codes every authenticated route shares. */
export const AUTH_ERRORS = ['unauthorized', 'forbidden', 'merchant_inactive', 'rate_limited'] as const;

export function koaPath(openApiPath: string): string {
  return openApiPath.replace(/\{(\w+)\}/g, ':$1');
}

export function mountRoutes(
  router: Router<AppState>,
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- heterogeneous route list
  routes: RouteDef<any, any, any>[],
  authenticate: Middleware<AppState>,
): void {
  const body = jsonBody();
  for (const route of routes) {
    const handler: Middleware<AppState> = async (ctx) => {
      // Path ids need no text check: a malformed one is simply not found (404). Query values and
      // body strings (keys too, at any depth, metadata and billing included) must be text
      // PostgreSQL stores unchanged: no U+0000, no lone surrogate, valid UTF-8.
      const input = {
        params: route.params ? parseOrThrow(route.params, ctx.params, 'path') : undefined,
        query: route.query
          ? parseOrThrow(route.query, { ...ctx.query }, 'query', queryTextIssues(ctx.querystring))
          : undefined,
        body: route.body
          ? parseOrThrow(route.body, ctx.state.body ?? {}, 'body', bodyTextIssues(ctx.state.body))
          : undefined,
        caller: ctx.state.caller!,
        ctx,
      };
      ctx.body = await route.handler(input);
      ctx.status = route.successStatus ?? 200;
    };
    // A body is read only where the route takes one: a GET or DELETE body has no meaning and is
    // ignored (docs/decisions.md, "HTTP"), and reads skip the reader ("Performance").
    if (route.body) router[route.method](koaPath(route.path), authenticate, body, handler);
    else router[route.method](koaPath(route.path), authenticate, handler);
  }
}
