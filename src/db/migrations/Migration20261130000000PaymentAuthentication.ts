import { Migration } from '@mikro-orm/migrations';

/**
 * Payments the processor does not decide at once (PRODUCT.md, "Processor lifecycle"): statuses
 * `requires_action` (the customer authenticates at `action_url`, the API's `nextAction`) and
 * `processing` (decided later). The expiry index now also holds the payments awaiting an
 * authentication (voided at expiry, so stuck past it like a `created` one); a partial index on
 * `processing` rows by age feeds the payments_stuck_processing gauge (older than 7 days).
 */
export class Migration20261130000000PaymentAuthentication extends Migration {
  override async up(): Promise<void> {
    this.addSql(`alter table "payments" drop constraint if exists "payments_status_check";`);
    this.addSql(
      `alter table "payments" add constraint "payments_status_check" check ("status" in ('created', 'requires_action', 'processing', 'succeeded', 'failed', 'refunded', 'voided', 'partially_refunded'));`,
    );
    this.addSql(`alter table "payments" add column "action_url" text null;`);
    this.addSql(
      `create index "payments_awaiting_expiry_idx" on "payments" ("expires_at") where status in ('created', 'requires_action');`,
    );
    this.addSql(`drop index if exists "payments_created_expiry_idx";`);
    this.addSql(
      `create index "payments_processing_created_idx" on "payments" ("created_at") where status = 'processing';`,
    );
  }

  override async down(): Promise<void> {
    this.addSql(`drop index if exists "payments_processing_created_idx";`);
    this.addSql(`create index "payments_created_expiry_idx" on "payments" ("expires_at") where status = 'created';`);
    this.addSql(`drop index if exists "payments_awaiting_expiry_idx";`);
    this.addSql(`alter table "payments" drop column if exists "action_url";`);
    this.addSql(`alter table "payments" drop constraint if exists "payments_status_check";`);
    this.addSql(
      `alter table "payments" add constraint "payments_status_check" check ("status" in ('created', 'succeeded', 'failed', 'refunded', 'voided', 'partially_refunded'));`,
    );
  }
}
