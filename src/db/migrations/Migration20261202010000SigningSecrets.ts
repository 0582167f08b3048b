import { Migration } from '@mikro-orm/migrations';

/**
 * Signing secrets per merchant and environment (decision 0067). A merchant's existing secret
 * (merchants.webhook_secret, plain text) becomes the secret of both environments, moved as
 * `plain:<secret>`: a migration has no PROVIDER_SECRETS_KEY, so `db:migrate` seals those rows
 * right after migrating when the key is configured, and any process with the key seals a row it
 * reads (src/domain/signingSecrets.ts). The plain-text column is dropped.
 */
export class Migration20261202010000SigningSecrets extends Migration {
  override async up(): Promise<void> {
    this.addSql(
      `create table "merchant_signing_secrets" ("merchant_id" varchar(40) not null, "environment" text check ("environment" in ('test', 'live')) not null, "secret" text not null, "previous_secret" text null, "previous_until" timestamptz(3) null, "created_at" timestamptz(3) not null, "updated_at" timestamptz(3) not null, constraint "merchant_signing_secrets_pkey" primary key ("merchant_id", "environment"));`,
    );
    this.addSql(
      `alter table "merchant_signing_secrets" add constraint "merchant_signing_secrets_merchant_id_foreign" foreign key ("merchant_id") references "merchants" ("id") on update cascade on delete cascade;`,
    );
    this.addSql(
      `insert into "merchant_signing_secrets" ("merchant_id", "environment", "secret", "created_at", "updated_at")
       select m."id", e."environment", 'plain:' || m."webhook_secret", now(), now()
         from "merchants" m cross join (values ('test'), ('live')) as e("environment")
        where m."webhook_secret" is not null;`,
    );
    this.addSql(`alter table "merchants" drop column "webhook_secret";`);
  }

  override async down(): Promise<void> {
    this.addSql(`alter table "merchants" add column "webhook_secret" varchar(80) null;`);
    this.addSql(`drop table if exists "merchant_signing_secrets" cascade;`);
  }
}
