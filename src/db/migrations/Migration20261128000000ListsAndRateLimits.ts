import { Migration } from '@mikro-orm/migrations';

/**
 * Lists (PRODUCT.md, "Lists"): keyset pagination newest first needs an index that holds a
 * caller's records in (created_at, id) order, scoped to merchant AND environment. The payments and
 * subscriptions ones replace the (merchant_id, created_at) indexes, which no query uses any more
 * (one index less to maintain on every insert). A subscription's invoices are paged on
 * (subscription_id, created_at, id).
 *
 * Rate limits (PRODUCT.md, "Rate limits"): one token bucket per API key and per client address
 * with failed authentications, shared by every API process (src/api/rateLimiter.ts). A row whose
 * `full_at` has passed is a full bucket, as good as no row: those are deleted now and then.
 */
export class Migration20261128000000ListsAndRateLimits extends Migration {
  override async up(): Promise<void> {
    this.addSql(
      `create index "payments_merchant_env_created_idx" on "payments" ("merchant_id", "environment", "created_at", "id");`,
    );
    this.addSql(`drop index if exists "payments_merchant_created_idx";`);
    this.addSql(
      `create index "subscriptions_merchant_env_created_idx" on "subscriptions" ("merchant_id", "environment", "created_at", "id");`,
    );
    this.addSql(`drop index if exists "subscriptions_merchant_created_idx";`);
    this.addSql(
      `create index "invoices_subscription_created_idx" on "invoices" ("subscription_id", "created_at", "id");`,
    );
    this.addSql(
      `create table "rate_limit_buckets" ("key" varchar(200) not null, "tokens" double precision not null, "granted" int not null, "refreshed_at" timestamptz(6) not null, "full_at" timestamptz(6) not null, constraint "rate_limit_buckets_pkey" primary key ("key"));`,
    );
    this.addSql(`create index "rate_limit_buckets_full_at_idx" on "rate_limit_buckets" ("full_at");`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop table if exists "rate_limit_buckets" cascade;`);
    this.addSql(`drop index if exists "invoices_subscription_created_idx";`);
    this.addSql(`create index "subscriptions_merchant_created_idx" on "subscriptions" ("merchant_id", "created_at");`);
    this.addSql(`drop index if exists "subscriptions_merchant_env_created_idx";`);
    this.addSql(`create index "payments_merchant_created_idx" on "payments" ("merchant_id", "created_at");`);
    this.addSql(`drop index if exists "payments_merchant_env_created_idx";`);
  }
}
