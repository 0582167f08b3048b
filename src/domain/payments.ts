import type { EntityManager } from '@mikro-orm/postgresql';
import { LockMode } from '@mikro-orm/core';
import { Payment, type PaymentStatus } from '../db/entities';
import { AppError } from '../errors';
import { newId } from '../ids';
import { parameterisedRows, preparedRows, type PreparedStatement } from '../db/orm';
import { toMajor } from '../rules/money';
import { outboxEventCte, outboxEventFields, recordEvent, type EventInput, type MerchantEventType } from './events';
import type { ProviderPayment } from '../providers/types';
import { ProviderMismatchError, differences } from '../providers/errors';
import type { RecordScope } from './scope';
import { lockQuota, quotaExceeded } from './quotas';
import { workerMetrics, type PaymentOutcome } from '../metrics/worker';
import { hintPayload, PAYMENT_OUTCOME_CHANNEL } from '../db/hintChannels';
import type { SubmitOutcome } from '../../workflows/paymentApi';
import { markSentCte } from '../rules/providerCallMark';
import { addPaymentMethod } from './customers';

/** Payment rules: the response shape, the refundable balance, and provider outcomes applied. */

export const TERMINAL_PAYMENT_STATUSES: readonly PaymentStatus[] = [
  'succeeded',
  'failed',
  'refunded',
  'voided',
  'partially_refunded',
];
const REFUNDABLE: readonly PaymentStatus[] = ['succeeded', 'partially_refunded'];

/**
 * In flight: no outcome yet. `created` awaits its attempt or the customer's hosted page,
 * `requires_action` the customer's authentication (both voided at expiry), `processing` the
 * processor's decision (however long it takes). Only these follow the provider's answers.
 */
export const OPEN_PAYMENT_STATUSES: readonly PaymentStatus[] = ['created', 'requires_action', 'processing'];

/** Awaiting an attempt or the customer: voided at the payment's expiry (`processing` never is). */
export const AWAITING_PAYMENT_STATUSES: readonly PaymentStatus[] = ['created', 'requires_action'];

/** `nextAction` of the API's payment: where the customer authenticates while `requires_action`, else null. */
export function nextActionOf(p: Pick<Payment, 'status' | 'actionUrl'>): { type: 'redirect'; url: string } | null {
  return p.status === 'requires_action' && p.actionUrl ? { type: 'redirect', url: p.actionUrl } : null;
}

/**
 * What may still be refunded: max(0, amount - refunded - in flight - disputed), where disputed is
 * the sum of open, lost and accepted disputes (PRODUCT.md, "Processor lifecycle"; invariant 6).
 */
export function refundableMinor(
  p: Pick<
    Payment,
    'status' | 'amountMinor' | 'amountRefundedMinor' | 'amountPendingRefundMinor' | 'amountDisputedMinor'
  >,
): number {
  if (!REFUNDABLE.includes(p.status)) return 0;
  return Math.max(0, p.amountMinor - p.amountRefundedMinor - p.amountPendingRefundMinor - p.amountDisputedMinor);
}

/** What the API shows of a payment: an entity, or a row read on the fast path. */
export type PaymentView = Omit<Payment, 'merchant' | 'cardToken' | 'savedCardToken' | 'providerCallSentAt'>;

export function presentPayment(p: PaymentView) {
  return {
    id: p.id,
    externalId: p.externalId,
    amount: toMajor(p.amountMinor, p.currency),
    amountRefunded: toMajor(p.amountRefundedMinor, p.currency),
    amountRefundable: toMajor(refundableMinor(p), p.currency),
    amountDisputed: toMajor(p.amountDisputedMinor, p.currency),
    disputed: p.openDisputes > 0,
    currency: p.currency,
    status: p.status,
    processor: p.processor,
    providerTransactionId: p.providerTransactionId,
    redirectUrl: p.redirectUrl,
    nextAction: nextActionOf(p),
    createdAt: p.createdAt.toISOString(),
    updatedAt: p.updatedAt.toISOString(),
    expiresAt: p.expiresAt.toISOString(),
    environment: p.environment,
    customer: p.customer,
    customerId: p.customerId,
    paymentMethodId: p.paymentMethodId,
    description: p.description,
    metadata: p.metadata,
    billing: p.billing,
    callbackUrl: p.callbackUrl,
    returnUrl: p.returnUrl,
    saveCardEnabled: p.saveCardEnabled,
    failureCode: p.failureCode,
    failureMessage: p.failureMessage,
  };
}

