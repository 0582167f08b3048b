import type { EntityManager } from '@mikro-orm/postgresql';
import { LockMode } from '@mikro-orm/core';
import { Payment, Refund, type RefundStatus } from '../db/entities';
import { AppError } from '../errors';
import { newId } from '../ids';
import { toMajor, toMinor } from './money';
import { presentPayment, refundableMinor } from './payments';
import { recordEvent } from './events';
import type { RecordScope } from './scope';
import { workerMetrics } from '../metrics/worker';

/**
 * Refund rules. Every check and the reservation of the in-flight slot happen in one
 * transaction holding the payment row lock, so concurrent requests are serialized per payment;
 * the database's partial unique index and balance check are the last line of defence.
 */

export function presentRefund(r: Refund, payment: Payment) {
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

export interface RefundRequest {
  externalId: string;
  amount?: number;
  currency?: string;
  reason?: string;
}

export type RefundCreation = { refund: Refund; payment: Payment; created: boolean };

const notFound = () => new AppError(404, 'not_found', 'Payment not found.');

/**
 * Creates the refund and reserves the payment's in-flight slot, or returns the refund this
 * externalId already names on this payment (a replay). Checks in the order PRODUCT.md fixes:
 * 404, replay, 400 (currency, amount), 409 not refundable, 409 in flight, 422 over balance.
 * The caller starts the refund's workflow after the commit (the orphan sweeper starts it if the
 * caller could not).
 */
export async function createRefund(
  em: EntityManager,
  scope: RecordScope,
  paymentId: string,
  req: RefundRequest,
): Promise<RefundCreation> {
  return em.transactional(async (tx) => {
    const payment = await tx.findOne(
      Payment,
      { id: paymentId, merchant: scope.merchantId, environment: scope.environment },
      { lockMode: LockMode.PESSIMISTIC_WRITE },
    );
    if (!payment) throw notFound();

    // externalIds stay unique per merchant across environments (one unique key): a refund of
    // the other environment's payment is refused without being named.
    const existing = await tx.findOne(
      Refund,
      { merchant: scope.merchantId, externalId: req.externalId },
      { populate: ['payment'] },
    );
    if (existing) {
      if (existing.payment.environment !== scope.environment) {
        throw new AppError(
          400,
          'external_id_conflict',
          'This externalId is used by a record of the other environment.',
        );
      }
      if (existing.payment.id !== payment.id) {
        throw new AppError(400, 'external_id_conflict', 'This externalId names a refund of another payment.', {
          refundId: existing.id,
        });
      }
      const requested = req.amount === undefined ? undefined : toMinor(req.amount, payment.currency);
      const sameAmount = requested === undefined || (requested.ok && requested.minor === existing.amountMinor);
      if (!sameAmount) {
        throw new AppError(400, 'external_id_conflict', 'This externalId names a refund with another amount.', {
          refundId: existing.id,
        });
      }
      return { refund: existing, payment, created: false };
    }

    if (req.currency !== undefined && req.currency !== payment.currency) {
      throw validation('currency', `Currency must be the payment's (${payment.currency}).`);
    }
    let amountMinor: number | undefined;
    if (req.amount !== undefined) {
      const parsed = toMinor(req.amount, payment.currency);
      if (!parsed.ok) throw validation('amount', parsed.message);
      amountMinor = parsed.minor;
    }
    if (payment.status !== 'succeeded' && payment.status !== 'partially_refunded') {
      throw new AppError(409, 'payment_not_refundable', `A ${payment.status} payment cannot be refunded.`, {
        paymentStatus: payment.status,
      });
    }
    if (payment.amountPendingRefundMinor > 0) {
      const inFlight = await tx.findOne(Refund, { payment: payment.id, status: 'pending' });
      throw new AppError(409, 'refund_in_flight', 'A previous refund of this payment is still in flight.', {
        refundId: inFlight?.id ?? null,
      });
    }
    const refundable = refundableMinor(payment);
    const amount = amountMinor ?? refundable;
    if (amount > refundable) {
      throw new AppError(422, 'amount_exceeds_refundable', 'The amount exceeds the remaining refundable balance.', {
        amountRefundable: toMajor(refundable, payment.currency),
      });
    }
    const now = new Date();
    const refund = tx.create(Refund, {
      id: newId('refund'),
      merchant: payment.merchant,
      payment,
      externalId: req.externalId,
      amountMinor: amount,
      currency: payment.currency,
      reason: req.reason ?? null,
      status: 'pending',
      failureCode: null,
      failureMessage: null,
      providerRefundId: null,
      createdAt: now,
      updatedAt: now,
    });
    payment.amountPendingRefundMinor = amount;
    payment.updatedAt = now;
    await tx.flush();
    return { refund, payment, created: true };
  });
}

function validation(path: string, message: string): AppError {
  return new AppError(400, 'validation_error', message, { issues: [{ path, code: 'invalid_value', message }] });
}

export interface RefundSettlement {
  status: Exclude<RefundStatus, 'pending'>;
  providerRefundId?: string | null;
  failureCode?: string | null;
  failureMessage?: string | null;
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
    // Lock order everywhere: payment, then refund.
    const payment = await tx.findOneOrFail(
      Payment,
      { id: head.payment.id },
      { lockMode: LockMode.PESSIMISTIC_WRITE, populate: ['merchant'] },
    );
    const refund = await tx.findOneOrFail(
      Refund,
      { id: refundId },
      { lockMode: LockMode.PESSIMISTIC_WRITE, refresh: true },
    );
    if (refund.status !== 'pending') return refund;
    const now = new Date();
    refund.status = s.status;
    refund.providerRefundId = s.providerRefundId ?? refund.providerRefundId;
    refund.failureCode = s.status === 'failed' ? (s.failureCode ?? 'refund_failed') : null;
    refund.failureMessage = s.status === 'failed' ? (s.failureMessage ?? 'The refund failed.') : null;
    refund.updatedAt = now;
    payment.amountPendingRefundMinor = 0;
    if (s.status === 'succeeded') {
      payment.amountRefundedMinor += refund.amountMinor;
      payment.status = payment.amountRefundedMinor >= payment.amountMinor ? 'refunded' : 'partially_refunded';
    }
    payment.updatedAt = now;
    const base = { merchant: payment.merchant, callbackUrl: payment.callbackUrl };
    recordEvent(tx, {
      ...base,
      type: s.status === 'succeeded' ? 'refund.succeeded' : 'refund.failed',
      resourceId: refund.id,
      dedupeKey: `${refund.id}:refund.${s.status}`,
      data: presentRefund(refund, payment),
    });
    if (s.status === 'succeeded') {
      const type = payment.status === 'refunded' ? 'payment.refunded' : 'payment.partially_refunded';
      recordEvent(tx, {
        ...base,
        type,
        resourceId: refund.id,
        dedupeKey: `${refund.id}:${type}`,
        data: presentPayment(payment),
      });
    }
    await tx.flush();
    settled = true;
    return refund;
  });
  // Counted once the transition committed, and only when this call made it (refunds_total).
  if (settled) workerMetrics.refund(s.status);
  return result;
}
