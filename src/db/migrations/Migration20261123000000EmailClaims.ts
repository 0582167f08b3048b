import { Migration } from '@mikro-orm/migrations';

/** An email is claimed before it is sent, so overlapping or retried sends never send it twice. */
export class Migration20261123000000EmailClaims extends Migration {
  override async up(): Promise<void> {
    this.addSql(`alter table "emails" add column "claimed_until" timestamptz(3) null;`);
  }

  override async down(): Promise<void> {
    this.addSql(`alter table "emails" drop column "claimed_until";`);
  }
}