export type PaymentResponse = ReturnType<typeof presentPayment>;

/**
 * What a payment's outcome hint says (src/db/outcomeHints.ts): only outcomes the row already
 * shows (never an ambiguous one), and when the attempt's statement sent it, the payment as it
 * committed (the API answers with it).
 */
export type PaymentOutcomeHint = Extract<SubmitOutcome, { kind: 'settled' | 'created' | 'rejected' }> & {
  payment?: PaymentResponse;
};

/** A payment hint as sent on PAYMENT_OUTCOME_CHANNEL. */
export interface PaymentHintMessage {
  paymentId: string;
  outcome: PaymentOutcomeHint;
}

/**
 * The payload of the hint a payment attempt's statement sends itself (pg_notify, delivered at its
 * commit): with the payment as that statement wrote it, unless that would be too long.
 */
export function paymentOutcomeHint(paymentId: string, kind: 'settled' | 'created', payment: PaymentResponse): string {
  return hintPayload(
    { paymentId, outcome: { kind, payment } } satisfies PaymentHintMessage,
    { paymentId, outcome: { kind } } satisfies PaymentHintMessage,
  );
}

export const PAYMENT_VIEW_COLUMNS = `id, external_id, environment, processor, amount_minor, currency, status, amount_refunded_minor,
  amount_pending_refund_minor, amount_disputed_minor, open_disputes, provider_transaction_id, redirect_url, action_url,
  save_card_enabled, customer, customer_id, payment_method_id, billing, metadata,
  description, callback_url, return_url, failure_code, failure_message, expires_at, created_at, updated_at`;

const PAYMENT_VIEW_BY_ID: PreparedStatement = {
  name: 'payment_view_by_id',
  text: `select ${PAYMENT_VIEW_COLUMNS} from payments where id = $1 and merchant_id = $2 and environment = $3`,
};

/**
 * The read path of GET /payments/{id}: one indexed SELECT scoped to the merchant and environment,
 * prepared once per connection and mapped straight to the view, without the ORM (it is the
 * hottest read; see preparedRows).
 */
export async function findPaymentView(em: EntityManager, id: string, scope: RecordScope): Promise<PaymentView | null> {
  const [row] = await preparedRows(em, PAYMENT_VIEW_BY_ID, [id, scope.merchantId, scope.environment]);
  return row ? paymentViewOfRow(row) : null;
}

/** A new payment as POST /payments creates it (`created`, nothing refunded, no provider call yet). */
export interface NewPayment {
  id: string;
  merchantId: string;
  externalId: string;
  environment: Payment['environment'];
  processor: string;
  amountMinor: number;
  currency: string;
  cardToken: string | null;
  saveCardEnabled: boolean;
  customer: Payment['customer'];
  customerId: string | null;
  paymentMethodId: string | null;
  billing: Payment['billing'];
  metadata: Payment['metadata'];
  description: string | null;
  callbackUrl: string | null;
  returnUrl: string | null;
  expiresAt: Date;
  createdAt: Date;
}

