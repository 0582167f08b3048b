import { Migration } from '@mikro-orm/migrations';

/** The orphan sweeper: its watermarks, and partial indexes over its candidates (small: rows without a provider reference). */
export class Migration20261123010000SweepWatermarks extends Migration {
  override async up(): Promise<void> {
    this.addSql(
      `create table "sweep_watermarks" ("scope" varchar(100) not null, "last_created_at" timestamptz(3) not null, "last_id" varchar(40) not null, "updated_at" timestamptz(3) not null, constraint "sweep_watermarks_pkey" primary key ("scope"));`,
    );
    this.addSql(
      `create index "payments_sweep_candidates_idx" on "payments" ("created_at", "id") where status = 'created' and provider_transaction_id is null;`,
    );
    this.addSql(
      `create index "refunds_sweep_candidates_idx" on "refunds" ("created_at", "id") where status = 'pending' and provider_refund_id is null;`,
    );
  }

  override async down(): Promise<void> {
    this.addSql(`drop index if exists "refunds_sweep_candidates_idx";`);
    this.addSql(`drop index if exists "payments_sweep_candidates_idx";`);
    this.addSql(`drop table if exists "sweep_watermarks" cascade;`);
  }
}
