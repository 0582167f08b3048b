/**
 * Per-merchant quotas on long-lived work (issue 44 item 10, decision 0079). Each is a number of
 * records a merchant may hold at once; `0` disables it. Over one: `quota_exceeded` with
 * `details: { quota, limit, current }`. A repeat of a request that already created its record
 * (same externalId) answers that record, never a refusal.
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
