import { Migration } from '@mikro-orm/migrations';

/** Payments, the merchant-event outbox, and each merchant's callback signing secret. */
export class Migration20261122010000Payments extends Migration {
  override async up(): Promise<void> {
    this.addSql(`alter table "merchants" add column "webhook_secret" varchar(80) null;`);
    this.addSql(
      `create table "payments" ("id" varchar(40) not null, "merchant_id" varchar(40) not null, "external_id" varchar(255) not null, "environment" text check ("environment" in ('test', 'live')) not null, "processor" varchar(32) not null, "amount_minor" bigint not null, "currency" varchar(3) not null, "status" text check ("status" in ('created', 'succeeded', 'failed', 'refunded', 'voided', 'partially_refunded')) not null, "amount_refunded_minor" bigint not null default 0, "amount_pending_refund_minor" bigint not null default 0, "provider_transaction_id" varchar(64) null, "redirect_url" text null, "card_token" varchar(255) null, "save_card_enabled" boolean not null default false, "saved_card_token" varchar(255) null, "customer" jsonb not null, "billing" jsonb null, "metadata" jsonb null, "description" text null, "callback_url" text null, "return_url" text null, "failure_code" varchar(64) null, "failure_message" text null, "expires_at" timestamptz(3) not null, "created_at" timestamptz(3) not null, "updated_at" timestamptz(3) not null, constraint "payments_pkey" primary key ("id"), constraint payments_amount_positive_check check (amount_minor > 0), constraint payments_refund_bound_check check (amount_refunded_minor >= 0 and amount_pending_refund_minor >= 0 and amount_refunded_minor + amount_pending_refund_minor <= amount_minor));`,
    );
    this.addSql(`create index "payments_merchant_created_idx" on "payments" ("merchant_id", "created_at");`);
    this.addSql(
      `alter table "payments" add constraint "payments_merchant_external_id_unique" unique ("merchant_id", "external_id");`,
    );
    this.addSql(
      `alter table "payments" add constraint "payments_merchant_id_foreign" foreign key ("merchant_id") references "merchants" ("id") on update cascade on delete cascade;`,
    );
    this.addSql(
      `create table "merchant_events" ("id" varchar(40) not null, "merchant_id" varchar(40) not null, "type" varchar(64) not null, "resource_id" varchar(40) not null, "dedupe_key" varchar(160) not null, "callback_url" text null, "payload" jsonb not null, "attempts" int not null default 0, "delivered_at" timestamptz(3) null, "last_error" text null, "created_at" timestamptz(3) not null, constraint "merchant_events_pkey" primary key ("id"));`,
    );
    this.addSql(
      `alter table "merchant_events" add constraint "merchant_events_dedupe_key_unique" unique ("dedupe_key");`,
    );
    this.addSql(
      `create index "merchant_events_merchant_created_idx" on "merchant_events" ("merchant_id", "created_at");`,
    );
    this.addSql(
      `alter table "merchant_events" add constraint "merchant_events_merchant_id_foreign" foreign key ("merchant_id") references "merchants" ("id") on update cascade on delete cascade;`,
    );
  }

  override async down(): Promise<void> {
    this.addSql(`drop table if exists "merchant_events" cascade;`);
    this.addSql(`drop table if exists "payments" cascade;`);
    this.addSql(`alter table "merchants" drop column "webhook_secret";`);
  }
}
