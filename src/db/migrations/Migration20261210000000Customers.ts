import { Migration } from '@mikro-orm/migrations';

/**
 * Customers and their saved payment methods (issue 45 item 1, decision 0087), and the customer and
 * payment method a payment was made with. `test_clock_id` is for the test clocks (issue 45 item 2).
 */
export class Migration20261210000000Customers extends Migration {
  override async up(): Promise<void> {
    this.addSql(
      `create table "customers" ("id" varchar(40) not null, "merchant_id" varchar(40) not null, "environment" text check ("environment" in ('test', 'live')) not null, "external_id" varchar(255) not null, "email" varchar(320) null, "name" varchar(255) null, "metadata" jsonb null, "default_payment_method_id" varchar(40) null, "provider_customers" jsonb not null default '{}', "test_clock_id" varchar(40) null, "created_at" timestamptz(3) not null, "updated_at" timestamptz(3) not null, constraint "customers_pkey" primary key ("id"));`,
    );
    this.addSql(
      `create index "customers_merchant_env_created_idx" on "customers" ("merchant_id", "environment", "created_at", "id");`,
    );
    this.addSql(
      `create index "customers_merchant_env_email_idx" on "customers" ("merchant_id", "environment", "email");`,
    );
    this.addSql(
      `alter table "customers" add constraint "customers_merchant_env_external_id_unique" unique ("merchant_id", "environment", "external_id");`,
    );
    this.addSql(
      `alter table "customers" add constraint "customers_merchant_id_foreign" foreign key ("merchant_id") references "merchants" ("id") on update cascade on delete cascade;`,
    );

    this.addSql(
      `create table "payment_methods" ("id" varchar(40) not null, "merchant_id" varchar(40) not null, "environment" text check ("environment" in ('test', 'live')) not null, "customer_id" varchar(40) not null, "processor" varchar(32) not null, "provider_reference" varchar(255) not null, "card_brand" varchar(32) null, "card_last4" varchar(4) null, "card_exp_month" int null, "card_exp_year" int null, "source_payment_id" varchar(40) null, "deleted_at" timestamptz(3) null, "created_at" timestamptz(3) not null, "updated_at" timestamptz(3) not null, constraint "payment_methods_pkey" primary key ("id"));`,
    );
    this.addSql(
      `create index "payment_methods_customer_created_idx" on "payment_methods" ("customer_id", "created_at", "id");`,
    );
    this.addSql(
      `alter table "payment_methods" add constraint "payment_methods_source_payment_unique" unique ("source_payment_id");`,
    );
    this.addSql(
      `alter table "payment_methods" add constraint "payment_methods_merchant_id_foreign" foreign key ("merchant_id") references "merchants" ("id") on update cascade on delete cascade;`,
    );
    this.addSql(
      `alter table "payment_methods" add constraint "payment_methods_customer_id_foreign" foreign key ("customer_id") references "customers" ("id") on update cascade on delete cascade;`,
    );

    this.addSql(
      `alter table "payments" add column "customer_id" varchar(40) null, add column "payment_method_id" varchar(40) null;`,
    );
  }

  override async down(): Promise<void> {
    this.addSql(`alter table "payments" drop column "customer_id", drop column "payment_method_id";`);
    this.addSql(`drop table if exists "payment_methods" cascade;`);
    this.addSql(`drop table if exists "customers" cascade;`);
  }
}