const INSERT_PAYMENT: PreparedStatement = {
  name: 'payment_insert',
  text: `insert into payments (id, merchant_id, external_id, environment, processor, amount_minor, currency, status,
    card_token, save_card_enabled, customer, billing, metadata, description, callback_url, return_url, expires_at,
    created_at, updated_at, customer_id, payment_method_id)
  values ($1, $2, $3, $4, $5, $6, $7, 'created', $8, $9, $10::jsonb, $11::jsonb, $12::jsonb, $13, $14, $15, $16, $17, $17,
    $18, $19)
  on conflict (merchant_id, external_id) do nothing
  returning ${PAYMENT_VIEW_COLUMNS}`,
};

/**
 * The INSERT of POST /payments, one prepared statement without the ORM (issue 12: the ORM's
 * entity, reference and insert took about a fifth of the API's CPU per token POST). The columns
 * not named take their defaults (nothing refunded, no provider transaction, no failure). Answers
 * the payment as written, or null, having written nothing, when the merchant's externalId already
 * names a payment (the caller reads that one).
 */
export async function insertPayment(em: EntityManager, p: NewPayment): Promise<PaymentView | null> {
  const json = (v: unknown) => (v === null ? null : JSON.stringify(v));
  const [row] = await preparedRows(em, INSERT_PAYMENT, [
    p.id,
    p.merchantId,
    p.externalId,
    p.environment,
    p.processor,
    p.amountMinor,
    p.currency,
    p.cardToken,
    p.saveCardEnabled,
    json(p.customer),
    json(p.billing),
    json(p.metadata),
    p.description,
    p.callbackUrl,
    p.returnUrl,
    p.expiresAt,
    p.createdAt,
    p.customerId,
    p.paymentMethodId,
  ]);
  return row ? paymentViewOfRow(row) : null;
}

/** What a hosted payment waiting on its customer is: it holds a workflow until paid, declined or expired. */
const OPEN_HOSTED_PAYMENT = `status in ('created', 'requires_action') and card_token is null`;

/**
 * insertPayment for a hosted payment under the `open_hosted_payments` quota (decision 0079): the
 * merchant's open hosted payments are counted and the new one inserted in one transaction under
 * the quota's advisory lock, so concurrent creates in any API process never pass the limit
 * together. A payment this externalId already names is left to the caller (null, nothing
 * written): a repeat answers the original, never quota_exceeded.
 */
async function insertHostedPaymentWithinQuota(
  em: EntityManager,
  scope: RecordScope,
  p: NewPayment,
  limit: number,
): Promise<PaymentView | null> {
  return em.fork().transactional(async (tx) => {
    await lockQuota(tx, 'open_hosted_payments', scope);
    const [named] = await tx.execute<{ id: string }[]>(
      `select id from payments where merchant_id = ? and external_id = ?`,
      [scope.merchantId, p.externalId],
    );
    if (named) return null;
    const [counted] = await tx.execute<{ n: string }[]>(
      `select count(*) as n from payments where merchant_id = ? and environment = ? and ${OPEN_HOSTED_PAYMENT}`,
      [scope.merchantId, scope.environment],
    );
    const current = Number(counted?.n ?? 0);
    if (current >= limit) throw quotaExceeded('open_hosted_payments', limit, current);
    const json = (v: unknown) => (v === null ? null : JSON.stringify(v));
    const rows = await tx.execute<Record<string, unknown>[]>(
      `insert into payments (id, merchant_id, external_id, environment, processor, amount_minor, currency, status,
         card_token, save_card_enabled, customer, billing, metadata, description, callback_url, return_url, expires_at,
         created_at, updated_at, customer_id, payment_method_id)
       values (?, ?, ?, ?, ?, ?, ?, 'created', ?, ?, ?::jsonb, ?::jsonb, ?::jsonb, ?, ?, ?, ?, ?, ?, ?, ?)
       on conflict (merchant_id, external_id) do nothing
       returning ${PAYMENT_VIEW_COLUMNS}`,
      [
        p.id,
        p.merchantId,
        p.externalId,
        p.environment,
        p.processor,
        p.amountMinor,
        p.currency,
        p.cardToken,
        p.saveCardEnabled,
        json(p.customer),
        json(p.billing),
        json(p.metadata),
        p.description,
        p.callbackUrl,
        p.returnUrl,
        p.expiresAt,
        p.createdAt,
        p.createdAt,
        p.customerId,
        p.paymentMethodId,
      ],
    );
    return rows[0] ? paymentViewOfRow(rows[0]) : null;
  });
}

