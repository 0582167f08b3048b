/**
 * The one vocabulary of provider failures, from the adapter to the client. Each name is defined
 * here once; src/providers/errors.ts, activities/providerFailures.ts, the workflows and the API
 * (src/app/workflowTrouble.ts, src/app/providerRejection.ts) use these constants.
 *
 * The string values are recorded in Temporal workflow histories (activity failure types, the
 * workflows' answers): they never change (test/integration/replay.test.ts replays old ones).
 *
 * Pure constants and types: workflows import this file (src/rules/).
 */

/**
 * How a provider call can go wrong, by what it means for money: `ProviderError.kind`, and the
 * ApplicationFailure `type` of the activity that failed so.
 */
export const PROVIDER_FAILURE = {
  /** The provider did nothing (refused connection, 503). Safe to retry or give up. */
  unavailable: 'unavailable',
  /** The provider may have acted. Never guess: ask it. */
  timeout: 'timeout',
  /** The provider may have acted. Never guess: ask it. */
  invalidResponse: 'invalid_response',
  /** The provider refused the request (bad token, bad amount); retrying will not help. */
  rejected: 'rejected',
  /**
   * The provider refused our credentials (bad or revoked secret key): nothing was done, and only
   * an operator can fix it (`provider_not_configured`).
   */
  misconfigured: 'misconfigured',
} as const;

export type ProviderFailureKind = (typeof PROVIDER_FAILURE)[keyof typeof PROVIDER_FAILURE];

/** The kinds after which the provider may have performed the operation (never retried blindly). */
export const AMBIGUOUS_FAILURES: readonly ProviderFailureKind[] = [
  PROVIDER_FAILURE.timeout,
  PROVIDER_FAILURE.invalidResponse,
];

export function isAmbiguousFailure(kind: ProviderFailureKind): boolean {
  return AMBIGUOUS_FAILURES.includes(kind);
}

/**
 * The activity failure type of a provider record that does not match ours: never settled from,
 * an operator must look (activities/providerFailures.ts, mismatchFailure).
 */
export const RECONCILIATION_MISMATCH = 'reconciliation_mismatch';

/**
 * The activity failure type of an attempt answered `unavailable` although an earlier call under
 * the same idempotency key was sent and never answered (a worker killed mid-call): that earlier
 * call may have been performed, so the outcome is ambiguous, like a timeout, and the workflow asks
 * the provider. Every workflow branch treats a type other than `unavailable` so.
 */
export const UNAVAILABLE_AFTER_EARLIER_CALL = 'unavailable_after_earlier_call';

/**
 * The activity failure type when the processor that served a record has no provider in this
 * process (its configuration was removed, or a secret cannot be read): retried until an operator
 * restores it; the value is the API code a client would see for it.
 */
export const PROVIDER_NOT_CONFIGURED = 'provider_not_configured';

/**
 * The activity failure type of a provider call refused before it was sent, over its merchant's
 * limits in this worker process (decision 0085): retryable, with the failure's `nextRetryDelay`
 * saying when to come back. Nothing was sent (a mark this attempt set is taken back), yet it is not
 * `unavailable`: an attempt whose tries all end so goes on as one without an answer (the workflow
 * asks by its key, finds nothing when nothing was ever sent, and tries again), never fails its record.
 */
export const PROVIDER_CALLS_LIMITED = 'provider_calls_limited';

/** Every ApplicationFailure `type` a provider activity fails with. */
export type ProviderFailureType =
  | ProviderFailureKind
  | typeof RECONCILIATION_MISMATCH
  | typeof UNAVAILABLE_AFTER_EARLIER_CALL
  | typeof PROVIDER_NOT_CONFIGURED
  | typeof PROVIDER_CALLS_LIMITED;

/**
 * How a first provider call ended without an outcome, in a workflow's answer to the API (the
 * `kind` of a payment's SubmitOutcome, a refund's RefundOutcome, a subscription's first outcome).
 */
export const PROVIDER_OUTCOME = {
  /** Nothing was done. */
  unavailable: 'provider_unavailable',
  /** No answer in time: the outcome will follow. */
  timeout: 'provider_timeout',
  /** An invalid answer: the outcome will follow. */
  invalid: 'provider_invalid',
} as const;

export type ProviderOutcomeKind = (typeof PROVIDER_OUTCOME)[keyof typeof PROVIDER_OUTCOME];

/**
 * The outcome of a first call that failed with `type` (undefined: not an ApplicationFailure,
 * e.g. the activity timed out): `unavailable` did nothing; `invalid_response` is invalid; any
 * other (a timeout, an unavailable after an earlier call, an activity timeout) did not answer.
 */
export function outcomeOfFailure(type: string | undefined): ProviderOutcomeKind {
  if (type === PROVIDER_FAILURE.unavailable) return PROVIDER_OUTCOME.unavailable;
  return type === PROVIDER_FAILURE.invalidResponse ? PROVIDER_OUTCOME.invalid : PROVIDER_OUTCOME.timeout;
}

/** The API error codes of provider failures (src/errors.ts gives each its status and description). */
export const PROVIDER_ERROR_CODE = {
  unavailable: 'provider_unavailable',
  invalidResponse: 'provider_invalid_response',
  rejected: 'provider_rejected',
  notConfigured: 'provider_not_configured',
  invalidCardToken: 'invalid_card_token',
} as const;

export type ProviderErrorCode = (typeof PROVIDER_ERROR_CODE)[keyof typeof PROVIDER_ERROR_CODE];

/** The API error code of each failure kind. */
export const FAILURE_ERROR_CODE = {
  unavailable: PROVIDER_ERROR_CODE.unavailable,
  timeout: PROVIDER_ERROR_CODE.unavailable,
  invalid_response: PROVIDER_ERROR_CODE.invalidResponse,
  rejected: PROVIDER_ERROR_CODE.rejected,
  misconfigured: PROVIDER_ERROR_CODE.notConfigured,
} as const satisfies Record<ProviderFailureKind, ProviderErrorCode>;

/**
 * The API error code of each outcome: a timeout is answered as `provider_unavailable` (with the
 * record, whose outcome will follow), an invalid answer as `provider_invalid_response`.
 */
export const OUTCOME_ERROR_CODE = {
  provider_unavailable: PROVIDER_ERROR_CODE.unavailable,
  provider_timeout: PROVIDER_ERROR_CODE.unavailable,
  provider_invalid: PROVIDER_ERROR_CODE.invalidResponse,
} as const satisfies Record<ProviderOutcomeKind, ProviderErrorCode>;

/**
 * The API error code of a refusal before anything was done, by the refusal's own code (the
 * provider's, e.g. `invalid_card_token`, or ours, `provider_not_configured` for refused
 * credentials): the card token and the configuration are named; any other is `provider_rejected`.
 */
export function rejectionErrorCode(code: string | null): ProviderErrorCode {
  if (code === PROVIDER_ERROR_CODE.invalidCardToken) return PROVIDER_ERROR_CODE.invalidCardToken;
  if (code === PROVIDER_ERROR_CODE.notConfigured) return PROVIDER_ERROR_CODE.notConfigured;
  return PROVIDER_ERROR_CODE.rejected;
}
