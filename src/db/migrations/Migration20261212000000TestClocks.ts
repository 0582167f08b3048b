import { Migration } from '@mikro-orm/migrations';

/**
 * Test clocks (issue 45 item 2, decision 0090): the clock, per merchant and environment (test
 * only), and on a subscription the clock it lives on and the clock's time at its create (the
 * real `created_at` keeps ordering lists and sweeps).
 */
export class Migration20261212000000TestClocks extends Migration {
  override async up(): Promise<void> {
    this.addSql(
      `create table "test_clocks" ("id" varchar(40) not null, "merchant_id" varchar(40) not null, "environment" text check ("environment" in ('test', 'live')) not null, "name" varchar(255) null, "frozen_time" timestamptz(3) not null, "status" text check ("status" in ('ready', 'advancing')) not null, "advance_to" timestamptz(3) null, "created_at" timestamptz(3) not null, "updated_at" timestamptz(3) not null, constraint "test_clocks_pkey" primary key ("id"));`,
    );
    this.addSql(
      `create index "test_clocks_merchant_env_created_idx" on "test_clocks" ("merchant_id", "environment", "created_at", "id");`,
    );
    this.addSql(
      `alter table "test_clocks" add constraint "test_clocks_merchant_id_foreign" foreign key ("merchant_id") references "merchants" ("id") on update cascade on delete cascade;`,
    );
    this.addSql(
      `alter table "subscriptions" add column "test_clock_id" varchar(40) null, add column "clock_created_at" timestamptz(3) null;`,
    );
    this.addSql(
      `alter table "subscriptions" add constraint "subscriptions_test_clock_id_foreign" foreign key ("test_clock_id") references "test_clocks" ("id") on update cascade on delete set null;`,
    );
    this.addSql(
      `create index "subscriptions_test_clock_live_idx" on "subscriptions" ("test_clock_id", "created_at", "id") where test_clock_id is not null and status <> 'cancelled';`,
    );
  }

  override async down(): Promise<void> {
    this.addSql(`drop index if exists "subscriptions_test_clock_live_idx";`);
    this.addSql(`alter table "subscriptions" drop constraint if exists "subscriptions_test_clock_id_foreign";`);
    this.addSql(`alter table "subscriptions" drop column "test_clock_id", drop column "clock_created_at";`);
    this.addSql(`drop table if exists "test_clocks" cascade;`);
  }
}
