import { Migration } from '@mikro-orm/migrations';

/**
 * Webhook endpoints (issue 43, decision 0068): per merchant and environment, at most 16 (counted
 * under a transaction-scoped advisory lock, not a constraint). Secrets only as ciphertexts.
 */
export class Migration20261202020000WebhookEndpoints extends Migration {
  override async up(): Promise<void> {
    this.addSql(
      `create table "webhook_endpoints" ("id" varchar(40) not null, "merchant_id" varchar(40) not null, "environment" text check ("environment" in ('test', 'live')) not null, "url" text not null, "enabled_events" jsonb not null, "description" text null, "status" text check ("status" in ('enabled', 'disabled')) not null, "secret_ciphertext" text not null, "previous_secret_ciphertext" text null, "previous_secret_expires_at" timestamptz(3) null, "created_at" timestamptz(3) not null, "updated_at" timestamptz(3) not null, constraint "webhook_endpoints_pkey" primary key ("id"));`,
    );
    this.addSql(
      `create index "webhook_endpoints_merchant_env_created_idx" on "webhook_endpoints" ("merchant_id", "environment", "created_at", "id");`,
    );
    this.addSql(
      `alter table "webhook_endpoints" add constraint "webhook_endpoints_merchant_id_foreign" foreign key ("merchant_id") references "merchants" ("id") on update cascade on delete cascade;`,
    );
  }

  override async down(): Promise<void> {
    this.addSql(`drop table if exists "webhook_endpoints" cascade;`);
  }
}
