import { Migration } from '@mikro-orm/migrations';

/**
 * A customer created on a test clock (PRODUCT.md "Test clocks": `POST /customers` with
 * `testClock`; decision 0090) shows the clock's time as its `createdAt`; `created_at` stays the
 * real creation time, which orders lists.
 */
export class Migration20261211500000CustomerClockTime extends Migration {
  override async up(): Promise<void> {
    this.addSql(`alter table "customers" add column "clock_created_at" timestamptz(3) null;`);
  }

  override async down(): Promise<void> {
    this.addSql(`alter table "customers" drop column "clock_created_at";`);
  }
}
