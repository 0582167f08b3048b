import type { EntityManager } from '@mikro-orm/postgresql';
import { LockMode, UniqueConstraintViolationException } from '@mikro-orm/core';
import { Payment, Refund, type RefundStatus } from '../db/entities';
import { AppError } from '../errors';
import { newId } from '../ids';
import { toMajor, toMinor } from '../rules/money';
import { parameterisedRows, preparedRows, type PreparedStatement } from '../db/orm';
import { PAYMENT_VIEW_COLUMNS, paymentViewOfRow, presentPayment, refundableMinor, type PaymentView } from './payments';
import { outboxEventCte, outboxEventFields, recordEvent, type EventInput } from './events';
import type { RecordScope } from './scope';
import { markSentCte } from '../rules/providerCallMark';
import { workerMetrics } from '../metrics/worker';
import { hintPayload, REFUND_OUTCOME_CHANNEL } from '../db/hintChannels';
import { quotaExceeded } from './quotas';

/**
 * Refund rules. A request's checks are decided in one place (decideRefund); the in-flight slot is
 * reserved by one statement that re-checks the payment under its row lock (or, when anything
 * moved, in a transaction holding that lock), so concurrent requests are serialized per payment;
 * the database's partial unique index and balance check are the last line of defence.
 */

export function presentRefund(r: SettledRefundFields, payment: PaymentView) {
  return {
    id: r.id,
    paymentId: payment.id,
    externalId: r.externalId,
    amount: toMajor(r.amountMinor, r.currency),
    currency: r.currency,
    status: r.status,
    failureCode: r.failureCode,
    failureMessage: r.failureMessage,
    providerRefundId: r.providerRefundId,
    paymentAmountRefunded: toMajor(payment.amountRefundedMinor, payment.currency),
    paymentAmountRefundable: toMajor(refundableMinor(payment), payment.currency),
    reason: r.reason,
    createdAt: r.createdAt.toISOString(),
    updatedAt: r.updatedAt.toISOString(),
  };
}

export type RefundResponse = ReturnType<typeof presentRefund>;

/**
 * What a refund's outcome hint says (src/db/outcomeHints.ts): the refund is settled (succeeded or
 * failed), and when its settlement sent the hint, the refund as it committed (the API answers with
 * it instead of reading it again).
 */
export type RefundOutcomeHint = { kind: 'settled'; refund?: RefundResponse };

/** A refund hint as sent on REFUND_OUTCOME_CHANNEL. */
export interface RefundHintMessage {
  refundId: string;
  outcome: RefundOutcomeHint;
}

/**
 * The payload of the hint a refund's settlement statement sends itself (pg_notify, delivered at
 * its commit): with the refund as that statement wrote it, unless that would be too long.
 */
export function refundSettledHint(refundId: string, refund: RefundResponse): string {
  return hintPayload(
    { refundId, outcome: { kind: 'settled', refund } } satisfies RefundHintMessage,
    { refundId, outcome: { kind: 'settled' } } satisfies RefundHintMessage,
  );
}

export interface RefundRequest {
  externalId: string;
  amount?: number;
  currency?: string;
  reason?: string;
}

/** A refund created or replayed: what its workflow's start needs of it and of its payment. */
export type RefundCreation = {
  refund: Pick<Refund, 'id' | 'externalId' | 'amountMinor' | 'currency'>;
  payment: Pick<PaymentView, 'id' | 'callbackUrl'>;
  created: boolean;
};

const notFound = () => new AppError('not_found', 'Payment not found.');

/** The refund an externalId already names (unique per merchant), as the checks need it. */
interface NamedRefund {
  id: string;
  paymentId: string;
  paymentEnvironment: Payment['environment'];
  amountMinor: number;
}

type RefundDecision =
  | { kind: 'replay' }
  | { kind: 'create'; amountMinor: number }
  /** refund_in_flight, once the caller has looked up the pending refund's id. */
  | { kind: 'in_flight' }
  | { kind: 'refused'; error: AppError };

/**
 * The rules of a refund request, in the order PRODUCT.md fixes after `not_found`: replay (same
 * externalId on this payment), `external_id_conflict` (externalId of another record) or
 * `validation_error` (currency, amount), `payment_not_refundable`, `refund_in_flight`,
 * `charge_disputed`, `amount_exceeds_refundable`. Pure: both writers of a refund decide here.
 */
