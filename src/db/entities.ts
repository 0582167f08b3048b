import { BigIntType, EntitySchema, PrimaryKeyProp, type Opt } from '@mikro-orm/core';
import { SUBSCRIPTION_STATUSES, type SubscriptionStatus } from '../rules/subscriptionPlan';
import { DECLINE_TYPES, type DeclineType } from '../rules/declines';

/**
 * Persistence model. Plain classes mapped with EntitySchema (no decorators, so the
 * compiler needs no metadata emission). Money is never stored here as a float: amounts
 * are bigint minor units (see src/rules/money.ts).
 */
export const MERCHANT_STATUSES = ['active', 'inactive'] as const;
export type MerchantStatus = (typeof MERCHANT_STATUSES)[number];

export const KEY_ENVIRONMENTS = ['test', 'live'] as const;
export type KeyEnvironment = (typeof KEY_ENVIRONMENTS)[number];

export const KEY_ROLES = ['merchant', 'admin'] as const;
export type KeyRole = (typeof KEY_ROLES)[number];

export class Merchant {
  id!: string;
  name!: string;
  email!: string | null;
  status!: MerchantStatus;
  createdAt!: Date;
  updatedAt!: Date;
}

export class ApiKey {
  id!: string;
  merchant!: Merchant;
  publicKey!: string;
  /** SHA-256 of the secret, hex. The secret itself is never stored. */
  secretHash!: string;
  environment!: KeyEnvironment;
  role!: KeyRole;
  isActive!: boolean;
  createdAt!: Date;
  revokedAt!: Date | null;
  lastUsedAt!: Date | null;
}

const timestamp = { type: 'Date', columnType: 'timestamptz(3)' } as const;

export const MerchantSchema = new EntitySchema<Merchant>({
  class: Merchant,
  tableName: 'merchants',
  properties: {
    id: { type: 'string', primary: true, length: 40 },
    name: { type: 'string', length: 255 },
    email: { type: 'string', length: 320, nullable: true },
    status: { enum: true, items: () => [...MERCHANT_STATUSES] },
    createdAt: { ...timestamp },
    updatedAt: { ...timestamp },
  },
});

export const ApiKeySchema = new EntitySchema<ApiKey>({
  class: ApiKey,
  tableName: 'api_keys',
  indexes: [{ properties: ['merchant', 'createdAt'], name: 'api_keys_merchant_created_idx' }],
  checks: [
    // A revoked key is inactive and says when; an active key has no revocation time.
    {
      name: 'api_keys_revocation_check',
      expression: '(is_active and revoked_at is null) or (not is_active and revoked_at is not null)',
    },
  ],
  properties: {
    id: { type: 'string', primary: true, length: 40 },
    merchant: { kind: 'm:1', entity: () => Merchant, deleteRule: 'cascade', updateRule: 'cascade' },
    publicKey: { type: 'string', length: 64, unique: 'api_keys_public_key_unique' },
    secretHash: { type: 'string', length: 64 },
    environment: { enum: true, items: () => [...KEY_ENVIRONMENTS] },
    role: { enum: true, items: () => [...KEY_ROLES] },
    isActive: { type: 'boolean' },
    createdAt: { ...timestamp },
    revokedAt: { ...timestamp, nullable: true },
    lastUsedAt: { ...timestamp, nullable: true },
  },
});

/**
 * `requires_action`: the customer authenticates at `actionUrl` (3-D Secure); `processing`: the
 * processor accepted and decides later. Both are in flight, like `created` (PRODUCT.md, "Processor lifecycle").
 */
export const PAYMENT_STATUSES = [
  'created',
  'requires_action',
  'processing',
  'succeeded',
  'failed',
  'refunded',
  'voided',
  'partially_refunded',
] as const;
export type PaymentStatus = (typeof PAYMENT_STATUSES)[number];

export interface Customer {
  /** null only for a record made with `customerId` whose customer has no email. */
  email: string | null;
  name?: string;
  externalId?: string;
}

export class Payment {
  id!: string;
  merchant!: Merchant;
  externalId!: string;
  environment!: KeyEnvironment;
  processor!: string;
  /** Integer minor units. */
  amountMinor!: number;
  currency!: string;
  status!: PaymentStatus;
  /** Sum of succeeded refunds, minor units. */
  amountRefundedMinor!: number;
  /** The in-flight refund's amount, minor units (0 or one refund: at most one in flight). */
  amountPendingRefundMinor!: number;
  /** Sum of its open, lost and accepted disputes, minor units (kept with the disputes, under this row's lock). */
  amountDisputedMinor!: number;
  /** How many of its disputes are open (needs_response, under_review): refunds wait while any is. */
  openDisputes!: number;
  providerTransactionId!: string | null;
  /**
   * Set right before a provider call under the record's current idempotency key; cleared when
   * an answer proves that call did nothing (`unavailable`) or the key moves on (a declined
   * invoice attempt). While set, an `unavailable` answer is no proof that nothing was done.
   */
  providerCallSentAt!: Date | null;
  redirectUrl!: string | null;
  /** Where the customer authenticates this payment's charge while `requires_action` (the API's `nextAction`). */
  actionUrl!: string | null;
  /** Provider card token of the token flow (a provider reference, never card data). */
  cardToken!: string | null;
  saveCardEnabled!: boolean;
  savedCardToken!: string | null;
  customer!: Customer;
  /** The merchant's customer (`cus_...`) the payment was made for, when named by `customerId`. */
  customerId!: string | null;
  /** The customer's saved payment method (`pm_...`) charged, when the payment used one. */
  paymentMethodId!: string | null;
  billing!: Record<string, unknown> | null;
  metadata!: Record<string, string> | null;
  description!: string | null;
  callbackUrl!: string | null;
  returnUrl!: string | null;
  failureCode!: string | null;
  failureMessage!: string | null;
  expiresAt!: Date;
  createdAt!: Date;
  updatedAt!: Date;
}

const minorUnits = { type: new BigIntType('number'), columnType: 'bigint' } as const;

