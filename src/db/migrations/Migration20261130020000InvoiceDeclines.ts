import { Migration } from '@mikro-orm/migrations';

/**
 * An invoice says whether its last decline was hard (never retried with that card) or soft, and
 * where the customer authenticates its charge (`hosted_url`, filled by the 3-D Secure step).
 */
export class Migration20261130020000InvoiceDeclines extends Migration {
  override async up(): Promise<void> {
    this.addSql(
      `alter table "invoices" add column "decline_type" text check ("decline_type" in ('hard', 'soft')) null, add column "hosted_url" text null;`,
    );
  }

  override async down(): Promise<void> {
    this.addSql(`alter table "invoices" drop column "decline_type", drop column "hosted_url";`);
  }
}
