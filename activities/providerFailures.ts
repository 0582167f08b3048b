import { ApplicationFailure } from '@temporalio/activity';
import type { Logger } from '../src/logger';
import { ProviderError, type ProviderMismatchError } from '../src/providers/errors';

/** The failure type of a provider record that does not match ours (see mismatchFailure). */
export const RECONCILIATION_MISMATCH = 'reconciliation_mismatch';

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

/**
 * The provider's record does not match ours: never settled from, and made visible. An error
 * log line with both sides, and a typed failure that the Temporal UI shows on the pending
 * activity. Retryable while reconciling (an operator can fix the provider's side and the next
 * try settles); non-retryable from an attempt, so the workflow goes on to reconcile.
 */
export function mismatchFailure(
  err: ProviderMismatchError,
  logger: Logger,
  context: Record<string, unknown>,
  retryable: boolean,
): ApplicationFailure {
  logger.error({ ...context, recordId: err.recordId, differences: err.differences }, 'reconciliation mismatch');
  return ApplicationFailure.create({
    message: err.message,
    type: RECONCILIATION_MISMATCH,
    nonRetryable: !retryable,
    details: [{ recordId: err.recordId, differences: err.differences }],
  });
}
