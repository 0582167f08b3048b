/**
 * The one domain error type, AppError, and the one table of the codes it carries. Everything the
 * client may see goes through it; any other error is an internal fault, logged and answered as a
 * bare 500 `internal_error`. Code names a situation; only the table turns it into an HTTP status.
 */
export type ErrorDetails = Record<string, unknown>;

/**
 * Every `code` the API can answer with: its HTTP status (nothing else chooses one) and its
 * description, published in the docs and the OpenAPI document (src/api/openapi.ts). A code and
 * its status are a contract with clients: never change either (PRODUCT.md, "API conventions").
 */
export const ERROR_CODES = {
  validation_error: { status: 400, description: 'The request is invalid; `details.issues` names each problem.' },
  invalid_json: { status: 400, description: 'The body is not valid JSON.' },
  bad_request: {
    status: 400,
    description: 'The HTTP layer refused a malformed request before it reached a route.',
  },
  unsupported_media_type: {
    status: 415,
    description: 'A body was sent with a content type other than application/json.',
  },
  payload_too_large: { status: 413, description: 'The body is over 1 MB.' },
  unauthorized: { status: 401, description: 'Credentials are missing, malformed, unknown, wrong or revoked.' },
  forbidden: { status: 403, description: 'The key does not have the merchant role.' },
  merchant_inactive: { status: 403, description: 'The merchant is not active.' },
  not_found: { status: 404, description: 'No such route, or no such record for this merchant.' },
  method_not_allowed: { status: 405, description: 'The route exists but not with this method.' },
  invalid_card_token: {
    status: 400,
    description: 'The provider does not know the card token; no payment was kept (the externalId stays free).',
  },
  card_declined: {
    status: 402,
    description:
      'The processor declined to keep the card (its verification was declined); `details.declineCode` says why (e.g. `card_declined`, `lost_card`). Nothing was kept.',
  },
  external_id_conflict: {
    status: 400,
    description:
      'The externalId already names a record with another amount or currency (a customer: with other fields).',
  },
  provider_rejected: {
    status: 400,
    description: 'The provider refused the request for another reason than the token; nothing was kept.',
  },
  provider_not_configured: {
    status: 500,
    description:
      "No active payment provider for the key's environment: live keys of a merchant without one (`providers:set`), or one that cannot be used.",
  },
  provider_invalid_response: {
    status: 502,
    description:
      'The provider answered something invalid; the outcome is being asked for and will follow (`details.payment`).',
  },
  provider_unavailable: {
    status: 503,
    description:
      'The provider is unreachable or did not answer in time (`details.payment` tells what is left: nothing captured, or an outcome that will follow).',
  },
  payment_not_refundable: {
    status: 409,
    description: 'Only a succeeded or partially_refunded payment can be refunded.',
  },
  refund_in_flight: {
    status: 409,
    description: 'A previous refund of the payment is still in flight (`details.refundId`).',
  },
  charge_disputed: {
    status: 409,
    description: 'The payment has an open dispute; it cannot be refunded until the processor decides it.',
  },
  dispute_not_updatable: {
    status: 409,
    description: 'Evidence and acceptance are taken only while the dispute is `needs_response` (`details.status`).',
  },
  webhook_endpoint_limit: {
    status: 409,
    description:
      'The merchant already has 16 webhook endpoints in this environment (`details.limit`); delete one first.',
  },
  webhook_endpoint_disabled: {
    status: 409,
    description:
      'The webhook endpoint named is disabled (`details.endpointId`): nothing is sent to it; enable it first (PATCH `status: enabled`).',
  },
  amount_exceeds_refundable: {
    status: 422,
    description: 'The amount exceeds the remaining refundable balance (`details.amountRefundable`).',
  },
  concurrent_request: {
    status: 409,
    description: 'A concurrent request with the same externalId is being processed; retry.',
  },
  subscription_not_updatable: {
    status: 409,
    description: 'Only an active or past_due subscription takes a new card (`details.status` is its status).',
  },
  payment_method_in_use: {
    status: 409,
    description:
      "The payment method is the customer's last card and a subscription of the customer still charges (`details.subscriptionIds`); attach another card first, or cancel the subscription.",
  },
  test_clock_advancing: {
    status: 409,
    description:
      'The test clock is advancing (`details.testClockId`): an advance, a create on it and its DELETE wait until it is `ready`.',
  },
  test_clock_full: {
    status: 409,
    description:
      'The test clock already has 100 subscriptions not cancelled (`details.limit`); cancel one or use another clock.',
  },
  invalid_signature: { status: 400, description: 'A provider webhook whose signature does not verify.' },
  rate_limited: {
    status: 429,
    description:
      "Too many requests: over the API key's rate limit, or too many failed authentications from this address. Retry after the `Retry-After` header (seconds); `RateLimit-Limit`, `RateLimit-Remaining` and `RateLimit-Reset` describe the limit.",
  },
  quota_exceeded: {
    status: 429,
    description:
      'A per-merchant quota on long-lived work is reached (`details.quota`: `open_hosted_payments`, `live_test_subscriptions` or `refunds_per_payment`; `details.limit`, `details.current`). Nothing was created; a slot frees when one of those records finishes (a refund never frees one).',
  },
  not_ready: { status: 503, description: 'A dependency (PostgreSQL or Temporal) is unreachable.' },
  service_unavailable: {
    status: 503,
    description:
      'A dependency (PostgreSQL or Temporal) is down or restarting; the message names which. Retry after the `Retry-After` header (seconds) with the same externalId: a repeat never charges twice.',
  },
  internal_error: {
    status: 500,
    description: 'An unexpected fault; nothing about it is disclosed. Quote the request id.',
  },
} as const satisfies Record<string, { status: number; description: string }>;

export type ErrorCode = keyof typeof ERROR_CODES;

/** Every status the API answers an error with. */
export type ErrorStatus = (typeof ERROR_CODES)[ErrorCode]['status'];

export function statusOf(code: ErrorCode): ErrorStatus {
  return ERROR_CODES[code].status;
}

/** A code (its status comes from ERROR_CODES), a message for people, and details for programs. */
export class AppError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details: ErrorDetails = {},
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
    this.name = 'AppError';
  }

  get status(): ErrorStatus {
    return statusOf(this.code);
  }
}

export const errors = {
  validation: (message: string, details: ErrorDetails = {}) => new AppError('validation_error', message, details),
  unauthorized: (message = 'Missing or invalid credentials.') =>
    new AppError('unauthorized', message, {}, { 'WWW-Authenticate': 'Basic realm="payments", charset="UTF-8"' }),
  forbidden: (message = 'Merchant access required.') => new AppError('forbidden', message),
  merchantInactive: () => new AppError('merchant_inactive', 'The merchant is not active.'),
  notFound: (what = 'Resource') => new AppError('not_found', `${what} not found.`),
  /** `headers`: Retry-After and the RateLimit-* headers (src/api/rateLimiter.ts). */
  rateLimited: (message: string, headers: Record<string, string>) => new AppError('rate_limited', message, {}, headers),
};
