import { Migration } from '@mikro-orm/migrations';

/**
 * A provider call is recorded as sent before it is made (payments, invoices, refunds), so a
 * later `unavailable` answer is not taken as proof that nothing was done when an earlier call
 * under the same idempotency key may have been performed (a worker killed mid-call).
 */
export class Migration20261125000000ProviderCallSent extends Migration {
  override async up(): Promise<void> {
    this.addSql(`alter table "payments" add column "provider_call_sent_at" timestamptz(3) null;`);
    this.addSql(`alter table "invoices" add column "provider_call_sent_at" timestamptz(3) null;`);
    this.addSql(`alter table "refunds" add column "provider_call_sent_at" timestamptz(3) null;`);
  }

  override async down(): Promise<void> {
    this.addSql(`alter table "refunds" drop column "provider_call_sent_at";`);
    this.addSql(`alter table "invoices" drop column "provider_call_sent_at";`);
    this.addSql(`alter table "payments" drop column "provider_call_sent_at";`);
  }
}
