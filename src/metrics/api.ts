import { Counter, Gauge, Histogram, collectDefaultMetrics, register } from 'prom-client';
import type { Middleware } from 'koa';

/**
 * The API's metrics (docs/observability.md), in prom-client's default registry: the one a
 * cluster primary aggregates over its API processes (dev/stack/cluster.ts). Made once per
 * process, on first use; recording is a few map lookups per request.
 */
export interface ApiMetrics {
  requestDuration: Histogram<'method' | 'route' | 'status'>;
  errors: Counter<'code'>;
  authFailures: Counter<'code'>;
  inFlight: Gauge;
}

/** The `route` label of a request no route matched (404s of unknown paths): one value for all. */
export const UNMATCHED_ROUTE = 'unmatched';

let metrics: ApiMetrics | undefined;

export function apiMetrics(): ApiMetrics {
  return (metrics ??= {
    requestDuration: new Histogram({
      name: 'http_request_duration_seconds',
      help: 'API request duration, by method, route template and status',
      labelNames: ['method', 'route', 'status'],
      // Up to the payment and refund waits (PAYMENT_WAIT_MS, REFUND_WAIT_MS: 5 s by default).
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    }),
    errors: new Counter({
      name: 'http_errors_total',
      help: 'Error answers, by their `code` (4xx and 5xx)',
      labelNames: ['code'],
    }),
    authFailures: new Counter({
      name: 'http_auth_failures_total',
      help: 'Refused authentications, by code (unauthorized, forbidden, merchant_inactive)',
      labelNames: ['code'],
    }),
    inFlight: new Gauge({
      name: 'http_requests_in_flight',
      help: 'Requests being handled right now',
    }),
  });
}

/** Node process metrics (prom-client's defaults): once per process that serves metrics. */
let defaultsOn = false;
export function collectProcessMetrics(): void {
  if (defaultsOn) return;
  defaultsOn = true;
  collectDefaultMetrics();
}

/**
 * The outermost middleware: times every request, labelled with the route template the router
 * matched (`/payments/:paymentId`, never the path with its ids; UNMATCHED_ROUTE when none did)
 * and the final status (set by the error handler inside).
 */
export function httpMetrics(): Middleware {
  const m = apiMetrics();
  return async (ctx, next) => {
    const started = process.hrtime.bigint();
    m.inFlight.inc();
    try {
      await next();
    } finally {
      m.inFlight.dec();
      const matched = (ctx as { _matchedRoute?: unknown })._matchedRoute;
      m.requestDuration.observe(
        { method: ctx.method, route: typeof matched === 'string' ? matched : UNMATCHED_ROUTE, status: ctx.status },
        Number(process.hrtime.bigint() - started) / 1e9,
      );
    }
  };
}

/** The registry's text, for a metrics server. */
export async function renderApiMetrics(): Promise<{ contentType: string; body: string }> {
  return { contentType: register.contentType, body: await register.metrics() };
}
