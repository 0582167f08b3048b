import { ActivityFailure, ApplicationFailure } from '@temporalio/workflow';

/**
 * The type of an activity's failure (`unavailable`, `timeout`, ...). A remote activity's
 * failure arrives wrapped in an ActivityFailure; a local activity's may arrive as the
 * ApplicationFailure itself.
 */
export function failureType(err: unknown): string | undefined {
  const failure = err instanceof ActivityFailure ? err.cause : err;
  return failure instanceof ApplicationFailure ? (failure.type ?? undefined) : undefined;
}
