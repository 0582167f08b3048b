import { ActivityFailure, ApplicationFailure } from '@temporalio/workflow';

/** The one vocabulary of provider failures (the activities' failure types, the outcomes). */
export {
  AMBIGUOUS_FAILURES,
  PROVIDER_FAILURE,
  PROVIDER_OUTCOME,
  RECONCILIATION_MISMATCH,
  UNAVAILABLE_AFTER_EARLIER_CALL,
  outcomeOfFailure,
} from '../src/rules/providerFailures';

/**
 * The type of an activity's failure (PROVIDER_FAILURE: `unavailable`, `timeout`, ...). A remote
 * activity's failure arrives wrapped in an ActivityFailure; a local activity's may arrive as the
 * ApplicationFailure itself.
 */
export function failureType(err: unknown): string | undefined {
  const failure = err instanceof ActivityFailure ? err.cause : err;
  return failure instanceof ApplicationFailure ? (failure.type ?? undefined) : undefined;
}