/** What POST /payments asks for (the parsed body). */
export interface PaymentRequest {
  externalId: string;
  amountMinor: number;
  currency: string;
  cardToken?: string;
  saveCardEnabled?: boolean;
  customer: Payment['customer'];
  /** The merchant's customer (`customerId`) and the saved method charged, resolved by the API. */
  customerId?: string;
  paymentMethodId?: string;
  /** The processor that keeps `paymentMethodId`'s card: the payment must go to it. */
  paymentMethodProcessor?: string;
  billing?: Payment['billing'];
  metadata?: Payment['metadata'];
  description?: string;
  callbackUrl?: string;
  returnUrl?: string;
}

/** A payment as the create path holds it: as written or as found, with its merchant for the workflow's start. */
export type CreatedPayment = PaymentView & { merchant: { id: string } };

function conflict(
  existing: Pick<Payment, 'amountMinor' | 'currency' | 'id'>,
  body: Pick<PaymentRequest, 'amountMinor' | 'currency'>,
): AppError | undefined {
  if (existing.amountMinor === body.amountMinor && existing.currency === body.currency) return undefined;
  return new AppError(
    'external_id_conflict',
    'A payment with this externalId exists with another amount or currency.',
    {
      paymentId: existing.id,
    },
  );
}

/**
 * externalIds stay unique per merchant across environments (one unique key): the other
 * environment's record is refused without being named or described.
 */
const otherEnvironmentConflict = () =>
  new AppError('external_id_conflict', 'This externalId is used by a record of the other environment.');

/**
 * Inserts the payment, or finds the one this externalId already names (exactly one under
 * concurrency); the same externalId with another amount or currency (or of the other
 * environment) is `external_id_conflict`.
 */
export async function createOrFindPayment(
  em: EntityManager,
  scope: RecordScope,
  body: PaymentRequest,
  {
    processor,
    expirySeconds,
    openHostedLimit = 0,
  }: { processor: string; expirySeconds: number; openHostedLimit?: number },
): Promise<CreatedPayment> {
  const now = new Date();
  const merchant = { id: scope.merchantId };
  const row: NewPayment = {
    id: newId('payment'),
    merchantId: scope.merchantId,
    externalId: body.externalId,
    environment: scope.environment,
    processor,
    amountMinor: body.amountMinor,
    currency: body.currency,
    cardToken: body.cardToken ?? null,
    saveCardEnabled: body.saveCardEnabled ?? false,
    customer: body.customer,
    customerId: body.customerId ?? null,
    paymentMethodId: body.paymentMethodId ?? null,
    billing: body.billing ?? null,
    metadata: body.metadata ?? null,
    description: body.description ?? null,
    callbackUrl: body.callbackUrl ?? null,
    returnUrl: body.returnUrl ?? null,
    expiresAt: new Date(now.getTime() + expirySeconds * 1000),
    createdAt: now,
  };
  const inserted =
    body.cardToken === undefined && openHostedLimit > 0
      ? await insertHostedPaymentWithinQuota(em, scope, row, openHostedLimit)
      : await insertPayment(em, row);
  if (inserted) return { ...inserted, merchant };
  // The externalId names a payment already: that one (the unique key spans both environments).
  // A fork of its own: the ORM's identity map is per request (the insert above needs none).
  const existing = await em.fork().findOne(Payment, { merchant: scope.merchantId, externalId: body.externalId });
  if (!existing) throw new AppError('concurrent_request', 'A request with this externalId is being processed; retry.');
  if (existing.environment !== scope.environment) throw otherEnvironmentConflict();
  const mismatch = conflict(existing, body);
  if (mismatch) throw mismatch;
  return existing;
}

