import { Migration } from '@mikro-orm/migrations';

/**
 * A cancel cannot be lost (issue 44 item 4, decision 0076): a DELETE records its intent on the
 * subscription's row before it asks the workflow, and opening or charging an invoice refuses
 * under the row's lock once it is set.
 */
export class Migration20261204000000CancelIntent extends Migration {
  override async up(): Promise<void> {
    this.addSql(`alter table "subscriptions" add column "cancel_requested_at" timestamptz(3) null;`);
    this.addSql(`alter table "subscriptions" add column "cancel_request_reason" varchar(500) null;`);
    this.addSql(`alter table "subscriptions" add column "cancel_request_notify" boolean null;`);
  }

  override async down(): Promise<void> {
    this.addSql(`alter table "subscriptions" drop column "cancel_request_notify";`);
    this.addSql(`alter table "subscriptions" drop column "cancel_request_reason";`);
    this.addSql(`alter table "subscriptions" drop column "cancel_requested_at";`);
  }
}
