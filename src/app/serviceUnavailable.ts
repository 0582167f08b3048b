import { AppError, type ErrorDetails } from '../errors';

/**
 * A Temporal call ended without an outcome (unreachable, overloaded, cancelled) after the record
 * was committed: 503 `service_unavailable`, with the record as it stands in `details`, so the
 * merchant knows what is left (PRODUCT.md); a retry with the same externalId picks it up.
 */
export function workflowServiceUnavailable(message: string, details: ErrorDetails): AppError {
  return new AppError(503, 'service_unavailable', message, details, { 'Retry-After': '1' });
}