export const PaymentSchema = new EntitySchema<Payment>({
  class: Payment,
  tableName: 'payments',
  uniques: [{ properties: ['merchant', 'externalId'], name: 'payments_merchant_external_id_unique' }],
  indexes: [
    // The list (GET /payments), newest first by keyset on (created_at, id).
    {
      properties: ['merchant', 'environment', 'createdAt', 'id'],
      name: 'payments_merchant_env_created_idx',
    },
    // The orphan sweeper's candidates (never reached the provider), paged by (created_at, id).
    {
      name: 'payments_sweep_candidates_idx',
      expression: `create index "payments_sweep_candidates_idx" on "payments" ("created_at", "id") where status = 'created' and provider_transaction_id is null`,
    },
    // Payments in flight by expiry, awaiting an attempt or an authentication: the
    // payments_stuck_created gauge (src/metrics/backlog.ts).
    {
      name: 'payments_awaiting_expiry_idx',
      expression: `create index "payments_awaiting_expiry_idx" on "payments" ("expires_at") where status in ('created', 'requires_action')`,
    },
    // Payments the processor decides later, by age: the payments_stuck_processing gauge.
    {
      name: 'payments_processing_created_idx',
      expression: `create index "payments_processing_created_idx" on "payments" ("created_at") where status = 'processing'`,
    },
    // Hosted payments waiting on the customer, per merchant: the open_hosted_payments quota's count (decision 0079).
    {
      name: 'payments_open_hosted_idx',
      expression: `create index "payments_open_hosted_idx" on "payments" ("merchant_id", "environment") where status in ('created', 'requires_action') and card_token is null`,
    },
  ],
  checks: [
    { name: 'payments_amount_positive_check', expression: 'amount_minor > 0' },
    {
      // Money invariant 2, enforced by the database as a last line of defence.
      name: 'payments_refund_bound_check',
      expression:
        'amount_refunded_minor >= 0 and amount_pending_refund_minor >= 0 and amount_refunded_minor + amount_pending_refund_minor <= amount_minor',
    },
    { name: 'payments_disputes_check', expression: 'amount_disputed_minor >= 0 and open_disputes >= 0' },
  ],
  properties: {
    id: { type: 'string', primary: true, length: 40 },
    merchant: { kind: 'm:1', entity: () => Merchant, deleteRule: 'cascade', updateRule: 'cascade' },
    externalId: { type: 'string', length: 255 },
    environment: { enum: true, items: () => [...KEY_ENVIRONMENTS] },
    processor: { type: 'string', length: 32 },
    amountMinor: { ...minorUnits },
    currency: { type: 'string', length: 3 },
    status: { enum: true, items: () => [...PAYMENT_STATUSES] },
    amountRefundedMinor: { ...minorUnits, defaultRaw: '0' },
    amountPendingRefundMinor: { ...minorUnits, defaultRaw: '0' },
    amountDisputedMinor: { ...minorUnits, defaultRaw: '0' },
    openDisputes: { type: 'integer', default: 0 },
    providerTransactionId: { type: 'string', length: 64, nullable: true },
    providerCallSentAt: { ...timestamp, nullable: true },
    redirectUrl: { type: 'text', nullable: true },
    actionUrl: { type: 'text', nullable: true },
    cardToken: { type: 'string', length: 255, nullable: true },
    saveCardEnabled: { type: 'boolean', default: false },
    savedCardToken: { type: 'string', length: 255, nullable: true },
    customer: { type: 'json' },
    customerId: { type: 'string', length: 40, nullable: true },
    paymentMethodId: { type: 'string', length: 40, nullable: true },
    billing: { type: 'json', nullable: true },
    metadata: { type: 'json', nullable: true },
    description: { type: 'text', nullable: true },
    callbackUrl: { type: 'text', nullable: true },
    returnUrl: { type: 'text', nullable: true },
    failureCode: { type: 'string', length: 64, nullable: true },
    failureMessage: { type: 'text', nullable: true },
    expiresAt: { ...timestamp },
    createdAt: { ...timestamp },
    updatedAt: { ...timestamp },
  },
});

/**
 * Outbox of events for merchants' callbackUrls: written in the same transaction as the state
 * change it reports, delivered (and retried) by an activity, the same id on every attempt.
 */
export class MerchantEvent {
  id!: string;
  merchant!: Merchant;
  type!: string;
  /** The record whose run delivers it (a refund's payment.* events: the refund). */
  resourceId!: string;
  /** The id of the event's `data` (PRODUCT.md): the object its `sequence` counts under. */
  objectId!: string;
  /** The record's key environment (a refund's is its payment's). */
  environment!: KeyEnvironment;
  /**
   * Strictly increasing per (merchant, environment, objectId), from 1: allocated by the
   * database in the inserting transaction (trigger assign_sequence over event_sequences).
   */
  sequence!: Opt<number>;
  /** Makes recording idempotent: one event per state change, however often an activity retries. */
  dedupeKey!: string;
  callbackUrl!: string | null;
  payload!: Record<string, unknown>;
  attempts!: number;
  deliveredAt!: Date | null;
  lastError!: string | null;
  /** Held by a delivery POSTing it until then (activities/merchantEvents.ts); null: free. */
  claimedUntil!: Date | null;
  createdAt!: Date;
}

/** The body of the `fan_out_deliveries` trigger (Migration20261203000000DeliveryJobs). */
const FAN_OUT_DELIVERIES_SQL = `if new.callback_url is not null then insert into delivery_jobs (id, merchant_id, environment, event_id, endpoint_id, url, status, attempts, next_attempt_at, created_at, updated_at) values ('dj_' || replace(gen_random_uuid()::text, '-', ''), new.merchant_id, new.environment, new.id, null, new.callback_url, 'pending', 0, now(), now(), now()); end if; insert into delivery_jobs (id, merchant_id, environment, event_id, endpoint_id, url, status, attempts, next_attempt_at, created_at, updated_at) select 'dj_' || replace(gen_random_uuid()::text, '-', ''), w.merchant_id, w.environment, new.id, w.id, null, 'pending', 0, now(), now(), now() from webhook_endpoints w where w.merchant_id = new.merchant_id and w.environment = new.environment and w.status = 'enabled' and (w.enabled_events @> '["*"]'::jsonb or w.enabled_events @> jsonb_build_array(new.type) or w.enabled_events @> jsonb_build_array(split_part(new.type, '.', 1) || '.*')); return null;`;

