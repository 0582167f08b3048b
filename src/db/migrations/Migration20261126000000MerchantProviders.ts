import { Migration } from '@mikro-orm/migrations';

/**
 * Each merchant's provider per environment (at most one: the primary key), with its secrets
 * encrypted (AES-256-GCM ciphertexts; see src/providers/secrets.ts).
 */
export class Migration20261126000000MerchantProviders extends Migration {
  override async up(): Promise<void> {
    this.addSql(
      `create table "merchant_providers" ("merchant_id" varchar(40) not null, "environment" text check ("environment" in ('test', 'live')) not null, "processor" text check ("processor" in ('sandbox', 'stripe')) not null, "secret_key_ciphertext" text null, "webhook_secret_ciphertext" text null, "created_at" timestamptz(3) not null, "updated_at" timestamptz(3) not null, constraint "merchant_providers_pkey" primary key ("merchant_id", "environment"));`,
    );
    this.addSql(
      `alter table "merchant_providers" add constraint "merchant_providers_merchant_id_foreign" foreign key ("merchant_id") references "merchants" ("id") on update cascade on delete cascade;`,
    );
  }

  override async down(): Promise<void> {
    this.addSql(`drop table if exists "merchant_providers" cascade;`);
  }
}
