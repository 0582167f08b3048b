import { Migration } from '@mikro-orm/migrations';

/**
 * Payments in flight by expiry: the `payments_stuck_created` gauge (src/metrics/backlog.ts) counts
 * the ones past it. Partial, so it holds only `created` rows (small; a row leaves it as it settles).
 */
export class Migration20261127120000PaymentExpiryIndex extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create index "payments_created_expiry_idx" on "payments" ("expires_at") where status = 'created';`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop index if exists "payments_created_expiry_idx";`);
  }
}