export const MerchantEventSchema = new EntitySchema<MerchantEvent>({
  class: MerchantEvent,
  tableName: 'merchant_events',
  indexes: [
    // The event log (GET /events), newest first by keyset on (created_at, id), and its filters.
    {
      properties: ['merchant', 'environment', 'createdAt', 'id'],
      name: 'merchant_events_merchant_env_created_idx',
    },
    {
      properties: ['merchant', 'environment', 'objectId', 'createdAt', 'id'],
      name: 'merchant_events_merchant_env_object_idx',
    },
    {
      properties: ['merchant', 'environment', 'type', 'createdAt', 'id'],
      name: 'merchant_events_merchant_env_type_idx',
    },
    // The 30-day pruning (the orphan sweeper), oldest first.
    { properties: ['createdAt'], name: 'merchant_events_created_idx' },
    // The outbox relay's candidates (the orphan sweeper), paged by (created_at, id): only rows
    // with somewhere to go (an event without a callbackUrl is recorded, never delivered).
    {
      name: 'merchant_events_undelivered_idx',
      expression: `create index "merchant_events_undelivered_idx" on "merchant_events" ("created_at", "id") where delivered_at is null and callback_url is not null`,
    },
  ],
  // `sequence`: the per-object counter row (event_sequences) is locked, the dedupe key checked (a
  // duplicate takes no number), then the next number taken: in the inserting transaction, in
  // commit order (Migration20261202000000EventLog, decision 0065).
  triggers: [
    {
      name: 'assign_sequence',
      timing: 'before',
      events: ['insert'],
      forEach: 'row',
      body: `insert into event_sequences as s (merchant_id, environment, object_id, last) values (new.merchant_id, new.environment, new.object_id, 0) on conflict (merchant_id, environment, object_id) do update set last = s.last; if exists (select 1 from merchant_events e where e.dedupe_key = new.dedupe_key) then return new; end if; update event_sequences set last = last + 1 where merchant_id = new.merchant_id and environment = new.environment and object_id = new.object_id returning last into new.sequence; return new;`,
    },
    // Every event's deliveries, in the recording transaction (decision 0069): one for the record's
    // callbackUrl, one per enabled endpoint of its merchant and environment whose filter matches
    // (src/rules/eventFilters.ts matchesFilter, the same three forms, tested equal). A duplicate
    // (`on conflict do nothing`) inserts no row, so it fires no trigger and takes no delivery.
    {
      name: 'fan_out_deliveries',
      timing: 'after',
      events: ['insert'],
      forEach: 'row',
      body: FAN_OUT_DELIVERIES_SQL,
    },
  ],
  properties: {
    id: { type: 'string', primary: true, length: 40 },
    merchant: { kind: 'm:1', entity: () => Merchant, deleteRule: 'cascade', updateRule: 'cascade' },
    type: { type: 'string', length: 64 },
    resourceId: { type: 'string', length: 40 },
    objectId: { type: 'string', length: 40 },
    environment: { enum: true, items: () => [...KEY_ENVIRONMENTS] },
    sequence: { type: 'integer', default: 0 },
    dedupeKey: { type: 'string', length: 160, unique: 'merchant_events_dedupe_key_unique' },
    callbackUrl: { type: 'text', nullable: true },
    payload: { type: 'json' },
    attempts: { type: 'integer', default: 0 },
    deliveredAt: { ...timestamp, nullable: true },
    lastError: { type: 'text', nullable: true },
    claimedUntil: { ...timestamp, nullable: true },
    createdAt: { ...timestamp },
  },
});

export const EVENT_DELIVERY_STATUSES = ['pending', 'succeeded', 'failed'] as const;
export type EventDeliveryStatus = (typeof EVENT_DELIVERY_STATUSES)[number];

/**
 * One attempt to deliver an event (GET /events/{id} `deliveries`): `pending` while its POST is
 * in flight, then `succeeded` or `failed`. Pruned with its event (cascade).
 */
export class EventDelivery {
  id!: string;
  event!: MerchantEvent;
  /** The webhook endpoint delivered to; null: the record's callbackUrl. */
  endpointId!: string | null;
  url!: string;
  /** 1, 2, ... per event and destination. */
  attempt!: number;
  status!: EventDeliveryStatus;
  httpStatus!: number | null;
  error!: string | null;
  durationMs!: number | null;
  at!: Date;
}

export const EventDeliverySchema = new EntitySchema<EventDelivery>({
  class: EventDelivery,
  tableName: 'event_deliveries',
  indexes: [{ properties: ['event', 'at'], name: 'event_deliveries_event_at_idx' }],
  properties: {
    id: { type: 'string', primary: true, length: 40 },
    event: { kind: 'm:1', entity: () => MerchantEvent, deleteRule: 'cascade', updateRule: 'cascade' },
    endpointId: { type: 'string', length: 40, nullable: true },
    url: { type: 'text' },
    attempt: { type: 'integer' },
    status: { enum: true, items: () => [...EVENT_DELIVERY_STATUSES] },
    httpStatus: { type: 'integer', nullable: true },
    error: { type: 'text', nullable: true },
    durationMs: { type: 'integer', nullable: true },
    at: { ...timestamp },
  },
});

export const REFUND_STATUSES = ['pending', 'succeeded', 'failed'] as const;
export type RefundStatus = (typeof REFUND_STATUSES)[number];

export class Refund {
  id!: string;
  merchant!: Merchant;
  payment!: Payment;
  /** The merchant's id for the refund; sent to the provider as `reference_id` (it dedupes on it). */
  externalId!: string;
  amountMinor!: number;
  currency!: string;
  reason!: string | null;
  status!: RefundStatus;
  failureCode!: string | null;
  failureMessage!: string | null;
  providerRefundId!: string | null;
  /**
   * Set right before a provider call under the record's current idempotency key; cleared when
   * an answer proves that call did nothing (`unavailable`) or the key moves on (a declined
   * invoice attempt). While set, an `unavailable` answer is no proof that nothing was done.
   */
  providerCallSentAt!: Date | null;
  createdAt!: Date;
  updatedAt!: Date;
}

export const RefundSchema = new EntitySchema<Refund>({
  class: Refund,
  tableName: 'refunds',
  uniques: [{ properties: ['merchant', 'externalId'], name: 'refunds_merchant_external_id_unique' }],
  indexes: [
    { properties: ['payment', 'createdAt'], name: 'refunds_payment_created_idx' },
    // Money invariant 2: at most one in-flight refund per payment, enforced by the database.
    {
      name: 'refunds_one_pending_per_payment',
      expression: `create unique index "refunds_one_pending_per_payment" on "refunds" ("payment_id") where status = 'pending'`,
    },
    // The orphan sweeper's candidates (never reached the provider), paged by (created_at, id).
    {
      name: 'refunds_sweep_candidates_idx',
      expression: `create index "refunds_sweep_candidates_idx" on "refunds" ("created_at", "id") where status = 'pending' and provider_refund_id is null`,
    },
  ],
  checks: [{ name: 'refunds_amount_positive_check', expression: 'amount_minor > 0' }],
  properties: {
    id: { type: 'string', primary: true, length: 40 },
    merchant: { kind: 'm:1', entity: () => Merchant, deleteRule: 'cascade', updateRule: 'cascade' },
    payment: { kind: 'm:1', entity: () => Payment, deleteRule: 'cascade', updateRule: 'cascade' },
    externalId: { type: 'string', length: 255 },
    amountMinor: { ...minorUnits },
    currency: { type: 'string', length: 3 },
    reason: { type: 'string', length: 500, nullable: true },
    status: { enum: true, items: () => [...REFUND_STATUSES] },
    failureCode: { type: 'string', length: 64, nullable: true },
    failureMessage: { type: 'text', nullable: true },
    providerRefundId: { type: 'string', length: 64, nullable: true },
    providerCallSentAt: { ...timestamp, nullable: true },
    createdAt: { ...timestamp },
    updatedAt: { ...timestamp },
  },
});

export const DISPUTE_STATUSES = ['needs_response', 'under_review', 'won', 'lost', 'accepted'] as const;
export type DisputeStatus = (typeof DISPUTE_STATUSES)[number];

/**
 * A dispute (chargeback) the processor opened on a captured payment (PRODUCT.md, "Processor
 * lifecycle"). Its status follows the processor's; the evidence is the merchant's, kept here
 * (`evidenceSubmittedAt` once sent to the processor).
 */