/** The processor of the payment this externalId names in the caller's environment (null: none). */
export async function existingPaymentProcessor(
  em: EntityManager,
  scope: RecordScope,
  externalId: string,
): Promise<string | null> {
  const existing = await em
    .fork()
    .findOne(
      Payment,
      { merchant: scope.merchantId, externalId, environment: scope.environment },
      { fields: ['processor'] },
    );
  return existing?.processor ?? null;
}

/** A row of PAYMENT_VIEW_COLUMNS, selected without the ORM, as a view. */
export function paymentViewOfRow(row: Record<string, unknown>): PaymentView {
  return {
    id: row.id as string,
    externalId: row.external_id as string,
    environment: row.environment as Payment['environment'],
    processor: row.processor as string,
    amountMinor: Number(row.amount_minor),
    currency: row.currency as string,
    status: row.status as PaymentStatus,
    amountRefundedMinor: Number(row.amount_refunded_minor),
    amountPendingRefundMinor: Number(row.amount_pending_refund_minor),
    amountDisputedMinor: Number(row.amount_disputed_minor),
    openDisputes: Number(row.open_disputes),
    providerTransactionId: row.provider_transaction_id as string | null,
    redirectUrl: row.redirect_url as string | null,
    actionUrl: (row.action_url ?? null) as string | null,
    saveCardEnabled: row.save_card_enabled as boolean,
    customer: row.customer as Payment['customer'],
    customerId: (row.customer_id ?? null) as string | null,
    paymentMethodId: (row.payment_method_id ?? null) as string | null,
    billing: row.billing as Payment['billing'],
    metadata: row.metadata as Payment['metadata'],
    description: row.description as string | null,
    callbackUrl: row.callback_url as string | null,
    returnUrl: row.return_url as string | null,
    failureCode: row.failure_code as string | null,
    failureMessage: row.failure_message as string | null,
    expiresAt: new Date(row.expires_at as Date),
    createdAt: new Date(row.created_at as Date),
    updatedAt: new Date(row.updated_at as Date),
  };
}

/** A payment's event: one per type, with the payment's view as data. */
function paymentEvent(type: MerchantEventType, payment: PaymentView): EventInput {
  return {
    type,
    resourceId: payment.id,
    dedupeKey: `${payment.id}:${type}`,
    callbackUrl: payment.callbackUrl,
    environment: payment.environment,
    data: presentPayment(payment),
  };
}

/** Our status for what the provider holds. */
function statusOfProviderPayment(pp: ProviderPayment): PaymentStatus {
  switch (pp.status) {
    case 'succeeded':
      return 'succeeded';
    case 'failed':
      return 'failed';
    case 'canceled':
      return 'voided';
    case 'requires_action':
      return 'requires_action';
    case 'processing':
      return 'processing';
    default:
      return 'created';
  }
}

/**
 * Where a payment in flight goes on the provider's answer (PRODUCT.md, "Processor lifecycle"):
 * forward only. A hosted page still `pending` leaves it as it is, and so does an answer that
 * would move it back (a `processing` payment never asks for authentication again).
 */
export function nextPaymentStatus(current: PaymentStatus, pp: ProviderPayment): PaymentStatus {
  if (!OPEN_PAYMENT_STATUSES.includes(current)) return current;
  const next = statusOfProviderPayment(pp);
  if (next === 'created') return current;
  if (current === 'processing' && next === 'requires_action') return current;
  return next;
}

/**
 * What a payment's status means to its workflow: waiting for the customer on a hosted page
 * (`created`) or to authenticate (`action`), for the processor (`processing`), or settled.
 */
export type PaymentAnswer = 'created' | 'action' | 'processing' | 'settled';

export function answerOfStatus(status: PaymentStatus): PaymentAnswer {
  if (status === 'created') return 'created';
  if (status === 'requires_action') return 'action';
  if (status === 'processing') return 'processing';
  return 'settled';
}

