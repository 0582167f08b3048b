/**
 * The type of the non-retryable ApplicationFailure an activity fails with on a bug (issue 44,
 * item 5; decision 0077): a programming error (TypeError, ReferenceError, RangeError,
 * SyntaxError) or a database error no retry fixes (SQLSTATE classes 22, 23, 42), set by the
 * worker's activity interceptors (src/temporal/activityErrors.ts). Recognised by this type, never
 * by a message: the workflow interceptor (workflows/interceptors.ts) parks the run on it, and it is
 * the run's `Stuck` mark meanwhile. No imports: the worker's side reads it too.
 */
export const ACTIVITY_BUG = 'activity_bug';