export class Dispute {
  id!: string;
  merchant!: Merchant;
  payment!: Payment;
  environment!: KeyEnvironment;
  /** The processor that opened it (the payment's). */
  processor!: string;
  providerDisputeId!: string;
  amountMinor!: number;
  currency!: string;
  reason!: string;
  status!: DisputeStatus;
  evidenceDueBy!: Date;
  evidenceText!: string | null;
  evidenceSubmittedAt!: Date | null;
  createdAt!: Date;
  updatedAt!: Date;
  closedAt!: Date | null;
}

export const DisputeSchema = new EntitySchema<Dispute>({
  class: Dispute,
  tableName: 'disputes',
  // One row per processor dispute, however often its webhook comes.
  uniques: [{ properties: ['processor', 'providerDisputeId'], name: 'disputes_processor_dispute_unique' }],
  indexes: [
    // The list (GET /disputes), newest first by keyset on (created_at, id).
    { properties: ['merchant', 'environment', 'createdAt', 'id'], name: 'disputes_merchant_env_created_idx' },
    { properties: ['payment', 'createdAt'], name: 'disputes_payment_created_idx' },
  ],
  checks: [{ name: 'disputes_amount_positive_check', expression: 'amount_minor > 0' }],
  properties: {
    id: { type: 'string', primary: true, length: 40 },
    merchant: { kind: 'm:1', entity: () => Merchant, deleteRule: 'cascade', updateRule: 'cascade' },
    payment: { kind: 'm:1', entity: () => Payment, deleteRule: 'cascade', updateRule: 'cascade' },
    environment: { enum: true, items: () => [...KEY_ENVIRONMENTS] },
    processor: { type: 'string', length: 32 },
    providerDisputeId: { type: 'string', length: 64 },
    amountMinor: { ...minorUnits },
    currency: { type: 'string', length: 3 },
    reason: { type: 'string', length: 64 },
    status: { enum: true, items: () => [...DISPUTE_STATUSES] },
    evidenceDueBy: { ...timestamp },
    evidenceText: { type: 'text', nullable: true },
    evidenceSubmittedAt: { ...timestamp, nullable: true },
    createdAt: { ...timestamp },
    updatedAt: { ...timestamp },
    closedAt: { ...timestamp, nullable: true },
  },
});

/**
 * Outbox of emails to customers: recorded in the transaction of the change it reports, sent
 * by an activity, at most once (`sentAt`), with a stable Message-ID.
 */
export class Email {
  id!: string;
  merchant!: Merchant;
  /** One email per event, however often the recording transaction is retried. */
  dedupeKey!: string;
  to!: string;
  subject!: string;
  text!: string;
  attempts!: number;
  sentAt!: Date | null;
  /** A sender holds the email until then (it may be sending); another waits or takes over after. */
  claimedUntil!: Date | null;
  lastError!: string | null;
  /** Its Date header when not the send's time: a test clock's time (decision 0090). */
  datedAt!: Date | null;
  createdAt!: Date;
}

export const EmailSchema = new EntitySchema<Email>({
  class: Email,
  tableName: 'emails',
  indexes: [
    { properties: ['merchant', 'createdAt'], name: 'emails_merchant_created_idx' },
    // The outbox relay's candidates (the orphan sweeper), paged by (created_at, id).
    {
      name: 'emails_unsent_idx',
      expression: `create index "emails_unsent_idx" on "emails" ("created_at", "id") where sent_at is null`,
    },
  ],
  properties: {
    id: { type: 'string', primary: true, length: 40 },
    merchant: { kind: 'm:1', entity: () => Merchant, deleteRule: 'cascade', updateRule: 'cascade' },
    dedupeKey: { type: 'string', length: 160, unique: 'emails_dedupe_key_unique' },
    to: { type: 'string', length: 320 },
    subject: { type: 'string', length: 255 },
    text: { type: 'text' },
    attempts: { type: 'integer', default: 0 },
    sentAt: { ...timestamp, nullable: true },
    claimedUntil: { ...timestamp, nullable: true },
    lastError: { type: 'text', nullable: true },
    datedAt: { ...timestamp, nullable: true },
    createdAt: { ...timestamp },
  },
});

export { SUBSCRIPTION_STATUSES, type SubscriptionStatus };

/**
 * A recurring charge. Its workflow (`subscription-<id>`) is the only writer of `status`, the
 * current period and the card token; the API inserts it and reads it.
 */
export class Subscription {
  id!: string;
  merchant!: Merchant;
  externalId!: string;
  environment!: KeyEnvironment;
  processor!: string;
  /** The evergreen phase's amount per period, integer minor units. */
  amountMinor!: number;
  currency!: string;
  billingIntervalDays!: number;
  status!: SubscriptionStatus;
  /** The card charged each period: the merchant's token, or the one saved by the hosted authorization. */
  cardToken!: string | null;
  /** The hosted card-authorization page (no cardToken given). */
  redirectUrl!: string | null;
  setupTransactionId!: string | null;
  customer!: Customer | null;
  /** The merchant's customer (`cus_...`) when created with `customerId`: later charges use its default. */
  customerId!: string | null;
  /** The customer's payment method `cardToken` came from (the create's), else null. */
  paymentMethodId!: string | null;
  description!: string | null;
  metadata!: Record<string, string> | null;
  callbackUrl!: string | null;
  returnUrl!: string | null;
  retryScheduleDays!: number[];
  currentPeriodStart!: Date | null;
  currentPeriodEnd!: Date | null;
  cancelledAt!: Date | null;
  cancellationReason!: string | null;
  /** A DELETE's recorded intent (decision 0076): set before the workflow is asked; never cleared. */
  cancelRequestedAt!: Date | null;
  cancelRequestReason!: string | null;
  cancelRequestNotify!: boolean | null;
  /** The test clock whose time the subscription lives on (decision 0090); null: real time. */
  testClock!: TestClock | null;
  /** On a clock: the clock's time at the create (shown as `createdAt`); `createdAt` stays real. */
  clockCreatedAt!: Date | null;
  createdAt!: Date;
  updatedAt!: Date;
}

