import { GET_CONNECTIONS, GET_UNLIMITED } from './knobs';
import { combine, measure, mirrored } from './measure';
import type { RunStack } from './setup';

/**
 * The GET group: the baseline (bare Koa + one indexed SELECT, bench/baseline.ts), the product's
 * GET /payments/{id} with Basic auth, and the diagnostic: the same GET on an API process without
 * rate limits (the limiter's cost), in mirrored rounds; each arm's slices combined.
 */
export async function getGroup(stack: RunStack) {
  const { baselineUrl, apiUrl, unlimitedUrl, paymentId, basic } = stack;
  const get =
    (name: string, url: string, headers: Record<string, string> = {}) =>
    (warmupS: number) =>
      measure(name, { url, connections: GET_CONNECTIONS, headers }, {}, warmupS);
  const [baseline, product, unlimited] = await mirrored([
    get('baseline GET /payments/:id (bare Koa + pg)', `${baselineUrl}/payments/${paymentId}`),
    get('product GET /payments/{id}', `${apiUrl}/payments/${paymentId}`, { authorization: basic }),
    ...(GET_UNLIMITED
      ? [
          get('product GET /payments/{id}, rate limiting off', `${unlimitedUrl}/payments/${paymentId}`, {
            authorization: basic,
          }),
        ]
      : []),
  ]);
  return {
    baseline: combine(baseline!),
    productGet: combine(product!),
    productGetUnlimited: unlimited ? combine(unlimited) : undefined,
  };
}
