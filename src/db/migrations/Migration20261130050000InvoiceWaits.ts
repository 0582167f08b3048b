import { Migration } from '@mikro-orm/migrations';

/**
 * Invoices whose attempt the processor has not decided (PRODUCT.md, "Processor lifecycle";
 * decision 0060): `requires_action` (the customer authenticates at `hosted_url`) and
 * `processing` (decided later).
 */
export class Migration20261130050000InvoiceWaits extends Migration {
  override async up(): Promise<void> {
    this.addSql(`alter table "invoices" drop constraint if exists "invoices_status_check";`);
    this.addSql(
      `alter table "invoices" add constraint "invoices_status_check" check ("status" in ('open', 'requires_action', 'processing', 'paid', 'void'));`,
    );
  }

  override async down(): Promise<void> {
    this.addSql(`alter table "invoices" drop constraint if exists "invoices_status_check";`);
    this.addSql(
      `alter table "invoices" add constraint "invoices_status_check" check ("status" in ('open', 'paid', 'void'));`,
    );
  }
}
