import { Migration } from '@mikro-orm/migrations';

/**
 * Invoices whose charge the processor decides later (`processing`), by when they became so: the
 * invoices_stuck_processing gauge counts those older than 7 days (src/metrics/backlog.ts) with a
 * partial index over the few rows in that state, as payments_stuck_processing does for payments.
 */
export class Migration20261201020000InvoiceProcessingIndex extends Migration {
  override async up(): Promise<void> {
    this.addSql(
      `create index "invoices_processing_updated_idx" on "invoices" ("updated_at") where status = 'processing';`,
    );
  }

  override async down(): Promise<void> {
    this.addSql(`drop index if exists "invoices_processing_updated_idx";`);
  }
}
