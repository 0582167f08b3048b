import type { Client } from '@temporalio/client';
import type { OutcomeWait } from '../db/outcomeHints';
import { AppError, type ErrorDetails } from '../errors';

/**
 * A Temporal call ended without an outcome (unreachable, overloaded, cancelled) after the record
 * was committed: 503 `service_unavailable`, with the record as it stands in `details`, so the
 * merchant knows what is left (PRODUCT.md); a retry with the same externalId picks it up.
 */
export function workflowServiceUnavailable(message: string, details: ErrorDetails): AppError {
  return new AppError(503, 'service_unavailable', message, details, { 'Retry-After': '1' });
}

/**
 * An Update's answer, or the worker's hint that its outcome is committed if that comes first
 * (src/db/outcomeHints.ts: the hint saves the workflow task that completes the Update). The
 * Update is sent either way; only the wait for its answer stops. The waiter is registered by the
 * caller before the Update is sent, so a hint cannot pass unseen.
 */
export async function firstOfAnswerAndHint<A, H>(
  client: Client,
  ask: () => Promise<A>,
  hint: OutcomeWait<H>,
): Promise<A | H> {
  const stopWaiting = new AbortController();
  try {
    const answer = client.withAbortSignal(stopWaiting.signal, ask);
    // Not awaited once the hint wins; its abort must not surface as unhandled.
    answer.catch(() => undefined);
    return await Promise.race([answer, hint.outcome]);
  } finally {
    hint.cancel();
    stopWaiting.abort();
  }
}