export const SubscriptionSchema = new EntitySchema<Subscription>({
  class: Subscription,
  tableName: 'subscriptions',
  uniques: [{ properties: ['merchant', 'externalId'], name: 'subscriptions_merchant_external_id_unique' }],
  // The list (GET /subscriptions), newest first by keyset on (created_at, id).
  indexes: [
    {
      properties: ['merchant', 'environment', 'createdAt', 'id'],
      name: 'subscriptions_merchant_env_created_idx',
    },
    // Subscriptions still holding their workflow, per merchant: the live_test_subscriptions quota's count (decision 0079).
    {
      name: 'subscriptions_live_idx',
      expression: `create index "subscriptions_live_idx" on "subscriptions" ("merchant_id", "environment") where status <> 'cancelled'`,
    },
    // A clock's subscriptions not cancelled: its subscriptionCount, its cap of 100, its advance (decision 0090).
    {
      name: 'subscriptions_test_clock_live_idx',
      expression: `create index "subscriptions_test_clock_live_idx" on "subscriptions" ("test_clock_id", "created_at", "id") where test_clock_id is not null and status <> 'cancelled'`,
    },
    // A customer's subscriptions still charging: the last card's 409, a new card's signal (0087, 0088).
    {
      name: 'subscriptions_customer_live_idx',
      expression: `create index "subscriptions_customer_live_idx" on "subscriptions" ("customer_id") where customer_id is not null and status <> 'cancelled'`,
    },
  ],
  checks: [
    { name: 'subscriptions_amount_positive_check', expression: 'amount_minor > 0' },
    {
      name: 'subscriptions_interval_check',
      expression: 'billing_interval_days >= 1 and billing_interval_days <= 3650',
    },
  ],
  properties: {
    id: { type: 'string', primary: true, length: 40 },
    merchant: { kind: 'm:1', entity: () => Merchant, deleteRule: 'cascade', updateRule: 'cascade' },
    externalId: { type: 'string', length: 255 },
    environment: { enum: true, items: () => [...KEY_ENVIRONMENTS] },
    processor: { type: 'string', length: 32 },
    amountMinor: { ...minorUnits },
    currency: { type: 'string', length: 3 },
    billingIntervalDays: { type: 'integer' },
    status: { enum: true, items: () => [...SUBSCRIPTION_STATUSES] },
    cardToken: { type: 'string', length: 255, nullable: true },
    redirectUrl: { type: 'text', nullable: true },
    setupTransactionId: { type: 'string', length: 64, nullable: true },
    customer: { type: 'json', nullable: true },
    customerId: { type: 'string', length: 40, nullable: true },
    paymentMethodId: { type: 'string', length: 40, nullable: true },
    description: { type: 'text', nullable: true },
    metadata: { type: 'json', nullable: true },
    callbackUrl: { type: 'text', nullable: true },
    returnUrl: { type: 'text', nullable: true },
    retryScheduleDays: { type: 'json' },
    currentPeriodStart: { ...timestamp, nullable: true },
    currentPeriodEnd: { ...timestamp, nullable: true },
    cancelledAt: { ...timestamp, nullable: true },
    cancellationReason: { type: 'string', length: 500, nullable: true },
    cancelRequestedAt: { ...timestamp, nullable: true },
    cancelRequestReason: { type: 'string', length: 500, nullable: true },
    cancelRequestNotify: { type: 'boolean', nullable: true },
    testClock: {
      kind: 'm:1',
      entity: () => TestClock,
      nullable: true,
      deleteRule: 'set null',
      updateRule: 'cascade',
    },
    clockCreatedAt: { ...timestamp, nullable: true },
    createdAt: { ...timestamp },
    updatedAt: { ...timestamp },
  },
});

/** One billing phase; the last (`evergreen`, iterations null) repeats for ever. */
export class SubscriptionPhase {
  id!: string;
  subscription!: Subscription;
  name!: string;
  /** 1-based position; phases run in this order. */
  position!: number;
  /** Periods in this phase; null for the evergreen phase. */
  iterations!: number | null;
  amountMinor!: number;
  billingIntervalDays!: number;
}

export const SubscriptionPhaseSchema = new EntitySchema<SubscriptionPhase>({
  class: SubscriptionPhase,
  tableName: 'subscription_phases',
  uniques: [{ properties: ['subscription', 'position'], name: 'subscription_phases_position_unique' }],
  checks: [
    { name: 'subscription_phases_amount_check', expression: 'amount_minor >= 0' },
    { name: 'subscription_phases_iterations_check', expression: 'iterations is null or iterations > 0' },
  ],
  properties: {
    id: { type: 'string', primary: true, length: 40 },
    subscription: { kind: 'm:1', entity: () => Subscription, deleteRule: 'cascade', updateRule: 'cascade' },
    name: { type: 'string', length: 255 },
    position: { type: 'integer' },
    iterations: { type: 'integer', nullable: true },
    amountMinor: { ...minorUnits },
    billingIntervalDays: { type: 'integer' },
  },
});

/**
 * `requires_action`: its attempt waits for the customer to authenticate (3-D Secure) at
 * `hostedUrl`; `processing`: the processor decides its attempt later. Both are still collected
 * (no other attempt starts while one waits).
 */
export const INVOICE_STATUSES = ['open', 'requires_action', 'processing', 'paid', 'void'] as const;
export type InvoiceStatus = (typeof INVOICE_STATUSES)[number];
/** An invoice whose attempt the processor has not decided: never charged again meanwhile (invariant 7). */
export const INVOICE_WAITING_STATUSES = ['requires_action', 'processing'] as const;
export type InvoiceWaitingStatus = (typeof INVOICE_WAITING_STATUSES)[number];

/**
 * One billing period's charge. Money invariant 1: charged at most once. Every provider attempt
 * carries an idempotency key derived from the invoice id (see src/domain/subscriptions.ts).
 */
export class Invoice {
  id!: string;
  merchant!: Merchant;
  subscription!: Subscription;
  /** 0-based period number of the subscription; one invoice per period. */
  periodIndex!: number;
  phase!: SubscriptionPhase;
  amountMinor!: number;
  currency!: string;
  periodStart!: Date;
  periodEnd!: Date;
  status!: InvoiceStatus;
  /** Provider attempts made (declines included). */
  attempts!: number;
  providerTransactionId!: string | null;
  /**
   * Set right before a provider call under the record's current idempotency key; cleared when
   * an answer proves that call did nothing (`unavailable`) or the key moves on (a declined
   * invoice attempt). While set, an `unavailable` answer is no proof that nothing was done.
   */
  providerCallSentAt!: Date | null;
  failureCode!: string | null;
  failureMessage!: string | null;
  /** The last decline's kind (src/rules/declines.ts); null until one, and once paid. */
  declineType!: DeclineType | null;
  /** Where the customer authenticates this invoice's charge; null unless it waits for that. */
  hostedUrl!: string | null;
  nextAttemptAt!: Date | null;
  paidAt!: Date | null;
  voidedAt!: Date | null;
  createdAt!: Date;
  updatedAt!: Date;
}

