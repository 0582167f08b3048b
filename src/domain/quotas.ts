import type { EntityManager } from '@mikro-orm/postgresql';
import { AppError } from '../errors';
import type { RecordScope } from './scope';
import type { QuotaName } from '../rules/quotas';

const QUOTA_MESSAGES: Record<QuotaName, (limit: number) => string> = {
  open_hosted_payments: (limit) =>
    `At most ${limit} hosted payments may wait on their customers at once; one frees when it is paid, declined or expires.`,
  live_test_subscriptions: (limit) => `At most ${limit} test subscriptions may be live at once; cancel one first.`,
  refunds_per_payment: (limit) => `A payment may have at most ${limit} refunds.`,
};

/** Refused by a per-merchant quota (src/rules/quotas.ts, decision 0079): nothing was created. */
export function quotaExceeded(quota: QuotaName, limit: number, current: number): AppError {
  return new AppError('quota_exceeded', QUOTA_MESSAGES[quota](limit), { quota, limit, current });
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
