import { Migration } from '@mikro-orm/migrations';

/** Refunds; the partial unique index keeps at most one pending refund per payment. */
export class Migration20261122020000Refunds extends Migration {
  override async up(): Promise<void> {
    this.addSql(
      `create table "refunds" ("id" varchar(40) not null, "merchant_id" varchar(40) not null, "payment_id" varchar(40) not null, "external_id" varchar(255) not null, "amount_minor" bigint not null, "currency" varchar(3) not null, "reason" varchar(500) null, "status" text check ("status" in ('pending', 'succeeded', 'failed')) not null, "failure_code" varchar(64) null, "failure_message" text null, "provider_refund_id" varchar(64) null, "created_at" timestamptz(3) not null, "updated_at" timestamptz(3) not null, constraint "refunds_pkey" primary key ("id"), constraint refunds_amount_positive_check check (amount_minor > 0));`,
    );
    this.addSql(`create index "refunds_payment_created_idx" on "refunds" ("payment_id", "created_at");`);
    this.addSql(
      `create unique index "refunds_one_pending_per_payment" on "refunds" ("payment_id") where status = 'pending';`,
    );
    this.addSql(
      `alter table "refunds" add constraint "refunds_merchant_external_id_unique" unique ("merchant_id", "external_id");`,
    );
    this.addSql(
      `alter table "refunds" add constraint "refunds_merchant_id_foreign" foreign key ("merchant_id") references "merchants" ("id") on update cascade on delete cascade;`,
    );
    this.addSql(
      `alter table "refunds" add constraint "refunds_payment_id_foreign" foreign key ("payment_id") references "payments" ("id") on update cascade on delete cascade;`,
    );
  }

  override async down(): Promise<void> {
    this.addSql(`drop table if exists "refunds" cascade;`);
  }
}
