import { ApplicationFailure } from '@temporalio/activity';
import type { Logger } from '../src/logger';
import { ProviderError, ProviderMismatchError } from '../src/providers/errors';
import { workerMetrics } from '../src/metrics/worker';
import {
  PROVIDER_ERROR_CODE,
  PROVIDER_FAILURE,
  RECONCILIATION_MISMATCH,
  UNAVAILABLE_AFTER_EARLIER_CALL,
} from '../src/rules/providerFailures';

/** The failure type of a provider record that does not match ours (see mismatchFailure). */
export { RECONCILIATION_MISMATCH };

/**
 * Provider errors as typed activity failures; the workflows' retry policies and branches read
 * the type (`unavailable`, `timeout`, `invalid_response`).
 *
 * An attempt: only `unavailable` (nothing was done) is worth a quick retry; an ambiguous
 * outcome must be reconciled, not retried blindly.
 */
export function attemptFailure(err: unknown): unknown {
  if (!(err instanceof ProviderError)) {
    // An `unavailable` after an earlier call that may have been performed (src: providerCalls.ts).
    if (err instanceof ApplicationFailure && err.type === UNAVAILABLE_AFTER_EARLIER_CALL)
      workerMetrics.ambiguous(err.type);
    return err;
  }
  if (err.ambiguous) workerMetrics.ambiguous(err.kind);
  return err.kind === PROVIDER_FAILURE.unavailable
    ? ApplicationFailure.retryable(err.message, PROVIDER_FAILURE.unavailable)
    : ApplicationFailure.nonRetryable(err.message, err.kind);
}

/**
 * A provider's refusal of a first call, which proves nothing was done: its own (`rejected`, with
 * its code), or of our credentials (`misconfigured`: answered like a provider that is not
 * configured, `provider_not_configured`, and logged for the operator, who alone can fix it).
 * Null for any other error.
 */
export function refusal(err: unknown, logger: Logger, context: Record<string, unknown>): ProviderError | null {
  if (!(err instanceof ProviderError)) return null;
  if (err.kind === PROVIDER_FAILURE.rejected) return err;
  if (err.kind !== PROVIDER_FAILURE.misconfigured) return null;
  logger.error({ ...context, reason: err.message }, 'the provider refused our credentials: check its configuration');
  return new ProviderError(
    PROVIDER_FAILURE.rejected,
    'The payment provider refused the platform credentials configured for this merchant; nothing was charged.',
    PROVIDER_ERROR_CODE.notConfigured,
  );
}

/** A refusal (see refusal) as the `rejected` answer an activity returns: its code, else `provider_rejected`. */
export function rejectionOf(refused: ProviderError): { kind: 'rejected'; code: string; message: string } {
  return { kind: 'rejected', code: refused.code ?? PROVIDER_ERROR_CODE.rejected, message: refused.message };
}

/** A question to the provider ("what became of it?"): every kind of trouble is retried. */
export function reconcileFailure(err: unknown): unknown {
  if (!(err instanceof ProviderError)) return err;
  workerMetrics.reconcileRetry(err.kind);
  return ApplicationFailure.retryable(err.message, err.kind);
}

/**
 * A conflict: the provider holds another request under our idempotency key (or reference) and
 * refused ours. It may have acted on that one, so this is no refusal: a money-moving attempt
 * treats it as a record that is not ours (mismatchFailure), to be reconciled by its key and
 * shown to an operator, never as proof that nothing moved. Null for any other error.
 */
export function providerConflict(err: unknown, recordId: string): ProviderMismatchError | null {
  if (!(err instanceof ProviderError) || !err.conflict) return null;
  return new ProviderMismatchError(recordId, [`provider conflict: ${err.code ?? 'unknown'}`]);
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