function decideRefund(
  payment: Pick<
    PaymentView,
    | 'id'
    | 'currency'
    | 'status'
    | 'amountMinor'
    | 'amountRefundedMinor'
    | 'amountPendingRefundMinor'
    | 'amountDisputedMinor'
    | 'openDisputes'
  >,
  named: NamedRefund | null,
  req: RefundRequest,
  environment: Payment['environment'],
): RefundDecision {
  const refused = (error: AppError): RefundDecision => ({ kind: 'refused', error });
  // externalIds stay unique per merchant across environments (one unique key): a refund of
  // the other environment's payment is refused without being named.
  if (named) {
    if (named.paymentEnvironment !== environment) {
      return refused(
        new AppError('external_id_conflict', 'This externalId is used by a record of the other environment.'),
      );
    }
    if (named.paymentId !== payment.id) {
      return refused(
        new AppError('external_id_conflict', 'This externalId names a refund of another payment.', {
          refundId: named.id,
        }),
      );
    }
    const requested = req.amount === undefined ? undefined : toMinor(req.amount, payment.currency);
    const sameAmount = requested === undefined || (requested.ok && requested.minor === named.amountMinor);
    if (!sameAmount) {
      return refused(
        new AppError('external_id_conflict', 'This externalId names a refund with another amount.', {
          refundId: named.id,
        }),
      );
    }
    return { kind: 'replay' };
  }
  if (req.currency !== undefined && req.currency !== payment.currency) {
    return refused(validation('currency', `Currency must be the payment's (${payment.currency}).`));
  }
  let amountMinor: number | undefined;
  if (req.amount !== undefined) {
    const parsed = toMinor(req.amount, payment.currency);
    if (!parsed.ok) return refused(validation('amount', parsed.message));
    amountMinor = parsed.minor;
  }
  if (payment.status !== 'succeeded' && payment.status !== 'partially_refunded') {
    return refused(
      new AppError('payment_not_refundable', `A ${payment.status} payment cannot be refunded.`, {
        paymentStatus: payment.status,
      }),
    );
  }
  if (payment.amountPendingRefundMinor > 0) return { kind: 'in_flight' };
  // A refund of a disputed charge would lose the money twice (the chargeback takes it too).
  if (payment.openDisputes > 0) {
    return refused(
      new AppError('charge_disputed', 'The payment has an open dispute: it cannot be refunded until it is decided.'),
    );
  }
  const refundable = refundableMinor(payment);
  const amount = amountMinor ?? refundable;
  // Nothing left (a lost or accepted dispute took the rest): no refund of 0.
  if (amount > refundable || amount <= 0) {
    return refused(
      new AppError('amount_exceeds_refundable', 'The amount exceeds the remaining refundable balance.', {
        amountRefundable: toMajor(refundable, payment.currency),
      }),
    );
  }
  return { kind: 'create', amountMinor: amount };
}

/**
 * Creates the refund and reserves the payment's in-flight slot, or returns the refund this
 * externalId already names on this payment (a replay). Checks in the order PRODUCT.md fixes:
 * `not_found`, then decideRefund's. The usual case takes one read and one conditional write
 * (createRefundFromRead); anything else, errors included, is decided again under the payment's
 * lock. The caller starts the refund's workflow after the commit (the orphan sweeper starts it
 * if the caller could not).
 */
export async function createRefund(
  em: EntityManager,
  scope: RecordScope,
  paymentId: string,
  req: RefundRequest,
  { maxRefunds = 0 }: RefundLimits = {},
): Promise<RefundCreation> {
  return (
    (await createRefundFromRead(em, scope, paymentId, req, maxRefunds)) ??
    createRefundLocked(em, scope, paymentId, req, maxRefunds)
  );
}

/** The `refunds_per_payment` quota (decision 0079): at most this many refunds per payment, whatever their status; 0: no limit. */
export interface RefundLimits {
  maxRefunds?: number;
}

/**
 * createRefund, each time in a fork of its own. The same externalId sent for two payments at
 * once: the loser's insert violates the unique (merchant, externalId); once more, it sees the
 * winner (replay or conflict: `external_id_conflict`).
 */
