/**
 * The one domain error type. Everything the client may see goes through it; any other
 * error is an internal fault, logged and answered as a bare 500 `internal_error`.
 */
export type ErrorDetails = Record<string, unknown>;

export class AppError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details: ErrorDetails = {},
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
    this.name = 'AppError';
  }
}

/** Every `code` the API can answer with, published in the docs and the OpenAPI document. */
export const ERROR_CODES = {
  validation_error: 'The request is invalid; `details.issues` names each problem.',
  invalid_json: 'The body is not valid JSON.',
  unsupported_media_type: 'A body was sent with a content type other than application/json.',
  payload_too_large: 'The body is over 1 MB.',
  unauthorized: 'Credentials are missing, malformed, unknown, wrong or revoked.',
  forbidden: 'The key does not have the merchant role.',
  merchant_inactive: 'The merchant is not active.',
  not_found: 'No such route, or no such record for this merchant.',
  method_not_allowed: 'The route exists but not with this method.',
  invalid_card_token: 'The provider does not know the card token; no payment was kept (the externalId stays free).',
  external_id_conflict: 'The externalId already names a record with another amount or currency.',
  provider_rejected: 'The provider refused the request for another reason than the token; nothing was kept.',
  provider_not_configured:
    "No active payment provider for the key's environment: live keys of a merchant without one (`providers:set`), or one that cannot be used.",
  provider_invalid_response:
    'The provider answered something invalid; the outcome is being asked for and will follow (`details.payment`).',
  provider_unavailable:
    'The provider is unreachable or did not answer in time (`details.payment` tells what is left: nothing captured, or an outcome that will follow).',
  payment_not_refundable: 'Only a succeeded or partially_refunded payment can be refunded.',
  refund_in_flight: 'A previous refund of the payment is still in flight (`details.refundId`).',
  amount_exceeds_refundable: 'The amount exceeds the remaining refundable balance (`details.amountRefundable`).',
  concurrent_request: 'A concurrent request with the same externalId is being processed; retry.',
  subscription_not_updatable:
    'Only an active or past_due subscription takes a new card (`details.status` is its status).',
  invalid_signature: 'A provider webhook whose signature does not verify.',
  rate_limited:
    "Too many requests: over the API key's rate limit, or too many failed authentications from this address. Retry after the `Retry-After` header (seconds); `RateLimit-Limit`, `RateLimit-Remaining` and `RateLimit-Reset` describe the limit.",
  not_ready: 'A dependency (PostgreSQL or Temporal) is unreachable.',
  service_unavailable:
    'A dependency (PostgreSQL or Temporal) is down or restarting; the message names which. Retry after the `Retry-After` header (seconds) with the same externalId: a repeat never charges twice.',
  internal_error: 'An unexpected fault; nothing about it is disclosed. Quote the request id.',
} as const;

export type ErrorCode = keyof typeof ERROR_CODES;

export const errors = {
  validation: (message: string, details: ErrorDetails = {}) => new AppError(400, 'validation_error', message, details),
  unauthorized: (message = 'Missing or invalid credentials.') =>
    new AppError(401, 'unauthorized', message, {}, { 'WWW-Authenticate': 'Basic realm="payments", charset="UTF-8"' }),
  forbidden: (message = 'Merchant access required.') => new AppError(403, 'forbidden', message),
  merchantInactive: () => new AppError(403, 'merchant_inactive', 'The merchant is not active.'),
  notFound: (what = 'Resource') => new AppError(404, 'not_found', `${what} not found.`),
  /** `headers`: Retry-After and the RateLimit-* headers (src/api/rateLimiter.ts). */
  rateLimited: (message: string, headers: Record<string, string>) =>
    new AppError(429, 'rate_limited', message, {}, headers),
};
