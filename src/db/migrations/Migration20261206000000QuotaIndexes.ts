import { Migration } from '@mikro-orm/migrations';

/**
 * Per-merchant quotas (issue 44 item 10, decision 0079): the counts taken under a quota's
 * advisory lock read only the records that hold a slot, never a merchant's whole history.
 */
export class Migration20261206000000QuotaIndexes extends Migration {
  override async up(): Promise<void> {
    this.addSql(
      `create index "payments_open_hosted_idx" on "payments" ("merchant_id", "environment") where status in ('created', 'requires_action') and card_token is null;`,
    );
    this.addSql(
      `create index "subscriptions_live_idx" on "subscriptions" ("merchant_id", "environment") where status <> 'cancelled';`,
    );
  }

  override async down(): Promise<void> {
    this.addSql(`drop index if exists "subscriptions_live_idx";`);
    this.addSql(`drop index if exists "payments_open_hosted_idx";`);
  }
}
