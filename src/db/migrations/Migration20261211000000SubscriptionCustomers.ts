import { Migration } from '@mikro-orm/migrations';

/**
 * A subscription created with `customerId` (PRODUCT.md "Customers and payment methods"; decision
 * 0087): the customer whose default each later charge uses, and the payment method its own card
 * (`card_token`) came from, if any.
 */
export class Migration20261211000000SubscriptionCustomers extends Migration {
  override async up(): Promise<void> {
    this.addSql(
      `alter table "subscriptions" add column "customer_id" varchar(40) null, add column "payment_method_id" varchar(40) null;`,
    );
    // A method a subscription's charge hard-declined is never charged again (decision 0087).
    this.addSql(`alter table "payment_methods" add column "hard_declined_at" timestamptz(3) null;`);
  }

  override async down(): Promise<void> {
    this.addSql(`alter table "payment_methods" drop column "hard_declined_at";`);
    this.addSql(`alter table "subscriptions" drop column "customer_id", drop column "payment_method_id";`);
  }
}
