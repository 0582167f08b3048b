import { sleep } from '../stack';
import { AMOUNT, CHECKOUT_PAUSE_MS, CLIENT_TIMEOUT_MS, CREATE_PAUSE_MS, EVERGREEN_DAYS } from './knobs';
import { percentile, round } from './measure';

/** The subscription bench's calls to the API: creating subscriptions, and the one-at-a-time probes. */

export interface Created {
  externalId: string;
  id: string;
  /** The first phase's length in billing days (storm subscriptions). */
  k: number;
  ms: number;
  /** performance.now() when it answered. */
  doneAt: number;
  tries: number;
}

export interface CreateFailure {
  externalId: string;
  error: string;
  tries: number;
}

export async function postJson(
  url: string,
  headers: Record<string, string>,
  body: unknown,
): Promise<{ status: number; json: Record<string, unknown> | null; text: string }> {
  const res = await fetch(url, {
    method: 'POST',
    headers,
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(CLIENT_TIMEOUT_MS),
  });
  const text = await res.text();
  let json: Record<string, unknown> | null = null;
  try {
    json = JSON.parse(text) as Record<string, unknown>;
  } catch {
    // kept as text
  }
  return { status: res.status, json, text };
}

/**
 * Creates `count` subscriptions, `concurrency` in flight; `bodyOf(i, now)` builds each body when
 * it is sent. A subscription counts once it answers 200 `active`; a 5xx, 409 or network error is
 * retried (same body, so the same externalId: the API returns the one it made) up to 4 tries.
 */
export async function createMany(
  apiUrl: string,
  headers: Record<string, string>,
  count: number,
  concurrency: number,
  bodyOf: (i: number, now: number) => { externalId: string; k: number; body: Record<string, unknown> },
  progress?: (done: number) => void,
): Promise<{ created: Created[]; failed: CreateFailure[]; seconds: number; otherAnswers: Record<string, number> }> {
  const created: Created[] = [];
  const failed: CreateFailure[] = [];
  const otherAnswers: Record<string, number> = {};
  let next = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: Math.min(concurrency, count) }, async () => {
      for (;;) {
        const i = next++;
        if (i >= count) return;
        const { externalId, k, body } = bodyOf(i, Date.now());
        let lastError = '';
        let done = false;
        for (let tries = 1; tries <= 4 && !done; tries++) {
          const started = performance.now();
          try {
            const res = await postJson(`${apiUrl}/subscriptions`, headers, body);
            const ms = performance.now() - started;
            if (res.status === 200 && res.json?.status === 'active' && typeof res.json.id === 'string') {
              created.push({ externalId, id: res.json.id, k, ms, doneAt: performance.now(), tries });
              done = true;
              break;
            }
            const code = (res.json?.code as string | undefined) ?? String(res.json?.status ?? res.text.slice(0, 80));
            lastError = `${res.status} ${code}`;
            otherAnswers[lastError] = (otherAnswers[lastError] ?? 0) + 1;
            if (res.status < 500 && res.status !== 409 && res.status !== 200) break; // not worth a retry
          } catch (err) {
            lastError = (err as Error).message;
            otherAnswers[lastError] = (otherAnswers[lastError] ?? 0) + 1;
          }
          await sleep(1000);
        }
        if (!done) failed.push({ externalId, error: lastError, tries: 4 });
        progress?.(created.length + failed.length);
      }
    }),
  );
  return { created, failed, seconds: (performance.now() - t0) / 1000, otherAnswers };
}

export interface ProbeResult {
  /** Latency of each request that answered 200 with the awaited status, ascending, ms. */
  ms: number[];
  ids: string[];
  /** Anything else, by status and code. */
  otherAnswers: Record<string, number>;
}

/** What a probe sends: a token payment (checkout) or a token subscription (a create). */
type ProbeKind = 'payment' | 'subscription';

const PROBES: Record<
  ProbeKind,
  { path: string; pauseMs: number; awaited: string; body: (externalId: string) => Record<string, unknown> }
> = {
  payment: {
    path: '/payments',
    pauseMs: CHECKOUT_PAUSE_MS,
    awaited: 'succeeded',
    body: (externalId) => ({
      amount: AMOUNT,
      currency: 'USD',
      externalId,
      customer: { email: 'checkout@example.com', name: 'Checkout Probe' },
      cardToken: 'tok_success',
    }),
  },
  subscription: {
    path: '/subscriptions',
    pauseMs: CREATE_PAUSE_MS,
    awaited: 'active',
    body: (externalId) => ({
      amount: AMOUNT,
      currency: 'USD',
      billingIntervalDays: EVERGREEN_DAYS,
      externalId,
      customer: { email: 'create@example.com', name: 'Create Probe' },
      cardToken: 'tok_success',
    }),
  },
};

/**
 * One request at a time, the kind's pause apart, until `stop()` says so: what a merchant's
 * checkout (or a new subscription's create) sees while the worker is idle or renewing. The
 * externalIds (`bchk-`, `bprobe-`) stay apart from the storm's (`bsub-`).
 */
export async function requestProbe(
  kind: ProbeKind,
  apiUrl: string,
  headers: Record<string, string>,
  tag: string,
  stop: () => boolean,
): Promise<ProbeResult> {
  const { path, pauseMs, awaited, body } = PROBES[kind];
  const probe: ProbeResult = { ms: [], ids: [], otherAnswers: {} };
  for (let i = 1; pauseMs > 0 && !stop(); i++) {
    const started = performance.now();
    try {
      const res = await postJson(
        `${apiUrl}${path}`,
        headers,
        body(`${kind === 'payment' ? 'bchk' : 'bprobe'}-${tag}-${i}`),
      );
      if (res.status === 200 && res.json?.status === awaited && typeof res.json.id === 'string') {
        probe.ms.push(performance.now() - started);
        probe.ids.push(res.json.id);
      } else {
        const answer = `${res.status} ${(res.json?.code as string | undefined) ?? String(res.json?.status)}`;
        probe.otherAnswers[answer] = (probe.otherAnswers[answer] ?? 0) + 1;
      }
    } catch (err) {
      const answer = (err as Error).message;
      probe.otherAnswers[answer] = (probe.otherAnswers[answer] ?? 0) + 1;
    }
    await sleep(pauseMs);
  }
  probe.ms.sort((a, b) => a - b);
  return probe;
}

export function probeSummary(probe: ProbeResult) {
  return {
    n: probe.ms.length,
    p50Ms: round(percentile(probe.ms, 50), 1),
    p90Ms: round(percentile(probe.ms, 90), 1),
    maxMs: round(percentile(probe.ms, 100), 1),
    otherAnswers: probe.otherAnswers,
  };
}
