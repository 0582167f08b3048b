import { ApplicationFailure } from '@temporalio/activity';
import { ProviderError } from '../src/providers/errors';

/**
 * Provider errors as typed activity failures; the workflows' retry policies and branches read
 * the type (`unavailable`, `timeout`, `invalid_response`).
 *
 * An attempt: only `unavailable` (nothing was done) is worth a quick retry; an ambiguous
 * outcome must be reconciled, not retried blindly.
 */
export function attemptFailure(err: unknown): unknown {
  if (!(err instanceof ProviderError)) return err;
  return err.kind === 'unavailable'
    ? ApplicationFailure.retryable(err.message, 'unavailable')
    : ApplicationFailure.nonRetryable(err.message, err.kind);
}

/** A question to the provider ("what became of it?"): every kind of trouble is retried. */
export function reconcileFailure(err: unknown): unknown {
  return err instanceof ProviderError ? ApplicationFailure.retryable(err.message, err.kind) : err;
}