export async function createOrFindRefund(
  em: EntityManager,
  scope: RecordScope,
  paymentId: string,
  req: RefundRequest,
  limits: RefundLimits = {},
): Promise<RefundCreation> {
  const create = () => createRefund(em.fork(), scope, paymentId, req, limits);
  return create().catch((err: unknown) => {
    if (err instanceof UniqueConstraintViolationException) return create();
    throw err;
  });
}

/** A refund as the API answers it, by id (it exists: the caller created or found it). */
export async function refundViewById(em: EntityManager, refundId: string): Promise<RefundResponse> {
  const refund = await findRefundWithPayment(em, refundId);
  return presentRefund(refund!, refund!.payment);
}

/** A payment's refunds as the API answers them, newest first; null when the payment is not the caller's. */
export async function listPaymentRefunds(
  em: EntityManager,
  scope: RecordScope,
  paymentId: string,
): Promise<RefundResponse[] | null> {
  const fork = em.fork();
  const payment = await fork.findOne(Payment, {
    id: paymentId,
    merchant: scope.merchantId,
    environment: scope.environment,
  });
  if (!payment) return null;
  const refunds = await fork.find(Refund, { payment: payment.id }, { orderBy: { createdAt: 'desc', id: 'desc' } });
  return refunds.map((r) => presentRefund(r, payment));
}

/** A refund as the API answers it, scoped to the caller's merchant and environment (null: not found). */
export async function findRefundView(
  em: EntityManager,
  scope: RecordScope,
  refundId: string,
): Promise<RefundResponse | null> {
  const refund = await em
    .fork()
    .findOne(
      Refund,
      { id: refundId, merchant: scope.merchantId, payment: { environment: scope.environment } },
      { populate: ['payment'] },
    );
  return refund ? presentRefund(refund, refund.payment) : null;
}

/** The general path: every check in one transaction holding the payment's row lock. */
async function createRefundLocked(
  em: EntityManager,
  scope: RecordScope,
  paymentId: string,
  req: RefundRequest,
  maxRefunds: number,
): Promise<RefundCreation> {
  return em.transactional(async (tx) => {
    const payment = await tx.findOne(
      Payment,
      { id: paymentId, merchant: scope.merchantId, environment: scope.environment },
      { lockMode: LockMode.PESSIMISTIC_WRITE },
    );
    if (!payment) throw notFound();
    const existing = await tx.findOne(
      Refund,
      { merchant: scope.merchantId, externalId: req.externalId },
      { populate: ['payment'] },
    );
    const named = existing && {
      id: existing.id,
      paymentId: existing.payment.id,
      paymentEnvironment: existing.payment.environment,
      amountMinor: existing.amountMinor,
    };
    const decision = decideRefund(payment, named, req, scope.environment);
    switch (decision.kind) {
      case 'refused':
        throw decision.error;
      case 'replay':
        return { refund: existing!, payment, created: false };
      case 'in_flight': {
        const inFlight = await tx.findOne(Refund, { payment: payment.id, status: 'pending' });
        throw new AppError('refund_in_flight', 'A previous refund of this payment is still in flight.', {
          refundId: inFlight?.id ?? null,
        });
      }
    }
    // Under the payment's row lock, which every refund's creation takes: the count cannot move.
    if (maxRefunds > 0) {
      const current = await tx.count(Refund, { payment: payment.id });
      if (current >= maxRefunds) throw quotaExceeded('refunds_per_payment', maxRefunds, current);
    }
    const now = new Date();
    const refund = tx.create(Refund, {
      id: newId('refund'),
      merchant: payment.merchant,
      payment,
      externalId: req.externalId,
      amountMinor: decision.amountMinor,
      currency: payment.currency,
      reason: req.reason ?? null,
      status: 'pending',
      failureCode: null,
      failureMessage: null,
      providerRefundId: null,
      createdAt: now,
      updatedAt: now,
    });
    payment.amountPendingRefundMinor = decision.amountMinor;
    payment.updatedAt = now;
    await tx.flush();
    return { refund, payment, created: true };
  });
}