export const InvoiceSchema = new EntitySchema<Invoice>({
  class: Invoice,
  tableName: 'invoices',
  uniques: [{ properties: ['subscription', 'periodIndex'], name: 'invoices_subscription_period_unique' }],
  indexes: [
    { properties: ['merchant', 'createdAt'], name: 'invoices_merchant_created_idx' },
    // A subscription's invoices (GET /subscriptions/{id}/invoices), newest first.
    { properties: ['subscription', 'createdAt', 'id'], name: 'invoices_subscription_created_idx' },
    // Periods are billed in order: at most one open invoice per subscription.
    {
      name: 'invoices_one_open_per_subscription',
      expression: `create unique index "invoices_one_open_per_subscription" on "invoices" ("subscription_id") where status = 'open'`,
    },
    // Invoices the processor decides later, by when they became so: the invoices_stuck_processing gauge.
    {
      name: 'invoices_processing_updated_idx',
      expression: `create index "invoices_processing_updated_idx" on "invoices" ("updated_at") where status = 'processing'`,
    },
  ],
  checks: [{ name: 'invoices_amount_check', expression: 'amount_minor >= 0' }],
  properties: {
    id: { type: 'string', primary: true, length: 40 },
    merchant: { kind: 'm:1', entity: () => Merchant, deleteRule: 'cascade', updateRule: 'cascade' },
    subscription: { kind: 'm:1', entity: () => Subscription, deleteRule: 'cascade', updateRule: 'cascade' },
    periodIndex: { type: 'integer' },
    phase: { kind: 'm:1', entity: () => SubscriptionPhase, deleteRule: 'cascade', updateRule: 'cascade' },
    amountMinor: { ...minorUnits },
    currency: { type: 'string', length: 3 },
    periodStart: { ...timestamp },
    periodEnd: { ...timestamp },
    status: { enum: true, items: () => [...INVOICE_STATUSES] },
    attempts: { type: 'integer', default: 0 },
    providerTransactionId: { type: 'string', length: 64, nullable: true },
    providerCallSentAt: { ...timestamp, nullable: true },
    failureCode: { type: 'string', length: 64, nullable: true },
    failureMessage: { type: 'text', nullable: true },
    declineType: { enum: true, items: () => [...DECLINE_TYPES], nullable: true },
    hostedUrl: { type: 'text', nullable: true },
    nextAttemptAt: { ...timestamp, nullable: true },
    paidAt: { ...timestamp, nullable: true },
    voidedAt: { ...timestamp, nullable: true },
    createdAt: { ...timestamp },
    updatedAt: { ...timestamp },
  },
});

/**
 * How far the orphan sweeper has examined one kind of record (payments, refunds...): the
 * (createdAt, id) of the last row it looked at. Rows at or before it are never examined again.
 */
export class SweepWatermark {
  /** The kind swept, and the merchant when a sweep is scoped to one (`refunds`, `refunds:mer_...`). */
  scope!: string;
  lastCreatedAt!: Date;
  lastId!: string;
  updatedAt!: Date;
}

export const SweepWatermarkSchema = new EntitySchema<SweepWatermark>({
  class: SweepWatermark,
  tableName: 'sweep_watermarks',
  properties: {
    scope: { type: 'string', primary: true, length: 100 },
    lastCreatedAt: { ...timestamp },
    lastId: { type: 'string', length: 40 },
    updatedAt: { ...timestamp },
  },
});

export const PROCESSORS = ['sandbox', 'stripe'] as const;
export type Processor = (typeof PROCESSORS)[number];

/**
 * A merchant's provider for one environment (at most one). Secrets are write-only: stored only
 * as AES-256-GCM ciphertexts (src/providers/secrets.ts), never read back to an operator.
 */
export class MerchantProvider {
  [PrimaryKeyProp]?: ['merchant', 'environment'];
  merchant!: Merchant;
  environment!: KeyEnvironment;
  processor!: Processor;
  secretKeyCiphertext!: string | null;
  webhookSecretCiphertext!: string | null;
  createdAt!: Date;
  updatedAt!: Date;
}

export const MerchantProviderSchema = new EntitySchema<MerchantProvider>({
  class: MerchantProvider,
  tableName: 'merchant_providers',
  properties: {
    merchant: { kind: 'm:1', entity: () => Merchant, primary: true, deleteRule: 'cascade', updateRule: 'cascade' },
    environment: { enum: true, items: () => [...KEY_ENVIRONMENTS], primary: true },
    processor: { enum: true, items: () => [...PROCESSORS] },
    secretKeyCiphertext: { type: 'text', nullable: true },
    webhookSecretCiphertext: { type: 'text', nullable: true },
    createdAt: { ...timestamp },
    updatedAt: { ...timestamp },
  },
});

/**
 * The secret that signs a merchant's callbackUrl events of one environment (decision 0067),
 * created on first use. Written with SQL only (src/domain/signingSecrets.ts). Each secret is
 * stored sealed: `v1:...` (AES-256-GCM under PROVIDER_SECRETS_KEY, src/providers/secrets.ts) or,
 * only where no key is configured (never in production), `plain:<secret>` until a process with
 * the key seals it. After a rotation the previous secret still signs until `previousUntil`.
 */
export class MerchantSigningSecret {
  [PrimaryKeyProp]?: ['merchant', 'environment'];
  merchant!: Merchant;
  environment!: KeyEnvironment;
  secret!: string;
  previousSecret!: string | null;
  previousUntil!: Date | null;
  createdAt!: Date;
  updatedAt!: Date;
}

export const MerchantSigningSecretSchema = new EntitySchema<MerchantSigningSecret>({
  class: MerchantSigningSecret,
  tableName: 'merchant_signing_secrets',
  properties: {
    merchant: { kind: 'm:1', entity: () => Merchant, primary: true, deleteRule: 'cascade', updateRule: 'cascade' },
    environment: { enum: true, items: () => [...KEY_ENVIRONMENTS], primary: true },
    secret: { type: 'text' },
    previousSecret: { type: 'text', nullable: true },
    previousUntil: { ...timestamp, nullable: true },
    createdAt: { ...timestamp },
    updatedAt: { ...timestamp },
  },
});

/**
 * A token bucket of the rate limits (src/api/rateLimiter.ts), shared by every API process:
 * `key:<apiKeyId>` or `addr:<client address>`. Written with SQL only (one atomic upsert per lease).
 */
export class RateLimitBucket {
  key!: string;
  /** Tokens left at `refreshedAt`. */
  tokens!: number;
  /** Tokens the last lease took. */
  granted!: number;
  refreshedAt!: Date;
  /** When the bucket is full again: from then on the row is as good as absent. */
  fullAt!: Date;
}

const preciseTimestamp = { type: 'Date', columnType: 'timestamptz(6)' } as const;

export const RateLimitBucketSchema = new EntitySchema<RateLimitBucket>({
  class: RateLimitBucket,
  tableName: 'rate_limit_buckets',
  indexes: [{ properties: ['fullAt'], name: 'rate_limit_buckets_full_at_idx' }],
  properties: {
    key: { type: 'string', primary: true, length: 200 },
    tokens: { type: 'double', columnType: 'double precision' },
    granted: { type: 'integer' },
    refreshedAt: { ...preciseTimestamp },
    fullAt: { ...preciseTimestamp },
  },
});

export const WEBHOOK_ENDPOINT_STATUSES = ['enabled', 'disabled'] as const;
export type WebhookEndpointStatus = (typeof WEBHOOK_ENDPOINT_STATUSES)[number];

