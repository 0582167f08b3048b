import { Migration } from '@mikro-orm/migrations';

/** Merchants and their API keys. */
export class Migration20261122000000Foundation extends Migration {
  override async up(): Promise<void> {
    this.addSql(
      `create table "merchants" ("id" varchar(40) not null, "name" varchar(255) not null, "email" varchar(320) null, "status" text check ("status" in ('active', 'inactive')) not null, "created_at" timestamptz(3) not null, "updated_at" timestamptz(3) not null, constraint "merchants_pkey" primary key ("id"));`,
    );
    this.addSql(
      `create table "api_keys" ("id" varchar(40) not null, "merchant_id" varchar(40) not null, "public_key" varchar(64) not null, "secret_hash" varchar(64) not null, "environment" text check ("environment" in ('test', 'live')) not null, "role" text check ("role" in ('merchant', 'admin')) not null, "is_active" boolean not null, "created_at" timestamptz(3) not null, "revoked_at" timestamptz(3) null, "last_used_at" timestamptz(3) null, constraint "api_keys_pkey" primary key ("id"), constraint api_keys_revocation_check check ((is_active and revoked_at is null) or (not is_active and revoked_at is not null)));`,
    );
    this.addSql(`alter table "api_keys" add constraint "api_keys_public_key_unique" unique ("public_key");`);
    this.addSql(`create index "api_keys_merchant_created_idx" on "api_keys" ("merchant_id", "created_at");`);
    this.addSql(
      `alter table "api_keys" add constraint "api_keys_merchant_id_foreign" foreign key ("merchant_id") references "merchants" ("id") on update cascade on delete cascade;`,
    );
  }

  override async down(): Promise<void> {
    this.addSql(`drop table if exists "api_keys" cascade;`);
    this.addSql(`drop table if exists "merchants" cascade;`);
  }
}