const REFUND_CREATION_READ: PreparedStatement = {
  name: 'refund_creation_read',
  text: `select p.*, named.payment_id as named_payment_id, named.environment as named_environment,
                named.id as named_id, named.external_id as named_external_id,
                named.amount_minor as named_amount_minor, named.currency as named_currency
           from (select 1) one
           left join (select ${PAYMENT_VIEW_COLUMNS} from payments
                       where id = $1 and merchant_id = $2 and environment = $3) p on true
           left join (select r.id, r.payment_id, r.external_id, r.amount_minor, r.currency, rp.environment
                        from refunds r join payments rp on rp.id = r.payment_id
                       where r.merchant_id = $2 and r.external_id = $4) named on true`,
};

/**
 * The refund reserved only if the payment is still as read (status, refunded and disputed
 * balances, no refund in flight, no open dispute): the UPDATE takes the row lock and re-checks, so a concurrent creation or
 * settlement leaves it unwritten; the INSERT happens only with it, in the same statement. (A
 * refund in flight would also be refused by the partial unique index: a unique violation.)
 */
const RESERVE_AND_INSERT_REFUND: PreparedStatement = {
  name: 'refund_reserve_and_insert',
  text: `with reserved as (
           update payments set amount_pending_refund_minor = $4, updated_at = $5
            where id = $1 and status = $2 and amount_refunded_minor = $3 and amount_pending_refund_minor = 0
              and open_disputes = 0 and amount_disputed_minor = $9
              and ($10::int = 0 or (select count(*) from refunds where payment_id = $1) < $10::int)
           returning id, merchant_id, currency
         )
         insert into refunds (id, merchant_id, payment_id, external_id, amount_minor, currency, reason, status,
                              failure_code, failure_message, provider_refund_id, created_at, updated_at)
         select $6, merchant_id, id, $7, $4, currency, $8, 'pending', null, null, null, $5, $5 from reserved
         returning id`,
};

/** A refund request's read: the payment (scoped) and the refund its externalId already names. */
export interface RefundRequestRead {
  payment: PaymentView;
  named: (NamedRefund & Pick<Refund, 'externalId' | 'currency'>) | null;
}

/** The payment and the named refund in one prepared statement, without a lock; null: no such payment. */
export async function readRefundRequest(
  em: EntityManager,
  scope: RecordScope,
  paymentId: string,
  externalId: string,
): Promise<RefundRequestRead | null> {
  const [row] = await preparedRows(em, REFUND_CREATION_READ, [
    paymentId,
    scope.merchantId,
    scope.environment,
    externalId,
  ]);
  if (!row || row.id == null) return null;
  const named =
    row.named_id == null
      ? null
      : {
          id: row.named_id as string,
          paymentId: row.named_payment_id as string,
          paymentEnvironment: row.named_environment as Payment['environment'],
          externalId: row.named_external_id as string,
          amountMinor: Number(row.named_amount_minor),
          currency: row.named_currency as string,
        };
  return { payment: paymentViewOfRow(row), named };
}

/**
 * The new refund inserted and the payment's slot reserved in one statement, only if the payment
 * is as read. Answers false, having written nothing, if it moved, or if the insert lost a race
 * on a unique key (the same externalId, or another refund in flight).
 */
export async function reserveRefundAsRead(
  em: EntityManager,
  payment: PaymentView,
  refund: Pick<Refund, 'id' | 'externalId' | 'amountMinor' | 'reason'>,
  maxRefunds = 0,
): Promise<boolean> {
  try {
    const inserted = await preparedRows(em, RESERVE_AND_INSERT_REFUND, [
      payment.id,
      payment.status,
      payment.amountRefundedMinor,
      refund.amountMinor,
      new Date(),
      refund.id,
      refund.externalId,
      refund.reason,
      payment.amountDisputedMinor,
      maxRefunds,
    ]);
    return inserted.length === 1;
  } catch (err) {
    if (em.getDriver().convertException(err as Error) instanceof UniqueConstraintViolationException) return false;
    throw err;
  }
}

/**
 * createRefund's usual case without a transaction (issue 12: the ORM's took six round trips and
 * most of the API's time per refund): readRefundRequest, decideRefund, then for a new refund
 * reserveRefundAsRead. Answers null, having written nothing, whenever the general path must
 * decide: no payment, any refusal, or a write that found the payment moved or lost a race.
 */