/** The API's hint of an answer: `created` while the customer acts, else `settled` (the API reads the row). */
export const hintKindOf = (answer: PaymentAnswer): 'created' | 'settled' =>
  answer === 'created' || answer === 'action' ? 'created' : 'settled';

/** A failed provider payment's code and message, with ours when the provider gave none. */
function failureOf(pp: ProviderPayment): { failureCode: string; failureMessage: string } {
  return {
    failureCode: pp.failureCode ?? 'payment_failed',
    failureMessage: pp.failureMessage ?? 'The payment failed.',
  };
}

/** The outcome payments_total counts when a payment moves to `status` (none for the others). */
function settledOutcome(status: PaymentStatus): PaymentOutcome | null {
  return status === 'succeeded' || status === 'failed' || status === 'voided' ? status : null;
}

const EVENT_OF: Partial<Record<PaymentStatus, MerchantEventType>> = {
  requires_action: 'payment.requires_action',
  processing: 'payment.processing',
  succeeded: 'payment.succeeded',
  failed: 'payment.failed',
  voided: 'payment.voided',
};

/**
 * Moves a payment in flight (`created`, `requires_action`, `processing`) to what the provider
 * says, in one transaction with its outbox event. Settled payments never move back: a late or
 * repeated answer changes nothing.
 */
export async function applyProviderPayment(
  em: EntityManager,
  paymentId: string,
  pp: ProviderPayment,
): Promise<Payment | null> {
  let moved: PaymentOutcome | null = null;
  const applied = await em.transactional(async (tx) => {
    // Its row only: with the merchant populated, `for update` would lock the merchant's row too.
    const payment = await tx.findOne(Payment, { id: paymentId }, { lockMode: LockMode.PESSIMISTIC_WRITE });
    if (!payment) return null;
    if (!OPEN_PAYMENT_STATUSES.includes(payment.status)) return payment;
    // A provider payment of another amount, currency or transaction than ours is a fault to
    // show an operator (typed: the activity makes it a visible failure), never an outcome to record.
    const differ = differences(
      {
        ...(payment.providerTransactionId ? { transactionId: payment.providerTransactionId } : {}),
        amountMinor: payment.amountMinor,
        currency: payment.currency,
      },
      pp,
    );
    if (differ.length > 0) throw new ProviderMismatchError(paymentId, differ);
    payment.providerTransactionId = pp.transactionId;
    payment.redirectUrl = pp.redirectUrl ?? payment.redirectUrl;
    if (pp.savedCardToken) payment.savedCardToken = pp.savedCardToken;
    const next = nextPaymentStatus(payment.status, pp);
    // The page stays known while the customer may still use it; it is shown only while requires_action.
    if (next === 'requires_action') payment.actionUrl = pp.actionUrl ?? payment.actionUrl;
    if (next === 'failed') Object.assign(payment, failureOf(pp));
    moved = await settle(tx, payment, next);
    return payment;
  });
  if (moved) workerMetrics.payment(moved);
  if (applied && savesCard(applied, pp)) await keepSavedCard(em, applied, pp);
  return applied;
}

/**
 * A payment made for a customer (`customerId`) with `saveCardEnabled` that captured with a card the
 * processor saved (a hosted payment, or a new card token): the card becomes one of the customer's
 * payment methods (PRODUCT.md, "Customers and payment methods").
 */
function savesCard(
  p: Pick<Payment, 'status' | 'customerId' | 'saveCardEnabled' | 'paymentMethodId'>,
  pp: ProviderPayment,
): boolean {
  return (
    CAPTURED.includes(p.status) &&
    p.customerId !== null &&
    p.saveCardEnabled &&
    p.paymentMethodId === null &&
    pp.status === 'succeeded' &&
    pp.savedCardToken !== null
  );
}

const CAPTURED: readonly PaymentStatus[] = ['succeeded', 'partially_refunded', 'refunded'];

