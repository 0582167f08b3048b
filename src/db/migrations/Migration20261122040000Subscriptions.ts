import { Migration } from '@mikro-orm/migrations';

/** Subscriptions, their billing phases and one invoice per billing period. */
export class Migration20261122040000Subscriptions extends Migration {
  override async up(): Promise<void> {
    this.addSql(
      `create table "subscriptions" ("id" varchar(40) not null, "merchant_id" varchar(40) not null, "external_id" varchar(255) not null, "environment" text check ("environment" in ('test', 'live')) not null, "processor" varchar(32) not null, "amount_minor" bigint not null, "currency" varchar(3) not null, "billing_interval_days" int not null, "status" text check ("status" in ('created', 'pending', 'active', 'past_due', 'cancelled')) not null, "card_token" varchar(255) null, "redirect_url" text null, "setup_transaction_id" varchar(64) null, "customer" jsonb null, "description" text null, "metadata" jsonb null, "callback_url" text null, "return_url" text null, "retry_schedule_days" jsonb not null, "current_period_start" timestamptz(3) null, "current_period_end" timestamptz(3) null, "cancelled_at" timestamptz(3) null, "cancellation_reason" varchar(500) null, "created_at" timestamptz(3) not null, "updated_at" timestamptz(3) not null, constraint "subscriptions_pkey" primary key ("id"), constraint subscriptions_amount_positive_check check (amount_minor > 0), constraint subscriptions_interval_check check (billing_interval_days >= 1 and billing_interval_days <= 3650));`,
    );
    this.addSql(`create index "subscriptions_merchant_created_idx" on "subscriptions" ("merchant_id", "created_at");`);
    this.addSql(
      `alter table "subscriptions" add constraint "subscriptions_merchant_external_id_unique" unique ("merchant_id", "external_id");`,
    );
    this.addSql(
      `create table "subscription_phases" ("id" varchar(40) not null, "subscription_id" varchar(40) not null, "name" varchar(255) not null, "position" int not null, "iterations" int null, "amount_minor" bigint not null, "billing_interval_days" int not null, constraint "subscription_phases_pkey" primary key ("id"), constraint subscription_phases_amount_check check (amount_minor >= 0), constraint subscription_phases_iterations_check check (iterations is null or iterations > 0));`,
    );
    this.addSql(
      `alter table "subscription_phases" add constraint "subscription_phases_position_unique" unique ("subscription_id", "position");`,
    );
    this.addSql(
      `create table "invoices" ("id" varchar(40) not null, "merchant_id" varchar(40) not null, "subscription_id" varchar(40) not null, "period_index" int not null, "phase_id" varchar(40) not null, "amount_minor" bigint not null, "currency" varchar(3) not null, "period_start" timestamptz(3) not null, "period_end" timestamptz(3) not null, "status" text check ("status" in ('open', 'paid', 'void')) not null, "attempts" int not null default 0, "provider_transaction_id" varchar(64) null, "failure_code" varchar(64) null, "failure_message" text null, "next_attempt_at" timestamptz(3) null, "paid_at" timestamptz(3) null, "voided_at" timestamptz(3) null, "created_at" timestamptz(3) not null, "updated_at" timestamptz(3) not null, constraint "invoices_pkey" primary key ("id"), constraint invoices_amount_check check (amount_minor >= 0));`,
    );
    this.addSql(`create index "invoices_merchant_created_idx" on "invoices" ("merchant_id", "created_at");`);
    this.addSql(
      `create unique index "invoices_one_open_per_subscription" on "invoices" ("subscription_id") where status = 'open';`,
    );
    this.addSql(
      `alter table "invoices" add constraint "invoices_subscription_period_unique" unique ("subscription_id", "period_index");`,
    );
    this.addSql(
      `alter table "subscriptions" add constraint "subscriptions_merchant_id_foreign" foreign key ("merchant_id") references "merchants" ("id") on update cascade on delete cascade;`,
    );
    this.addSql(
      `alter table "subscription_phases" add constraint "subscription_phases_subscription_id_foreign" foreign key ("subscription_id") references "subscriptions" ("id") on update cascade on delete cascade;`,
    );
    this.addSql(
      `alter table "invoices" add constraint "invoices_merchant_id_foreign" foreign key ("merchant_id") references "merchants" ("id") on update cascade on delete cascade;`,
    );
    this.addSql(
      `alter table "invoices" add constraint "invoices_subscription_id_foreign" foreign key ("subscription_id") references "subscriptions" ("id") on update cascade on delete cascade;`,
    );
    this.addSql(
      `alter table "invoices" add constraint "invoices_phase_id_foreign" foreign key ("phase_id") references "subscription_phases" ("id") on update cascade on delete cascade;`,
    );
  }

  override async down(): Promise<void> {
    this.addSql(`drop table if exists "invoices" cascade;`);
    this.addSql(`drop table if exists "subscription_phases" cascade;`);
    this.addSql(`drop table if exists "subscriptions" cascade;`);
  }
}