async function createRefundFromRead(
  em: EntityManager,
  scope: RecordScope,
  paymentId: string,
  req: RefundRequest,
  maxRefunds: number,
): Promise<RefundCreation | null> {
  const read = await readRefundRequest(em, scope, paymentId, req.externalId);
  if (!read) return null;
  const { payment, named } = read;
  const decision = decideRefund(payment, named, req, scope.environment);
  if (decision.kind === 'replay') return { refund: named!, payment, created: false };
  if (decision.kind !== 'create' || decision.amountMinor <= 0) return null;
  const refund = {
    id: newId('refund'),
    externalId: req.externalId,
    amountMinor: decision.amountMinor,
    currency: payment.currency,
    reason: req.reason ?? null,
  };
  return (await reserveRefundAsRead(em, payment, refund, maxRefunds)) ? { refund, payment, created: true } : null;
}

function validation(path: string, message: string): AppError {
  return new AppError('validation_error', message, { issues: [{ path, code: 'invalid_value', message }] });
}

export interface RefundSettlement {
  status: Exclude<RefundStatus, 'pending'>;
  providerRefundId?: string | null;
  failureCode?: string | null;
  failureMessage?: string | null;
}

/** A refund as its settlement reads and writes it (the entity, or the attempt's plain read). */
type SettledRefundFields = Pick<
  Refund,
  | 'id'
  | 'externalId'
  | 'amountMinor'
  | 'currency'
  | 'reason'
  | 'status'
  | 'failureCode'
  | 'failureMessage'
  | 'providerRefundId'
  | 'createdAt'
  | 'updatedAt'
>;

/** What settling a refund changes on it. */
export type RefundSettledChanges = Pick<
  Refund,
  'status' | 'providerRefundId' | 'failureCode' | 'failureMessage' | 'updatedAt'
>;
/** What settling a refund changes on its payment. */
export type PaymentRefundChanges = Pick<
  Payment,
  'amountPendingRefundMinor' | 'amountRefundedMinor' | 'status' | 'updatedAt'
>;

/**
 * A pending refund settled: what changes on the refund and on its payment, and the outbox events
 * (refund.succeeded or refund.failed; payment.refunded or payment.partially_refunded with a
 * success), whose payloads show both as they are afterwards. The one rule for both writers.
 */
function settlement(
  refund: SettledRefundFields,
  payment: PaymentView,
  s: RefundSettlement,
  now: Date,
): { refund: RefundSettledChanges; payment: PaymentRefundChanges; events: EventInput[]; view: RefundResponse } {
  const refunded =
    s.status === 'succeeded' ? payment.amountRefundedMinor + refund.amountMinor : payment.amountRefundedMinor;
  const refundChanges: RefundSettledChanges = {
    status: s.status,
    providerRefundId: s.providerRefundId ?? refund.providerRefundId,
    failureCode: s.status === 'failed' ? (s.failureCode ?? 'refund_failed') : null,
    failureMessage: s.status === 'failed' ? (s.failureMessage ?? 'The refund failed.') : null,
    updatedAt: now,
  };
  const paymentChanges: PaymentRefundChanges = {
    amountPendingRefundMinor: 0,
    amountRefundedMinor: refunded,
    status:
      s.status === 'succeeded' ? (refunded >= payment.amountMinor ? 'refunded' : 'partially_refunded') : payment.status,
    updatedAt: now,
  };
  const refundAfter = { ...refund, ...refundChanges };
  const paymentAfter = { ...payment, ...paymentChanges };
  const view = presentRefund(refundAfter, paymentAfter);
  const events: EventInput[] = [
    {
      type: s.status === 'succeeded' ? 'refund.succeeded' : 'refund.failed',
      resourceId: refund.id,
      dedupeKey: `${refund.id}:refund.${s.status}`,
      callbackUrl: payment.callbackUrl,
      environment: payment.environment,
      data: view,
    },
  ];
  if (s.status === 'succeeded') {
    const type = paymentAfter.status === 'refunded' ? 'payment.refunded' : 'payment.partially_refunded';
    events.push({
      type,
      resourceId: refund.id,
      dedupeKey: `${refund.id}:${type}`,
      callbackUrl: payment.callbackUrl,
      environment: payment.environment,
      data: presentPayment(paymentAfter),
    });
  }
  return { refund: refundChanges, payment: paymentChanges, events, view };
}