/**
 * Keeps the card once per payment (the payment method's `sourcePaymentId` is unique), so a repeat of
 * the same answer (an activity retried after a crash) keeps nothing more.
 */
async function keepSavedCard(em: EntityManager, payment: Payment, pp: ProviderPayment): Promise<void> {
  const { customerId } = payment;
  if (customerId === null) return;
  await addPaymentMethod(em, customerId, {
    id: newId('paymentMethod'),
    processor: payment.processor,
    reference: pp.savedCardToken!,
    providerCustomerId: null,
    card: pp.savedCard,
    sourcePaymentId: payment.id,
  });
}

/** What a payment attempt reads of its payment: the view, and what its provider call is made of. */
export type PaymentForAttempt = PaymentView & { merchantId: string; cardToken: string | null };

function paymentForAttemptOfRow(row: Record<string, unknown>): PaymentForAttempt {
  return {
    ...paymentViewOfRow(row),
    merchantId: row.merchant_id as string,
    cardToken: row.card_token as string | null,
  };
}

const CLAIM_PAYMENT_FOR_ATTEMPT: PreparedStatement = {
  name: 'claim_payment_for_attempt',
  text: `with prior as (
       select ${PAYMENT_VIEW_COLUMNS}, merchant_id, card_token, provider_call_sent_at as sent_at
         from payments where id = $1 for update
     ), ${markSentCte('payments', 'created')}
     select * from prior`,
};

/** A payment read for its attempt; when `created`, its provider call is marked as sent by the same statement. */
export interface ClaimedPayment {
  payment: PaymentForAttempt;
  /** An earlier call under the payment's key was marked as sent and never proven to have done nothing. */
  sentBefore: boolean;
}

/**
 * An attempt's read and its provider call's sent mark in one statement (issue 12: one round trip
 * less on every token payment): the row as it is, locked, and, when it is `created`, marked as
 * sent (committed before the provider is asked, as activities/providerCalls.ts requires), saying
 * whether an earlier call was outstanding. Null when there is no such payment.
 */
export async function claimPaymentForAttempt(em: EntityManager, id: string): Promise<ClaimedPayment | null> {
  const [row] = await preparedRows(em, CLAIM_PAYMENT_FOR_ATTEMPT, [id]);
  if (!row) return null;
  return { payment: paymentForAttemptOfRow(row), sentBefore: row.sent_at != null };
}

/**
 * applyProviderPayment's usual case in one statement (issue 12: the ORM's transaction took six
 * round trips on every payment): the provider's answer to an attempt applied to the payment as
 * the attempt read it, with its outbox event. The statement changes the row only if it is still
 * `created` with the transaction and redirect the attempt read, so the event's payload, built
 * from that read, is the row it writes (nothing else changes on a `created` payment). Answers
 * null, having changed nothing, when the general path must decide: the row moved meanwhile,
 * is gone, or the provider's record does not match ours (the general path raises that). When it
 * moved the row, the statement has also sent the API its hint, with the payment as written.
 */
