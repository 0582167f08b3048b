import { Migration } from '@mikro-orm/migrations';

/**
 * Disputes (issue 42, item 4; decision 0056): one row per processor dispute, and on each payment
 * the sum of its open, lost and accepted disputes and how many are open, kept under the payment's
 * row lock with the disputes so the refund paths read them where they already check the balance.
 */
export class Migration20261130010000Disputes extends Migration {
  override async up(): Promise<void> {
    this.addSql(
      `alter table "payments" add column "amount_disputed_minor" bigint not null default 0, add column "open_disputes" int not null default 0;`,
    );
    this.addSql(
      `alter table "payments" add constraint payments_disputes_check check (amount_disputed_minor >= 0 and open_disputes >= 0);`,
    );
    this.addSql(
      `create table "disputes" ("id" varchar(40) not null, "merchant_id" varchar(40) not null, "payment_id" varchar(40) not null, "environment" text check ("environment" in ('test', 'live')) not null, "processor" varchar(32) not null, "provider_dispute_id" varchar(64) not null, "amount_minor" bigint not null, "currency" varchar(3) not null, "reason" varchar(64) not null, "status" text check ("status" in ('needs_response', 'under_review', 'won', 'lost', 'accepted')) not null, "evidence_due_by" timestamptz(3) not null, "evidence_text" text null, "evidence_submitted_at" timestamptz(3) null, "created_at" timestamptz(3) not null, "updated_at" timestamptz(3) not null, "closed_at" timestamptz(3) null, constraint "disputes_pkey" primary key ("id"), constraint disputes_amount_positive_check check (amount_minor > 0));`,
    );
    this.addSql(
      `create index "disputes_merchant_env_created_idx" on "disputes" ("merchant_id", "environment", "created_at", "id");`,
    );
    this.addSql(`create index "disputes_payment_created_idx" on "disputes" ("payment_id", "created_at");`);
    this.addSql(
      `alter table "disputes" add constraint "disputes_processor_dispute_unique" unique ("processor", "provider_dispute_id");`,
    );
    this.addSql(
      `alter table "disputes" add constraint "disputes_merchant_id_foreign" foreign key ("merchant_id") references "merchants" ("id") on update cascade on delete cascade;`,
    );
    this.addSql(
      `alter table "disputes" add constraint "disputes_payment_id_foreign" foreign key ("payment_id") references "payments" ("id") on update cascade on delete cascade;`,
    );
  }

  override async down(): Promise<void> {
    this.addSql(`drop table if exists "disputes" cascade;`);
    this.addSql(`alter table "payments" drop constraint payments_disputes_check;`);
    this.addSql(`alter table "payments" drop column "amount_disputed_minor", drop column "open_disputes";`);
  }
}
