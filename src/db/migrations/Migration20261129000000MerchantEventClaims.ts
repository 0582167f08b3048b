import { Migration } from '@mikro-orm/migrations';

/**
 * A merchant event is claimed before it is POSTed, as an email is before it is sent: the outbox
 * relay's delivery and a late original one never POST the same event at the same moment.
 */
export class Migration20261129000000MerchantEventClaims extends Migration {
  override async up(): Promise<void> {
    this.addSql(`alter table "merchant_events" add column "claimed_until" timestamptz(3) null;`);
  }

  override async down(): Promise<void> {
    this.addSql(`alter table "merchant_events" drop column "claimed_until";`);
  }
}