/** A refund with its payment (view and merchant), as a refund attempt and the refund POST read them. */
export type RefundWithPayment = SettledRefundFields & {
  merchant: { id: string };
  payment: PaymentView & { merchant: { id: string } };
};

/** The columns of a refund with its payment (REFUND_WITH_PAYMENT), as refundWithPaymentOfRow reads them. */
const REFUND_WITH_PAYMENT_COLUMNS = `p.*, r.id as refund_id, r.merchant_id as refund_merchant_id,
  r.external_id as refund_external_id, r.amount_minor as refund_amount_minor, r.currency as refund_currency,
  r.reason as refund_reason, r.status as refund_status, r.failure_code as refund_failure_code,
  r.failure_message as refund_failure_message, r.provider_refund_id as refund_provider_refund_id,
  r.created_at as refund_created_at, r.updated_at as refund_updated_at`;
const PAYMENT_OF_REFUND = `(select ${PAYMENT_VIEW_COLUMNS}, merchant_id from payments) p on p.id = r.payment_id`;

const REFUND_WITH_PAYMENT: PreparedStatement = {
  name: 'refund_with_payment',
  text: `select ${REFUND_WITH_PAYMENT_COLUMNS} from refunds r join ${PAYMENT_OF_REFUND} where r.id = $1`,
};

const CLAIM_REFUND_FOR_ATTEMPT: PreparedStatement = {
  name: 'claim_refund_for_attempt',
  text: `with prior as (
       select id, status, provider_call_sent_at as sent_at from refunds where id = $1 for update
     ), ${markSentCte('refunds', 'pending')}
     select ${REFUND_WITH_PAYMENT_COLUMNS}, prior.sent_at
       from refunds r join prior on prior.id = r.id join ${PAYMENT_OF_REFUND}`,
};

/**
 * A refund and its payment in one prepared statement (on every refund's path: the attempt, the
 * POST's answer).
 */
export async function findRefundWithPayment(em: EntityManager, id: string): Promise<RefundWithPayment | null> {
  const [row] = await preparedRows(em, REFUND_WITH_PAYMENT, [id]);
  return row ? refundWithPaymentOfRow(row) : null;
}

/**
 * A refund's attempt reads it with its payment and, when it is `pending`, marks its provider call
 * as sent, in one statement (as claimPaymentForAttempt does for a payment): `sentBefore` says
 * whether an earlier call under its key was outstanding. Null when there is no such refund.
 */
export async function claimRefundForAttempt(
  em: EntityManager,
  id: string,
): Promise<{ refund: RefundWithPayment; sentBefore: boolean } | null> {
  const [row] = await preparedRows(em, CLAIM_REFUND_FOR_ATTEMPT, [id]);
  return row ? { refund: refundWithPaymentOfRow(row), sentBefore: row.sent_at != null } : null;
}

function refundWithPaymentOfRow(row: Record<string, unknown>): RefundWithPayment {
  return {
    id: row.refund_id as string,
    merchant: { id: row.refund_merchant_id as string },
    externalId: row.refund_external_id as string,
    amountMinor: Number(row.refund_amount_minor),
    currency: row.refund_currency as string,
    reason: row.refund_reason as string | null,
    status: row.refund_status as RefundStatus,
    failureCode: row.refund_failure_code as string | null,
    failureMessage: row.refund_failure_message as string | null,
    providerRefundId: row.refund_provider_refund_id as string | null,
    createdAt: new Date(row.refund_created_at as Date),
    updatedAt: new Date(row.refund_updated_at as Date),
    payment: { ...paymentViewOfRow(row), merchant: { id: row.merchant_id as string } },
  };
}

