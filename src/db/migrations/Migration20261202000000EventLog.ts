import { Migration } from '@mikro-orm/migrations';

/**
 * The event log (decision 0065): every event is recorded, with its environment, its object (the
 * id of its `data`) and a `sequence` per object; each delivery attempt in event_deliveries.
 *
 * `sequence` is allocated by a BEFORE INSERT trigger over a per-object counter row
 * (event_sequences), so both writers (recordEvent's flush and the statement-side outboxEventCte)
 * get it in the inserting transaction. The counter row is locked first (an upsert), then the
 * event's dedupe key is checked (a fresh snapshot per statement: a concurrent duplicate that
 * committed meanwhile is seen), and only a new event takes the next number: the row lock, held
 * to commit, makes the numbers follow commit order, from 1, without gaps or repeats. Counters are
 * never pruned with the events, so an object's numbers never start again.
 *
 * Existing rows are backfilled: environment from their record (payments, refunds through their
 * payment, subscriptions, disputes; else 'test'), objectId from the id of their data (else their
 * resource id), sequence numbered by (created_at, id) per object.
 */
export class Migration20261202000000EventLog extends Migration {
  override async up(): Promise<void> {
    this.addSql(
      `alter table "merchant_events" add column "object_id" varchar(40) null, add column "environment" text check ("environment" in ('test', 'live')) null, add column "sequence" int not null default 0;`,
    );
    this.addSql(
      `update "merchant_events" e set
         "environment" = coalesce(
           (select p.environment from payments p where p.id = e.resource_id),
           (select p.environment from refunds r join payments p on p.id = r.payment_id where r.id = e.resource_id),
           (select s.environment from subscriptions s where s.id = e.resource_id),
           (select d.environment from disputes d where d.id = e.resource_id),
           'test'),
         "object_id" = coalesce(left(e.payload -> 'data' ->> 'id', 40), e.resource_id);`,
    );
    this.addSql(
      `update "merchant_events" e set "sequence" = n.seq
         from (select id, row_number() over (partition by merchant_id, environment, object_id order by created_at, id) as seq
                 from "merchant_events") n
        where n.id = e.id;`,
    );
    this.addSql(
      `alter table "merchant_events" alter column "object_id" set not null, alter column "environment" set not null;`,
    );
    this.addSql(
      `create table "event_sequences" ("merchant_id" varchar(40) not null, "environment" text check ("environment" in ('test', 'live')) not null, "object_id" varchar(40) not null, "last" int not null, constraint "event_sequences_pkey" primary key ("merchant_id", "environment", "object_id"));`,
    );
    this.addSql(
      `alter table "event_sequences" add constraint "event_sequences_merchant_id_foreign" foreign key ("merchant_id") references "merchants" ("id") on update cascade on delete cascade;`,
    );
    this.addSql(
      `insert into "event_sequences" ("merchant_id", "environment", "object_id", "last")
       select merchant_id, environment, object_id, max(sequence) from "merchant_events" group by 1, 2, 3;`,
    );
    // The form MikroORM gives a declared trigger (its function `<table>_<trigger>_fn`), so the
    // schema compares equal to the entity (src/db/entities.ts, MerchantEvent `triggers`).
    this.addSql(
      `create or replace function "merchant_events_assign_sequence_fn"() returns trigger as $$ begin insert into event_sequences as s (merchant_id, environment, object_id, last) values (new.merchant_id, new.environment, new.object_id, 0) on conflict (merchant_id, environment, object_id) do update set last = s.last; if exists (select 1 from merchant_events e where e.dedupe_key = new.dedupe_key) then return new; end if; update event_sequences set last = last + 1 where merchant_id = new.merchant_id and environment = new.environment and object_id = new.object_id returning last into new.sequence; return new; end; $$ language plpgsql;`,
    );
    this.addSql(
      `create trigger "assign_sequence" before insert on "merchant_events" for each row execute function "merchant_events_assign_sequence_fn"();`,
    );
    this.addSql(`drop index if exists "merchant_events_merchant_created_idx";`);
    this.addSql(
      `create index "merchant_events_merchant_env_created_idx" on "merchant_events" ("merchant_id", "environment", "created_at", "id");`,
    );
    this.addSql(
      `create index "merchant_events_merchant_env_object_idx" on "merchant_events" ("merchant_id", "environment", "object_id", "created_at", "id");`,
    );
    this.addSql(
      `create index "merchant_events_merchant_env_type_idx" on "merchant_events" ("merchant_id", "environment", "type", "created_at", "id");`,
    );
    this.addSql(`create index "merchant_events_created_idx" on "merchant_events" ("created_at");`);
    this.addSql(`drop index if exists "merchant_events_undelivered_idx";`);
    this.addSql(
      `create index "merchant_events_undelivered_idx" on "merchant_events" ("created_at", "id") where delivered_at is null and callback_url is not null;`,
    );
    this.addSql(
      `create table "event_deliveries" ("id" varchar(40) not null, "event_id" varchar(40) not null, "endpoint_id" varchar(40) null, "url" text not null, "attempt" int not null, "status" text check ("status" in ('pending', 'succeeded', 'failed')) not null, "http_status" int null, "error" text null, "duration_ms" int null, "at" timestamptz(3) not null, constraint "event_deliveries_pkey" primary key ("id"));`,
    );
    this.addSql(`create index "event_deliveries_event_at_idx" on "event_deliveries" ("event_id", "at");`);
    this.addSql(
      `alter table "event_deliveries" add constraint "event_deliveries_event_id_foreign" foreign key ("event_id") references "merchant_events" ("id") on update cascade on delete cascade;`,
    );
  }

  override async down(): Promise<void> {
    this.addSql(`drop table if exists "event_deliveries" cascade;`);
    this.addSql(`drop trigger if exists "assign_sequence" on "merchant_events";`);
    this.addSql(`drop function if exists "merchant_events_assign_sequence_fn"();`);
    this.addSql(`drop table if exists "event_sequences" cascade;`);
    this.addSql(`drop index if exists "merchant_events_merchant_env_created_idx";`);
    this.addSql(`drop index if exists "merchant_events_merchant_env_object_idx";`);
    this.addSql(`drop index if exists "merchant_events_merchant_env_type_idx";`);
    this.addSql(`drop index if exists "merchant_events_created_idx";`);
    this.addSql(`drop index if exists "merchant_events_undelivered_idx";`);
    this.addSql(
      `create index "merchant_events_undelivered_idx" on "merchant_events" ("created_at", "id") where delivered_at is null;`,
    );
    this.addSql(
      `create index "merchant_events_merchant_created_idx" on "merchant_events" ("merchant_id", "created_at");`,
    );
    this.addSql(
      `alter table "merchant_events" drop column "object_id", drop column "environment", drop column "sequence";`,
    );
  }
}
