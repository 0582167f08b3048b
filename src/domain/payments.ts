import type { EntityManager } from '@mikro-orm/postgresql';
import { LockMode } from '@mikro-orm/core';
import { Payment, type PaymentStatus } from '../db/entities';
import { toMajor } from './money';
import { recordEvent, type MerchantEventType } from './events';
import type { ProviderPayment } from '../providers/types';

/** Payment rules: the response shape, the refundable balance, and provider outcomes applied. */

export const TERMINAL_PAYMENT_STATUSES: readonly PaymentStatus[] = [
  'succeeded',
  'failed',
  'refunded',
  'voided',
  'partially_refunded',
];
const REFUNDABLE: readonly PaymentStatus[] = ['succeeded', 'partially_refunded'];

export function refundableMinor(
  p: Pick<Payment, 'status' | 'amountMinor' | 'amountRefundedMinor' | 'amountPendingRefundMinor'>,
): number {
  return REFUNDABLE.includes(p.status) ? p.amountMinor - p.amountRefundedMinor - p.amountPendingRefundMinor : 0;
}

export function presentPayment(p: Payment) {
  return {
    id: p.id,
    externalId: p.externalId,
    amount: toMajor(p.amountMinor, p.currency),
    amountRefunded: toMajor(p.amountRefundedMinor, p.currency),
    amountRefundable: toMajor(refundableMinor(p), p.currency),
    currency: p.currency,
    status: p.status,
    processor: p.processor,
    providerTransactionId: p.providerTransactionId,
    redirectUrl: p.redirectUrl,
    createdAt: p.createdAt.toISOString(),
    updatedAt: p.updatedAt.toISOString(),
    expiresAt: p.expiresAt.toISOString(),
    environment: p.environment,
    customer: p.customer,
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

const EVENT_OF: Partial<Record<PaymentStatus, MerchantEventType>> = {
  succeeded: 'payment.succeeded',
  failed: 'payment.failed',
  voided: 'payment.voided',
};

/**
 * Moves a `created` payment to what the provider says, in one transaction with its outbox
 * event. Settled payments never move back: a late or repeated answer changes nothing.
 */
export async function applyProviderPayment(
  em: EntityManager,
  paymentId: string,
  pp: ProviderPayment,
): Promise<Payment | null> {
  return em.transactional(async (tx) => {
    const payment = await tx.findOne(
      Payment,
      { id: paymentId },
      { lockMode: LockMode.PESSIMISTIC_WRITE, populate: ['merchant'] },
    );
    if (!payment) return null;
    if (payment.status !== 'created') return payment;
    if (pp.status === 'succeeded' && pp.amountMinor !== payment.amountMinor) {
      // A provider capturing another amount than we asked is a provider fault, not a success to record silently.
      throw new Error(`provider captured ${pp.amountMinor} for payment ${paymentId} of ${payment.amountMinor}`);
    }
    payment.providerTransactionId = pp.transactionId;
    payment.redirectUrl = pp.redirectUrl ?? payment.redirectUrl;
    if (pp.savedCardToken) payment.savedCardToken = pp.savedCardToken;
    const next: PaymentStatus =
      pp.status === 'succeeded'
        ? 'succeeded'
        : pp.status === 'failed'
          ? 'failed'
          : pp.status === 'canceled'
            ? 'voided'
            : 'created';
    if (next === 'failed') {
      payment.failureCode = pp.failureCode ?? 'payment_failed';
      payment.failureMessage = pp.failureMessage ?? 'The payment failed.';
    }
    await settle(tx, payment, next);
    return payment;
  });
}

/** Voids a payment that never reached the provider (or was cancelled there) at its expiry. */
export async function voidPayment(em: EntityManager, paymentId: string): Promise<Payment | null> {
  return em.transactional(async (tx) => {
    const payment = await tx.findOne(
      Payment,
      { id: paymentId },
      { lockMode: LockMode.PESSIMISTIC_WRITE, populate: ['merchant'] },
    );
    if (!payment || payment.status !== 'created') return payment;
    await settle(tx, payment, 'voided');
    return payment;
  });
}

async function settle(tx: EntityManager, payment: Payment, next: PaymentStatus): Promise<void> {
  const changed = next !== payment.status;
  payment.status = next;
  payment.updatedAt = new Date();
  const type = changed ? EVENT_OF[next] : undefined;
  if (type) {
    recordEvent(tx, {
      merchant: payment.merchant,
      type,
      resourceId: payment.id,
      dedupeKey: `${payment.id}:${type}`,
      callbackUrl: payment.callbackUrl,
      data: presentPayment(payment),
    });
  }
  await tx.flush();
}