/**
 * A merchant's webhook endpoint in one environment (at most 16; decision 0068). Its signing
 * secret is stored only encrypted (src/providers/secrets.ts, AAD bound to the endpoint); after a
 * rotation the previous one is kept until `previousSecretExpiresAt`.
 */
export class WebhookEndpoint {
  id!: string;
  merchant!: Merchant;
  environment!: KeyEnvironment;
  url!: string;
  enabledEvents!: string[];
  description!: string | null;
  status!: WebhookEndpointStatus;
  secretCiphertext!: string;
  previousSecretCiphertext!: string | null;
  previousSecretExpiresAt!: Date | null;
  /**
   * Since when every delivery to it failed (null: its last one succeeded, or none yet): 3 days
   * of it disable the endpoint (decision 0069).
   */
  failingSince!: Date | null;
  createdAt!: Date;
  updatedAt!: Date;
}

export const WebhookEndpointSchema = new EntitySchema<WebhookEndpoint>({
  class: WebhookEndpoint,
  tableName: 'webhook_endpoints',
  indexes: [
    { properties: ['merchant', 'environment', 'createdAt', 'id'], name: 'webhook_endpoints_merchant_env_created_idx' },
  ],
  properties: {
    id: { type: 'string', primary: true, length: 40 },
    merchant: { kind: 'm:1', entity: () => Merchant, deleteRule: 'cascade', updateRule: 'cascade' },
    environment: { enum: true, items: () => [...KEY_ENVIRONMENTS] },
    url: { type: 'text' },
    enabledEvents: { type: 'json' },
    description: { type: 'text', nullable: true },
    status: { enum: true, items: () => [...WEBHOOK_ENDPOINT_STATUSES] },
    secretCiphertext: { type: 'text' },
    previousSecretCiphertext: { type: 'text', nullable: true },
    previousSecretExpiresAt: { ...timestamp, nullable: true },
    failingSince: { ...timestamp, nullable: true },
    createdAt: { ...timestamp },
    updatedAt: { ...timestamp },
  },
});

export const DELIVERY_JOB_STATUSES = ['pending', 'succeeded', 'failed', 'cancelled'] as const;
export type DeliveryJobStatus = (typeof DELIVERY_JOB_STATUSES)[number];

/**
 * One destination's share of one event (decision 0069): the record's callbackUrl (`endpoint`
 * null, `url` set) or a webhook endpoint (its url read at each attempt). Written by the
 * `fan_out_deliveries` trigger with the event, or by a resend; delivered by the delivery workers
 * until it succeeds, gives up (`failed`, 3 days after it was written) or its endpoint is disabled
 * (`cancelled`). Each attempt is an event_deliveries row.
 */
export class DeliveryJob {
  id!: string;
  merchant!: Merchant;
  environment!: KeyEnvironment;
  event!: MerchantEvent;
  endpoint!: WebhookEndpoint | null;
  url!: string | null;
  status!: DeliveryJobStatus;
  attempts!: number;
  nextAttemptAt!: Date;
  /** Held by one delivery step until then (lapses when its worker is gone). */
  claimedUntil!: Date | null;
  /** A resend's attempt row, shown `pending` in its 202 answer: the job's next attempt fills it. */
  pendingDeliveryId!: string | null;
  lastError!: string | null;
  createdAt!: Date;
  updatedAt!: Date;
}

export const DeliveryJobSchema = new EntitySchema<DeliveryJob>({
  class: DeliveryJob,
  tableName: 'delivery_jobs',
  indexes: [
    // What is due, per merchant (the delivery step and the kicker): pending rows only.
    {
      name: 'delivery_jobs_due_idx',
      expression: `create index "delivery_jobs_due_idx" on "delivery_jobs" ("merchant_id", "next_attempt_at") where status = 'pending'`,
    },
    // What is due, of every merchant (the kicker, every EVENT_DELIVERY_POLL_MS).
    {
      name: 'delivery_jobs_next_attempt_idx',
      expression: `create index "delivery_jobs_next_attempt_idx" on "delivery_jobs" ("next_attempt_at") where status = 'pending'`,
    },
    { properties: ['event'], name: 'delivery_jobs_event_idx' },
    { properties: ['endpoint'], name: 'delivery_jobs_endpoint_idx' },
  ],
  properties: {
    id: { type: 'string', primary: true, length: 40 },
    merchant: { kind: 'm:1', entity: () => Merchant, deleteRule: 'cascade', updateRule: 'cascade' },
    environment: { enum: true, items: () => [...KEY_ENVIRONMENTS] },
    event: { kind: 'm:1', entity: () => MerchantEvent, deleteRule: 'cascade', updateRule: 'cascade' },
    endpoint: {
      kind: 'm:1',
      entity: () => WebhookEndpoint,
      nullable: true,
      deleteRule: 'cascade',
      updateRule: 'cascade',
    },
    url: { type: 'text', nullable: true },
    status: { enum: true, items: () => [...DELIVERY_JOB_STATUSES] },
    attempts: { type: 'integer', default: 0 },
    nextAttemptAt: { ...timestamp },
    claimedUntil: { ...timestamp, nullable: true },
    pendingDeliveryId: { type: 'string', length: 40, nullable: true },
    lastError: { type: 'text', nullable: true },
    createdAt: { ...timestamp },
    updatedAt: { ...timestamp },
  },
});

/**
 * Which delivery step holds a merchant's deliveries (decision 0069): one at a time per merchant,
 * so its EVENT_DELIVERY_CONCURRENCY_PER_MERCHANT holds across worker processes. Renewed while
 * it runs; lapses when its worker is gone.
 */
export class DeliveryLease {
  merchant!: Merchant;
  holder!: string;
  until!: Date;
}

export const DeliveryLeaseSchema = new EntitySchema<DeliveryLease>({
  class: DeliveryLease,
  tableName: 'delivery_leases',
  properties: {
    merchant: { kind: 'm:1', entity: () => Merchant, primary: true, deleteRule: 'cascade', updateRule: 'cascade' },
    holder: { type: 'string', length: 64 },
    until: { ...timestamp },
  },
});

/**
 * A host of one merchant's that keeps failing (decision 0069): after a run of failures its
 * deliveries wait until `pausedUntil` instead of taking that merchant's delivery slots.
 */
export class DeliveryHostPause {
  merchant!: Merchant;
  host!: string;
  /** Failures in a row (reset by a success). */
  failures!: number;
  pausedUntil!: Date | null;
}

export const DeliveryHostPauseSchema = new EntitySchema<DeliveryHostPause>({
  class: DeliveryHostPause,
  tableName: 'delivery_host_pauses',
  properties: {
    merchant: { kind: 'm:1', entity: () => Merchant, primary: true, deleteRule: 'cascade', updateRule: 'cascade' },
    host: { type: 'string', length: 255, primary: true },
    failures: { type: 'integer' },
    pausedUntil: { ...timestamp, nullable: true },
  },
});

