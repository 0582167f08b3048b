import type { OutcomeWait } from '../db/outcomeHints';
import { AppError, type ErrorDetails } from '../errors';
import { OUTCOME_ERROR_CODE, type ProviderOutcomeKind } from '../rules/providerFailures';

/**
 * A Temporal call ended without an outcome (unreachable, overloaded, cancelled) after the record
 * was committed: 503 `service_unavailable`, with the record as it stands in `details`, so the
 * merchant knows what is left (PRODUCT.md); a retry with the same externalId picks it up.
 */
export function workflowServiceUnavailable(message: string, details: ErrorDetails): AppError {
  return new AppError('service_unavailable', message, details, { 'Retry-After': '1' });
}

/**
 * A first provider call that ended without an outcome, as the workflow answered it
 * (src/rules/providerFailures.ts): `provider_unavailable` for nothing done or no answer in time,
 * `provider_invalid_response` for an invalid answer, with the record as it stands in `details`.
 */
export function providerTrouble(
  kind: ProviderOutcomeKind,
  message: string,
  details: ErrorDetails,
  headers: Record<string, string> = {},
): AppError {
  return new AppError(OUTCOME_ERROR_CODE[kind], message, details, headers);
}

/**
 * An Update's answer, or the worker's hint that its outcome is committed if that comes first
 * (src/db/outcomeHints.ts: the hint saves the workflow task that completes the Update). The
 * Update is sent either way; only the wait for its answer stops. The waiter is registered by the
 * caller before the Update is sent, so a hint cannot pass unseen.
 *
 * When the hint wins, the Update's call is left to finish on its own (its answer follows within
 * a workflow task, and the caller's deadline still bounds it) rather than cancelled: a cancelled
 * gRPC call builds an abort reason and two errors with their stacks, about a tenth of the API's
 * CPU per payment (bench/RESULTS.md), where the answer's decoding costs less.
 */
export async function firstOfAnswerAndHint<A, H>(ask: () => Promise<A>, hint: OutcomeWait<H>): Promise<A | H> {
  const answer = ask();
  // Not awaited once the hint wins; its end, whatever it is, must not surface as unhandled.
  answer.catch(() => undefined);
  try {
    return await Promise.race([answer, hint.outcome]);
  } finally {
    hint.cancel();
  }
}