/**
 * settleRefund's usual case in one statement (issue 12: the ORM's transaction took about eight
 * round trips on every refund), from the refund and payment as the attempt read them: both
 * updated and the events recorded only if neither moved since (the refund still pending and
 * unchanged; the payment's status, balances and updated_at as read, which every refund
 * settlement and creation changes), so the events' payloads, built from that read, show the
 * rows written. Both rows are locked and re-checked before either is written: all or nothing.
 * The same statement sends the refund hint (with the refund as written), delivered at its commit.
 * Answers false, having changed nothing, when the general path must decide.
 */
export async function settleRefundFromRead(
  em: EntityManager,
  read: RefundWithPayment,
  s: RefundSettlement,
): Promise<boolean> {
  if (read.status !== 'pending') return false;
  const now = new Date();
  const next = settlement(read, read.payment, s, now);
  const events = next.events.map((e) => outboxEventFields(e, now));
  // Locked in the order every refund path locks (payment, then refund), each re-checked as read.
  const values: unknown[] = [
    read.payment.id,
    read.payment.status,
    read.payment.amountRefundedMinor,
    read.payment.amountPendingRefundMinor,
    read.payment.updatedAt,
    read.id,
    read.updatedAt,
    next.payment.amountPendingRefundMinor,
    next.payment.amountRefundedMinor,
    next.payment.status,
    now,
    next.refund.status,
    next.refund.providerRefundId,
    next.refund.failureCode,
    next.refund.failureMessage,
    now,
  ];
  const inserts = events.map((e, i) => {
    const cte = outboxEventCte(`event_${i}`, 'paid', e);
    values.push(...cte.values);
    return `, ${cte.sql}`;
  });
  // The API waiting on this refund hears of it when this statement commits, with the refund as
  // answered (outcomeHints.ts); only if it settled.
  const hint = refundSettledHint(read.id, next.view);
  values.push(REFUND_OUTCOME_CHANNEL, hint);
  const [row] = await parameterisedRows(
    em,
    `with payment as (
       select id from payments
        where id = ? and status = ? and amount_refunded_minor = ? and amount_pending_refund_minor = ? and updated_at = ?
          for update
     ), pending as (
       select refunds.id from refunds join payment on refunds.payment_id = payment.id
        where refunds.id = ? and refunds.status = 'pending' and refunds.updated_at = ?
          for update of refunds
     ), paid as (
       update payments set amount_pending_refund_minor = ?, amount_refunded_minor = ?, status = ?, updated_at = ?
         from pending, payment where payments.id = payment.id
       returning payments.id, payments.merchant_id
     ), settled as (
       update refunds set status = ?, provider_refund_id = ?, failure_code = ?, failure_message = ?, updated_at = ?
         from pending where refunds.id = pending.id
       returning refunds.id
     )${inserts.join('')}, hinted as (
       select pg_notify(?, ?) from settled -- a plain CTE runs only if referenced: see the last line
     )
     select (select count(*)::int from settled) as settled, (select count(*)::int from hinted) as hinted`,
    values,
  );
  if (row?.settled !== 1) return false;
  workerMetrics.refund(s.status);
  return true;
}

/**
 * Settles a pending refund and the payment's balance and status, with the outbox events, in
 * one transaction. Idempotent: a settled refund is never settled again.
 */
export async function settleRefund(em: EntityManager, refundId: string, s: RefundSettlement): Promise<Refund | null> {
  let settled = false;
  const result = await em.transactional(async (tx) => {
    const head = await tx.findOne(Refund, { id: refundId });
    if (!head) return null;
    // Lock order everywhere: payment, then refund; never the merchant (not populated: see payments.ts).
    const payment = await tx.findOneOrFail(Payment, { id: head.payment.id }, { lockMode: LockMode.PESSIMISTIC_WRITE });
    const refund = await tx.findOneOrFail(
      Refund,
      { id: refundId },
      { lockMode: LockMode.PESSIMISTIC_WRITE, refresh: true },
    );
    if (refund.status !== 'pending') return refund;
    const next = settlement(refund, payment, s, new Date());
    Object.assign(refund, next.refund);
    Object.assign(payment, next.payment);
    for (const event of next.events) recordEvent(tx, { merchant: payment.merchant, ...event });
    await tx.flush();
    settled = true;
    return refund;
  });
  // Counted once the transition committed, and only when this call made it (refunds_total).
  if (settled) workerMetrics.refund(s.status);
  return result;
}
