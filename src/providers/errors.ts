/**
 * How a provider call can go wrong, by what it means for money:
 * - `unavailable`: the provider did nothing (refused connection, 503). Safe to retry or give up.
 * - `timeout` / `invalid_response`: the provider may have acted. Never guess: ask it.
 * - `rejected`: the provider refused the request (bad token, bad amount); retrying will not help.
 */
export type ProviderErrorKind = 'unavailable' | 'timeout' | 'invalid_response' | 'rejected';

export class ProviderError extends Error {
  constructor(
    readonly kind: ProviderErrorKind,
    message: string,
    /** The provider's own code for `rejected` (e.g. `invalid_card_token`). */
    readonly code: string | null = null,
  ) {
    super(message);
    this.name = 'ProviderError';
  }

  /** Whether the provider may have performed the operation. */
  get ambiguous(): boolean {
    return this.kind === 'timeout' || this.kind === 'invalid_response';
  }
}

export class ProviderWebhookError extends Error {}
