import type { EntityManager } from '@mikro-orm/postgresql';
import { AppError } from '../errors';
import type { RecordScope } from './scope';

/**
 * Per-merchant quotas on long-lived work (issue 44 item 10, decision 0079). Each is a number of
 * records a merchant may hold at once; `0` disables it. Over one: 429 `quota_exceeded` with
 * `details: { quota, limit, current }`. A repeat of a request that already created its record
 * (same externalId) answers that record, never 429.
 */
export interface QuotaSettings {
  /** Hosted payments waiting on the customer (`created` / `requires_action`, no card token), per merchant and environment. */
  openHostedPayments: number;
  /** Non-terminal subscriptions of the test environment, per merchant. */
  liveTestSubscriptions: number;
  /** Refunds one payment may have, whatever their status. */
  refundsPerPayment: number;
}

export const DEFAULT_QUOTAS: QuotaSettings = {
  openHostedPayments: 1000,
  liveTestSubscriptions: 500,
  refundsPerPayment: 100,
};

export type QuotaName = 'open_hosted_payments' | 'live_test_subscriptions' | 'refunds_per_payment';

/** The quotas in force: the defaults, overridden by what the settings name. */
export function quotasOf(settings: Partial<QuotaSettings> | undefined): QuotaSettings {
  return { ...DEFAULT_QUOTAS, ...settings };
}

export function quotaExceeded(quota: QuotaName, limit: number, current: number): AppError {
  return new AppError(
    'quota_exceeded',
    `Quota ${quota} reached: at most ${limit} at once. Let one finish (or be cancelled) first.`,
    { quota, limit, current },
  );
}

/**
 * Takes the transaction-scoped advisory lock of one quota of one merchant and environment, so
 * concurrent creates (in any API process) count and insert one after another and never pass the
 * limit together. Held until the transaction ends.
 */
export async function lockQuota(tx: EntityManager, quota: QuotaName, scope: RecordScope): Promise<void> {
  await tx.execute(`select pg_advisory_xact_lock(hashtext(?))`, [
    `quota:${quota}:${scope.merchantId}:${scope.environment}`,
  ]);
}