export async function applyProviderPaymentToRead(
  em: EntityManager,
  read: PaymentForAttempt,
  pp: ProviderPayment,
): Promise<PaymentAnswer | null> {
  if (read.status !== 'created') return null;
  // A card to keep for the customer: the general path keeps it.
  if (read.customerId !== null && read.saveCardEnabled && read.paymentMethodId === null && pp.savedCardToken) {
    return null;
  }
  const ours = {
    ...(read.providerTransactionId ? { transactionId: read.providerTransactionId } : {}),
    amountMinor: read.amountMinor,
    currency: read.currency,
  };
  if (differences(ours, pp).length > 0) return null;
  const next = nextPaymentStatus(read.status, pp);
  const now = new Date();
  const failure = next === 'failed' ? failureOf(pp) : undefined;
  const after: PaymentView = {
    ...read,
    status: next,
    providerTransactionId: pp.transactionId,
    redirectUrl: pp.redirectUrl ?? read.redirectUrl,
    actionUrl: next === 'requires_action' ? pp.actionUrl : read.actionUrl,
    ...failure,
    updatedAt: now,
  };
  const type = EVENT_OF[next];
  const event = type ? outboxEventFields(paymentEvent(type, after), now) : null;
  const evented = event ? outboxEventCte('evented', 'moved', event) : undefined;
  const answer = answerOfStatus(next);
  const kind = hintKindOf(answer);
  const sql = `with moved as (
       update payments set status = ?, provider_transaction_id = ?, redirect_url = ?, action_url = ?,
              saved_card_token = coalesce(?, saved_card_token), failure_code = ?, failure_message = ?, updated_at = ?
        where id = ? and status = 'created'
          and provider_transaction_id is not distinct from ? and redirect_url is not distinct from ?
       returning id, merchant_id
     )${evented ? `, ${evented.sql}` : ''}, hinted as (
       select pg_notify(?, ?) from moved -- a plain CTE runs only if referenced: see the last line
     )
     select (select count(*)::int from moved) as moved, (select count(*)::int from hinted) as hinted`;
  const values: unknown[] = [
    next,
    after.providerTransactionId,
    after.redirectUrl,
    after.actionUrl,
    pp.savedCardToken ?? null,
    after.failureCode,
    after.failureMessage,
    now,
    read.id,
    read.providerTransactionId,
    read.redirectUrl,
  ];
  if (evented) values.push(...evented.values);
  // The API waiting on this payment hears of it when this statement commits, with the payment as
  // answered (outcomeHints.ts); only if it moved.
  values.push(PAYMENT_OUTCOME_CHANNEL, paymentOutcomeHint(read.id, kind, presentPayment(after)));
  const [row] = await parameterisedRows(em, sql, values);
  if (row?.moved !== 1) return null;
  const outcome = settledOutcome(next);
  if (outcome) workerMetrics.payment(outcome);
  return answer;
}

/** Voids a payment that never reached the provider (or was cancelled there) at its expiry. */
export async function voidPayment(em: EntityManager, paymentId: string): Promise<Payment | null> {
  return closeUnsent(em, paymentId, 'voided');
}

/** Fails a `created` payment that was never sent to a provider (e.g. none is configured for it). */
export async function failUnsentPayment(
  em: EntityManager,
  paymentId: string,
  failure: { code: string; message: string },
): Promise<Payment | null> {
  return closeUnsent(em, paymentId, 'failed', failure);
}

async function closeUnsent(
  em: EntityManager,
  paymentId: string,
  next: 'voided' | 'failed',
  failure?: { code: string; message: string },
): Promise<Payment | null> {
  let moved: PaymentOutcome | null = null;
  const closed = await em.transactional(async (tx) => {
    // Its row only: with the merchant populated, `for update` would lock the merchant's row too.
    const payment = await tx.findOne(Payment, { id: paymentId }, { lockMode: LockMode.PESSIMISTIC_WRITE });
    if (!payment || payment.status !== 'created') return payment;
    if (failure) {
      payment.failureCode = failure.code;
      payment.failureMessage = failure.message;
    }
    moved = await settle(tx, payment, next);
    return payment;
  });
  if (moved) workerMetrics.payment(moved);
  return closed;
}

/** Moves the payment to `next`; answers the settled outcome when it moved to one (for payments_total). */
async function settle(tx: EntityManager, payment: Payment, next: PaymentStatus): Promise<PaymentOutcome | null> {
  const changed = next !== payment.status;
  payment.status = next;
  payment.updatedAt = new Date();
  const type = changed ? EVENT_OF[next] : undefined;
  if (type) {
    recordEvent(tx, { merchant: payment.merchant, ...paymentEvent(type, payment) });
  }
  await tx.flush();
  return changed ? settledOutcome(next) : null;
}
