import { Migration } from '@mikro-orm/migrations';

/**
 * A customer's subscriptions still charging (decisions 0087 and 0088): the 409 that keeps the
 * customer's last card, and the signal a new card sends to the subscriptions waiting for one,
 * read them under a request; without an index each read scans every subscription.
 */
export class Migration20261214000000SubscriptionCustomerIndex extends Migration {
  override async up(): Promise<void> {
    this.addSql(
      `create index "subscriptions_customer_live_idx" on "subscriptions" ("customer_id") where customer_id is not null and status <> 'cancelled';`,
    );
  }

  override async down(): Promise<void> {
    this.addSql(`drop index if exists "subscriptions_customer_live_idx";`);
  }
}
