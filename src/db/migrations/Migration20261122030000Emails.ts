import { Migration } from '@mikro-orm/migrations';

/** The email outbox (subscription emails: activation, receipts, failed payments, cancellation). */
export class Migration20261122030000Emails extends Migration {
  override async up(): Promise<void> {
    this.addSql(
      `create table "emails" ("id" varchar(40) not null, "merchant_id" varchar(40) not null, "dedupe_key" varchar(160) not null, "to" varchar(320) not null, "subject" varchar(255) not null, "text" text not null, "attempts" int not null default 0, "sent_at" timestamptz(3) null, "last_error" text null, "created_at" timestamptz(3) not null, constraint "emails_pkey" primary key ("id"));`,
    );
    this.addSql(`alter table "emails" add constraint "emails_dedupe_key_unique" unique ("dedupe_key");`);
    this.addSql(`create index "emails_merchant_created_idx" on "emails" ("merchant_id", "created_at");`);
    this.addSql(
      `alter table "emails" add constraint "emails_merchant_id_foreign" foreign key ("merchant_id") references "merchants" ("id") on update cascade on delete cascade;`,
    );
  }

  override async down(): Promise<void> {
    this.addSql(`drop table if exists "emails" cascade;`);
  }
}
