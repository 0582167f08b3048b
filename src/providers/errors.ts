import { isAmbiguousFailure, type ProviderFailureKind } from '../rules/providerFailures';

/**
 * How a provider call can go wrong, by what it means for money: the kinds of
 * src/rules/providerFailures.ts (PROVIDER_FAILURE), the one vocabulary of provider failures.
 */
export type ProviderErrorKind = ProviderFailureKind;

export class ProviderError extends Error {
  constructor(
    readonly kind: ProviderErrorKind,
    message: string,
    /** The provider's own code for `rejected` (e.g. `invalid_card_token`). */
    readonly code: string | null = null,
    /**
     * `rejected` because the provider already holds another request under the same idempotency
     * key or reference: it may have acted on that one, so this is no proof that nothing moved.
     */
    readonly conflict = false,
  ) {
    super(message);
    this.name = 'ProviderError';
  }

  /** Whether the provider may have performed the operation. */
  get ambiguous(): boolean {
    return isAmbiguousFailure(this.kind);
  }
}

export class ProviderWebhookError extends Error {}

/**
 * The adapter cannot do this operation (e.g. disputes on a processor whose mapping is not
 * written yet). Nothing was sent; a workflow keeps its record where it is and asks again later.
 */
export class ProviderUnsupportedError extends Error {
  constructor(
    readonly processor: string,
    readonly operation: string,
  ) {
    super(`${processor} does not support ${operation} through this service`);
    this.name = 'ProviderUnsupportedError';
  }
}

/**
 * What the provider holds under our idempotency key (or our transaction) is not what we asked
 * for: another transaction, amount or currency. Never settled from: an operator must look.
 */
export class ProviderMismatchError extends Error {
  constructor(
    /** Our payment or refund id. */
    readonly recordId: string,
    /** Each difference, e.g. `amountMinor: ours 1000, provider's 500`. */
    readonly differences: string[],
  ) {
    super(`provider record for ${recordId} does not match ours (${differences.join('; ')})`);
    this.name = 'ProviderMismatchError';
  }
}

/** The differences between what we asked for and what the provider holds; empty when they match. */
export function differences<T extends object>(ours: Partial<T>, theirs: T): string[] {
  return (Object.keys(ours) as (keyof T)[])
    .filter((k) => ours[k] !== theirs[k])
    .map((k) => `${String(k)}: ours ${String(ours[k])}, provider's ${String(theirs[k])}`);
}
