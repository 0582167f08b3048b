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