/**
 * A merchant's customer in one environment (PRODUCT.md, "Customers and payment methods"; decision
 * 0087). `externalId` is unique per merchant and environment. `providerCustomers` holds the
 * processor's own customer per processor (Stripe's `cus_...`), created at the first attach there.
 * `testClockId` is the test clock the customer lives on (issue 45 item 2; no foreign key yet).
 */
export class CustomerRecord {
  id!: string;
  merchant!: Merchant;
  environment!: KeyEnvironment;
  externalId!: string;
  email!: string | null;
  name!: string | null;
  metadata!: Record<string, string> | null;
  defaultPaymentMethodId!: string | null;
  providerCustomers!: Record<string, string>;
  testClockId!: string | null;
  /** The clock's time at creation (its `createdAt` in responses); null off a clock. */
  clockCreatedAt!: Date | null;
  createdAt!: Date;
  updatedAt!: Date;
}

export const CustomerRecordSchema = new EntitySchema<CustomerRecord>({
  class: CustomerRecord,
  tableName: 'customers',
  uniques: [
    { properties: ['merchant', 'environment', 'externalId'], name: 'customers_merchant_env_external_id_unique' },
  ],
  indexes: [
    { properties: ['merchant', 'environment', 'createdAt', 'id'], name: 'customers_merchant_env_created_idx' },
    { properties: ['merchant', 'environment', 'email'], name: 'customers_merchant_env_email_idx' },
  ],
  properties: {
    id: { type: 'string', primary: true, length: 40 },
    merchant: { kind: 'm:1', entity: () => Merchant, deleteRule: 'cascade', updateRule: 'cascade' },
    environment: { enum: true, items: () => [...KEY_ENVIRONMENTS] },
    externalId: { type: 'string', length: 255 },
    email: { type: 'string', length: 320, nullable: true },
    name: { type: 'string', length: 255, nullable: true },
    metadata: { type: 'json', nullable: true },
    defaultPaymentMethodId: { type: 'string', length: 40, nullable: true },
    providerCustomers: { type: 'json', defaultRaw: `'{}'` },
    testClockId: { type: 'string', length: 40, nullable: true },
    clockCreatedAt: { ...timestamp, nullable: true },
    createdAt: { ...timestamp },
    updatedAt: { ...timestamp },
  },
});

/**
 * A card the processor verified and keeps for a customer (decision 0087). `providerReference` is
 * what a charge sends as its card token (the sandbox's saved token; Stripe's `cus_...:pm_...`):
 * a processor reference, never card data. A DELETE sets `deletedAt` (the row stays for the
 * payments that used it). `sourcePaymentId`: the payment whose card was saved (hosted flow with
 * `saveCardEnabled`), at most one method per payment.
 */
export class PaymentMethod {
  id!: string;
  merchant!: Merchant;
  environment!: KeyEnvironment;
  customer!: CustomerRecord;
  processor!: string;
  providerReference!: string;
  cardBrand!: string | null;
  cardLast4!: string | null;
  cardExpMonth!: number | null;
  cardExpYear!: number | null;
  sourcePaymentId!: string | null;
  deletedAt!: Date | null;
  /** A subscription's charge on it was hard-declined: never charged by a subscription again (decision 0087). */
  hardDeclinedAt!: Date | null;
  createdAt!: Date;
  updatedAt!: Date;
}

export const PaymentMethodSchema = new EntitySchema<PaymentMethod>({
  class: PaymentMethod,
  tableName: 'payment_methods',
  uniques: [{ properties: ['sourcePaymentId'], name: 'payment_methods_source_payment_unique' }],
  indexes: [{ properties: ['customer', 'createdAt', 'id'], name: 'payment_methods_customer_created_idx' }],
  properties: {
    id: { type: 'string', primary: true, length: 40 },
    merchant: { kind: 'm:1', entity: () => Merchant, deleteRule: 'cascade', updateRule: 'cascade' },
    environment: { enum: true, items: () => [...KEY_ENVIRONMENTS] },
    customer: { kind: 'm:1', entity: () => CustomerRecord, deleteRule: 'cascade', updateRule: 'cascade' },
    processor: { type: 'string', length: 32 },
    providerReference: { type: 'string', length: 255 },
    cardBrand: { type: 'string', length: 32, nullable: true },
    cardLast4: { type: 'string', length: 4, nullable: true },
    cardExpMonth: { type: 'integer', nullable: true },
    cardExpYear: { type: 'integer', nullable: true },
    sourcePaymentId: { type: 'string', length: 40, nullable: true },
    deletedAt: { ...timestamp, nullable: true },
    hardDeclinedAt: { ...timestamp, nullable: true },
    createdAt: { ...timestamp },
    updatedAt: { ...timestamp },
  },
});

export const TEST_CLOCK_STATUSES = ['ready', 'advancing'] as const;
export type TestClockStatus = (typeof TEST_CLOCK_STATUSES)[number];

/**
 * A test clock (PRODUCT.md "Test clocks", decision 0090): test environment only. `frozenTime` is
 * the clock's time (it moves in steps while advancing, to `advanceTo`); `createdAt` is real time.
 */
export class TestClock {
  id!: string;
  merchant!: Merchant;
  environment!: KeyEnvironment;
  name!: string | null;
  frozenTime!: Date;
  status!: TestClockStatus;
  /** The target of the advance under way; null when ready. */
  advanceTo!: Date | null;
  createdAt!: Date;
  updatedAt!: Date;
}

export const TestClockSchema = new EntitySchema<TestClock>({
  class: TestClock,
  tableName: 'test_clocks',
  indexes: [
    // The list (GET /test-clocks), newest first by keyset on (created_at, id).
    { properties: ['merchant', 'environment', 'createdAt', 'id'], name: 'test_clocks_merchant_env_created_idx' },
  ],
  properties: {
    id: { type: 'string', primary: true, length: 40 },
    merchant: { kind: 'm:1', entity: () => Merchant, deleteRule: 'cascade', updateRule: 'cascade' },
    environment: { enum: true, items: () => [...KEY_ENVIRONMENTS] },
    name: { type: 'string', length: 255, nullable: true },
    frozenTime: { ...timestamp },
    status: { enum: true, items: () => [...TEST_CLOCK_STATUSES] },
    advanceTo: { ...timestamp, nullable: true },
    createdAt: { ...timestamp },
    updatedAt: { ...timestamp },
  },
});

export const entities = [
  MerchantSchema,
  ApiKeySchema,
  PaymentSchema,
  MerchantEventSchema,
  EventDeliverySchema,
  RefundSchema,
  DisputeSchema,
  EmailSchema,
  SubscriptionSchema,
  SubscriptionPhaseSchema,
  InvoiceSchema,
  SweepWatermarkSchema,
  MerchantProviderSchema,
  RateLimitBucketSchema,
  WebhookEndpointSchema,
  MerchantSigningSecretSchema,
  DeliveryJobSchema,
  DeliveryLeaseSchema,
  DeliveryHostPauseSchema,
  CustomerRecordSchema,
  PaymentMethodSchema,
  TestClockSchema,
];
