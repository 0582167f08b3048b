import { Migration } from '@mikro-orm/migrations';

/**
 * Deliveries on their own queue (issue 43, decision 0069): a delivery job per event and
 * destination, written by the `fan_out_deliveries` trigger in the event's transaction; one
 * delivery lease per merchant; failing hosts paused per merchant; an endpoint's failing streak.
 *
 * Undelivered callback events of the last 3 days (the retry window) are handed over as jobs,
 * with their attempts so far: the old per-record delivery path stops looking at them.
 */
export class Migration20261203000000DeliveryJobs extends Migration {
  override async up(): Promise<void> {
    this.addSql(`alter table "webhook_endpoints" add column "failing_since" timestamptz(3) null;`);
    this.addSql(
      `create table "delivery_jobs" ("id" varchar(40) not null, "merchant_id" varchar(40) not null, "environment" text check ("environment" in ('test', 'live')) not null, "event_id" varchar(40) not null, "endpoint_id" varchar(40) null, "url" text null, "status" text check ("status" in ('pending', 'succeeded', 'failed', 'cancelled')) not null, "attempts" int not null default 0, "next_attempt_at" timestamptz(3) not null, "claimed_until" timestamptz(3) null, "pending_delivery_id" varchar(40) null, "last_error" text null, "created_at" timestamptz(3) not null, "updated_at" timestamptz(3) not null, constraint "delivery_jobs_pkey" primary key ("id"));`,
    );
    this.addSql(
      `create index "delivery_jobs_due_idx" on "delivery_jobs" ("merchant_id", "next_attempt_at") where status = 'pending';`,
    );
    this.addSql(
      `create index "delivery_jobs_next_attempt_idx" on "delivery_jobs" ("next_attempt_at") where status = 'pending';`,
    );
    this.addSql(`create index "delivery_jobs_event_idx" on "delivery_jobs" ("event_id");`);
    this.addSql(`create index "delivery_jobs_endpoint_idx" on "delivery_jobs" ("endpoint_id");`);
    this.addSql(
      `alter table "delivery_jobs" add constraint "delivery_jobs_merchant_id_foreign" foreign key ("merchant_id") references "merchants" ("id") on update cascade on delete cascade;`,
    );
    this.addSql(
      `alter table "delivery_jobs" add constraint "delivery_jobs_event_id_foreign" foreign key ("event_id") references "merchant_events" ("id") on update cascade on delete cascade;`,
    );
    this.addSql(
      `alter table "delivery_jobs" add constraint "delivery_jobs_endpoint_id_foreign" foreign key ("endpoint_id") references "webhook_endpoints" ("id") on update cascade on delete cascade;`,
    );
    this.addSql(
      `create table "delivery_leases" ("merchant_id" varchar(40) not null, "holder" varchar(64) not null, "until" timestamptz(3) not null, constraint "delivery_leases_pkey" primary key ("merchant_id"));`,
    );
    this.addSql(
      `alter table "delivery_leases" add constraint "delivery_leases_merchant_id_foreign" foreign key ("merchant_id") references "merchants" ("id") on update cascade on delete cascade;`,
    );
    this.addSql(
      `create table "delivery_host_pauses" ("merchant_id" varchar(40) not null, "host" varchar(255) not null, "failures" int not null, "paused_until" timestamptz(3) null, constraint "delivery_host_pauses_pkey" primary key ("merchant_id", "host"));`,
    );
    this.addSql(
      `alter table "delivery_host_pauses" add constraint "delivery_host_pauses_merchant_id_foreign" foreign key ("merchant_id") references "merchants" ("id") on update cascade on delete cascade;`,
    );
    this.addSql(
      `insert into "delivery_jobs" ("id", "merchant_id", "environment", "event_id", "endpoint_id", "url", "status", "attempts", "next_attempt_at", "created_at", "updated_at")
       select 'dj_' || replace(gen_random_uuid()::text, '-', ''), e.merchant_id, e.environment, e.id, null, e.callback_url, 'pending', e.attempts, now(), e.created_at, now()
         from "merchant_events" e
        where e.delivered_at is null and e.callback_url is not null and e.created_at > now() - interval '3 days';`,
    );
    // The form MikroORM gives a declared trigger (src/db/entities.ts, MerchantEvent `triggers`).
    this.addSql(
      `create or replace function "merchant_events_fan_out_deliveries_fn"() returns trigger as $$ begin if new.callback_url is not null then insert into delivery_jobs (id, merchant_id, environment, event_id, endpoint_id, url, status, attempts, next_attempt_at, created_at, updated_at) values ('dj_' || replace(gen_random_uuid()::text, '-', ''), new.merchant_id, new.environment, new.id, null, new.callback_url, 'pending', 0, now(), now(), now()); end if; insert into delivery_jobs (id, merchant_id, environment, event_id, endpoint_id, url, status, attempts, next_attempt_at, created_at, updated_at) select 'dj_' || replace(gen_random_uuid()::text, '-', ''), w.merchant_id, w.environment, new.id, w.id, null, 'pending', 0, now(), now(), now() from webhook_endpoints w where w.merchant_id = new.merchant_id and w.environment = new.environment and w.status = 'enabled' and (w.enabled_events @> '["*"]'::jsonb or w.enabled_events @> jsonb_build_array(new.type) or w.enabled_events @> jsonb_build_array(split_part(new.type, '.', 1) || '.*')); return null; end; $$ language plpgsql;`,
    );
    this.addSql(
      `create trigger "fan_out_deliveries" after insert on "merchant_events" for each row execute function "merchant_events_fan_out_deliveries_fn"();`,
    );
  }

  override async down(): Promise<void> {
    this.addSql(`drop trigger if exists "fan_out_deliveries" on "merchant_events";`);
    this.addSql(`drop function if exists "merchant_events_fan_out_deliveries_fn"();`);
    this.addSql(`drop table if exists "delivery_host_pauses" cascade;`);
    this.addSql(`drop table if exists "delivery_leases" cascade;`);
    this.addSql(`drop table if exists "delivery_jobs" cascade;`);
    this.addSql(`alter table "webhook_endpoints" drop column if exists "failing_since";`);
  }
}
