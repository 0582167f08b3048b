import { Migration } from '@mikro-orm/migrations';

/**
 * Test clocks (issue 45 item 2, decision 0090): an email of a subscription on a test clock is
 * dated in clock time (its Date header); null: the send's time, as before.
 */
export class Migration20261213000000EmailDates extends Migration {
  override async up(): Promise<void> {
    this.addSql(`alter table "emails" add column "dated_at" timestamptz(3) null;`);
  }

  override async down(): Promise<void> {
    this.addSql(`alter table "emails" drop column "dated_at";`);
  }
}
