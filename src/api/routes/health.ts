import Router from '@koa/router';
import { AppError } from '../../errors';
import type { AppState } from '../context';
import { limitEveryRequest } from '../middleware/addressLimit';
import type { RateLimiter } from '../rateLimiter';

export type Probe = () => Promise<void>;

const PROBE_TIMEOUT_MS = 2000;

async function run(probe: Probe): Promise<'ok' | string> {
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      probe(),
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error(`timed out after ${PROBE_TIMEOUT_MS} ms`)), PROBE_TIMEOUT_MS);
      }),
    ]);
    return 'ok';
  } catch (err) {
    // Class and code only: a driver's message may carry SQL, parameters or addresses.
    const code = (err as { code?: unknown } | null)?.code;
    const name = err instanceof Error ? err.constructor.name : typeof err;
    return `unreachable: ${name}${typeof code === 'string' || typeof code === 'number' ? ` ${code}` : ''}`.slice(
      0,
      200,
    );
  } finally {
    clearTimeout(timer);
  }
}

/**
 * `/healthz`: the process is up. `/readyz`: PostgreSQL and Temporal answer, else 503 `not_ready`
 * (a probe's failure, whatever it is, is caught here: never a 500). No auth on either; `/readyz`
 * costs a round trip to each, so it is limited per client address (`limiter`, decision 0081).
 */
export function healthRoutes(probes: Record<string, Probe>, limiter?: RateLimiter): Router<AppState> {
  const router = new Router<AppState>();
  router.get('/healthz', (ctx) => {
    ctx.body = { status: 'ok' };
  });
  router.get('/readyz', limitEveryRequest(limiter), async (ctx) => {
    const names = Object.keys(probes);
    const results = await Promise.all(names.map((n) => run(probes[n]!)));
    const checks = Object.fromEntries(names.map((n, i) => [n, results[i]]));
    if (results.some((r) => r !== 'ok')) {
      throw new AppError('not_ready', 'A dependency is unreachable.', { checks });
    }
    ctx.body = { status: 'ok', checks };
  });
  return router;
}
