import { Migration } from '@mikro-orm/migrations';

/** The outbox relay's candidates (the orphan sweeper): partial indexes, small as rows leave them once sent. */
export class Migration20261124000000OutboxRelay extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create index "emails_unsent_idx" on "emails" ("created_at", "id") where sent_at is null;`);
    this.addSql(
      `create index "merchant_events_undelivered_idx" on "merchant_events" ("created_at", "id") where delivered_at is null;`,
    );
  }

  override async down(): Promise<void> {
    this.addSql(`drop index if exists "merchant_events_undelivered_idx";`);
    this.addSql(`drop index if exists "emails_unsent_idx";`);
  }
}
