import type { EntityManager } from '@mikro-orm/postgresql';
import { LockMode } from '@mikro-orm/core';
import { Dispute, Payment, type DisputeStatus, type KeyEnvironment } from '../db/entities';
import { AppError } from '../errors';
import { newId } from '../ids';
import { toMajor } from '../rules/money';
import type { ProviderDispute } from '../providers/types';
import { ProviderMismatchError, differences } from '../providers/errors';
import { recordEvent, type EventInput, type MerchantEventType } from './events';
import type { RecordScope } from './scope';

/**
 * Disputes (chargebacks): PRODUCT.md, "Processor lifecycle"; decision 0056. The processor opens
 * and decides them; this service records what it says, keeps the merchant's evidence, and never
 * closes one itself. Every change of a dispute is written in one transaction holding its
 * payment's row lock (the lock every refund path takes), with the payment's dispute balances
 * (`amountDisputedMinor`: open, lost and accepted disputes; `openDisputes`) and the outbox
 * events: a refund decided under that lock sees every dispute that committed before it.
 */

export const OPEN_DISPUTE_STATUSES: readonly DisputeStatus[] = ['needs_response', 'under_review'];

export const isOpenDispute = (status: DisputeStatus): boolean => OPEN_DISPUTE_STATUSES.includes(status);

/** What the API shows of a dispute. */
export function presentDispute(d: Dispute) {
  return {
    id: d.id,
    paymentId: d.payment.id,
    providerDisputeId: d.providerDisputeId,
    amount: toMajor(d.amountMinor, d.currency),
    currency: d.currency,
    reason: d.reason,
    status: d.status,
    evidenceDueBy: d.evidenceDueBy.toISOString(),
    evidence:
      d.evidenceText === null
        ? null
        : { text: d.evidenceText, submittedAt: d.evidenceSubmittedAt ? d.evidenceSubmittedAt.toISOString() : null },
    createdAt: d.createdAt.toISOString(),
    updatedAt: d.updatedAt.toISOString(),
    closedAt: d.closedAt ? d.closedAt.toISOString() : null,
  };
}

export type DisputeResponse = ReturnType<typeof presentDispute>;

/** A dispute's event, to where its payment's events go. */
function disputeEvent(type: MerchantEventType, dispute: Dispute, payment: Payment, dedupe: string): EventInput {
  return {
    type,
    resourceId: dispute.id,
    dedupeKey: `${dispute.id}:${dedupe}`,
    callbackUrl: payment.callbackUrl,
    environment: dispute.environment,
    data: presentDispute(dispute),
  };
}

/** The payment's dispute balances from its disputes as they are now (the payment is locked). */
async function rebalance(tx: EntityManager, payment: Payment, now: Date): Promise<void> {
  await tx.flush();
  const disputes = await tx.find(Dispute, { payment: payment.id }, { fields: ['status', 'amountMinor'] });
  payment.amountDisputedMinor = disputes
    .filter((d) => d.status !== 'won')
    .reduce((sum, d) => sum + Number(d.amountMinor), 0);
  payment.openDisputes = disputes.filter((d) => isOpenDispute(d.status)).length;
  payment.updatedAt = now;
  await tx.flush();
}

/**
 * Moves a dispute to the processor's status (a closed one never moves again), with
 * `dispute.updated` or `dispute.closed`; answers whether it changed.
 */
function follow(tx: EntityManager, dispute: Dispute, payment: Payment, pd: ProviderDispute, now: Date): boolean {
  const differ = differences(
    { transactionId: payment.providerTransactionId ?? undefined, currency: dispute.currency },
    pd,
  );
  if (differ.length > 0) throw new ProviderMismatchError(dispute.id, differ);
  if (!isOpenDispute(dispute.status)) return false;
  const moved = pd.status !== dispute.status;
  const reamounted = pd.amountMinor > 0 && pd.amountMinor !== dispute.amountMinor;
  const redated = pd.evidenceDueBy.getTime() !== dispute.evidenceDueBy.getTime();
  if (!moved && !reamounted && !redated) return false;
  dispute.status = pd.status;
  if (reamounted) dispute.amountMinor = pd.amountMinor;
  if (redated) dispute.evidenceDueBy = pd.evidenceDueBy;
  dispute.updatedAt = now;
  const closed = !isOpenDispute(pd.status);
  if (closed) dispute.closedAt = now;
  const type: MerchantEventType = closed ? 'dispute.closed' : 'dispute.updated';
  const dedupe = closed ? 'dispute.closed' : `dispute.updated:${now.getTime()}`;
  recordEvent(tx, { merchant: payment.merchant, ...disputeEvent(type, dispute, payment, dedupe) });
  return true;
}

/** Which payment a processor's dispute is about, as far as the webhook that told us can say. */
export interface DisputedPaymentRef {
  processor: string;
  /** The verified merchant (Stripe: the route's merchant) and environment (the secret's). */
  merchantId?: string;
  environment?: KeyEnvironment;
  /** Our payment id, when the processor carries it (the sandbox's metadata). */
  paymentId?: string;
}

/**
 * A processor's dispute, from its webhook: the row created (with `dispute.created`, and
 * `dispute.closed` if it arrives decided) or, if it exists already, moved to what the processor
 * says. Idempotent on (processor, providerDisputeId). Only a payment (never an invoice charge)
 * of that processor, merchant and environment whose transaction is the disputed one is ever
 * touched; null when there is none.
 */
export async function recordProviderDispute(
  em: EntityManager,
  ref: DisputedPaymentRef,
  pd: ProviderDispute,
): Promise<{ dispute: Dispute; created: boolean } | null> {
  return em.transactional(async (tx) => {
    // Its row only: with the merchant populated, `for update` would lock the merchant's row too.
    const payment = await tx.findOne(
      Payment,
      {
        processor: ref.processor,
        providerTransactionId: pd.transactionId,
        ...(ref.paymentId ? { id: ref.paymentId } : {}),
        ...(ref.merchantId ? { merchant: ref.merchantId } : {}),
        ...(ref.environment ? { environment: ref.environment } : {}),
      },
      { lockMode: LockMode.PESSIMISTIC_WRITE },
    );
    if (!payment) return null;
    const now = new Date();
    const existing = await tx.findOne(
      Dispute,
      { processor: ref.processor, providerDisputeId: pd.disputeId },
      { lockMode: LockMode.PESSIMISTIC_WRITE },
    );
    if (existing) {
      if (existing.payment.id !== payment.id) return null;
      if (follow(tx, existing, payment, pd, now)) await rebalance(tx, payment, now);
      return { dispute: existing, created: false };
    }
    if (pd.amountMinor <= 0 || pd.currency !== payment.currency) {
      throw new ProviderMismatchError(payment.id, [
        `dispute ${pd.disputeId}: ${pd.amountMinor} ${pd.currency} on a ${payment.currency} payment`,
      ]);
    }
    const closed = !isOpenDispute(pd.status);
    const dispute = tx.create(Dispute, {
      id: newId('dispute'),
      merchant: payment.merchant,
      payment,
      environment: payment.environment,
      processor: ref.processor,
      providerDisputeId: pd.disputeId,
      amountMinor: pd.amountMinor,
      currency: pd.currency,
      reason: pd.reason.slice(0, 64),
      status: pd.status,
      evidenceDueBy: pd.evidenceDueBy,
      evidenceText: null,
      evidenceSubmittedAt: null,
      createdAt: now,
      updatedAt: now,
      closedAt: closed ? now : null,
    });
    recordEvent(tx, {
      merchant: payment.merchant,
      ...disputeEvent('dispute.created', dispute, payment, 'dispute.created'),
    });
    if (closed) {
      recordEvent(tx, {
        merchant: payment.merchant,
        ...disputeEvent('dispute.closed', dispute, payment, 'dispute.closed'),
      });
    }
    await rebalance(tx, payment, now);
    return { dispute, created: true };
  });
}

/** A dispute and its payment, both locked, in the order every path locks (payment, then dispute). */
async function lockDispute(
  tx: EntityManager,
  disputeId: string,
): Promise<{ dispute: Dispute; payment: Payment } | null> {
  const head = await tx.findOne(Dispute, { id: disputeId }, { fields: ['payment'] });
  if (!head) return null;
  const payment = await tx.findOneOrFail(Payment, { id: head.payment.id }, { lockMode: LockMode.PESSIMISTIC_WRITE });
  const dispute = await tx.findOneOrFail(
    Dispute,
    { id: disputeId },
    { lockMode: LockMode.PESSIMISTIC_WRITE, refresh: true },
  );
  return { dispute, payment };
}

/**
 * The processor's answer about a dispute applied (the workflow's check, an API call's answer);
 * `evidence`: the text the processor was just sent. Answers the dispute, or null when unknown.
 */
export async function applyProviderDispute(
  em: EntityManager,
  disputeId: string,
  pd: ProviderDispute,
  evidence?: string,
): Promise<Dispute | null> {
  return em.transactional(async (tx) => {
    const locked = await lockDispute(tx, disputeId);
    if (!locked) return null;
    const { dispute, payment } = locked;
    const now = new Date();
    if (evidence !== undefined && dispute.evidenceSubmittedAt === null) {
      dispute.evidenceText = evidence;
      dispute.evidenceSubmittedAt = now;
      dispute.updatedAt = now;
    }
    if (follow(tx, dispute, payment, pd, now)) await rebalance(tx, payment, now);
    else await tx.flush();
    return dispute;
  });
}

/**
 * `dispute.evidence_due_soon`, once, while the dispute still needs a response; answers whether it
 * was recorded now.
 */
export async function recordEvidenceDueSoon(em: EntityManager, disputeId: string): Promise<boolean> {
  return em.transactional(async (tx) => {
    const locked = await lockDispute(tx, disputeId);
    if (!locked || locked.dispute.status !== 'needs_response') return false;
    const { dispute, payment } = locked;
    recordEvent(tx, {
      merchant: payment.merchant,
      ...disputeEvent('dispute.evidence_due_soon', dispute, payment, 'dispute.evidence_due_soon'),
    });
    await tx.flush();
    return true;
  });
}

const notFound = () => new AppError('not_found', 'Dispute not found.');

/** A dispute of the caller (its merchant and environment), with its payment; null otherwise. */
export async function findDispute(em: EntityManager, scope: RecordScope, disputeId: string): Promise<Dispute | null> {
  return em.fork().findOne(Dispute, { id: disputeId, merchant: scope.merchantId, environment: scope.environment });
}

/** `dispute_not_updatable` unless the dispute still needs a response. */
export function assertUpdatable(dispute: Pick<Dispute, 'status'>): void {
  if (dispute.status !== 'needs_response') {
    throw new AppError(
      'dispute_not_updatable',
      `The dispute is ${dispute.status}: only a needs_response dispute takes this.`,
      {
        status: dispute.status,
      },
    );
  }
}

/** The merchant's evidence kept (not sent), only while the dispute needs a response. */
export async function saveEvidenceDraft(
  em: EntityManager,
  scope: RecordScope,
  disputeId: string,
  text: string,
): Promise<Dispute> {
  return em.transactional(async (tx) => {
    const head = await tx.findOne(Dispute, {
      id: disputeId,
      merchant: scope.merchantId,
      environment: scope.environment,
    });
    if (!head) throw notFound();
    const locked = await lockDispute(tx, disputeId);
    if (!locked) throw notFound();
    assertUpdatable(locked.dispute);
    locked.dispute.evidenceText = text;
    locked.dispute.updatedAt = new Date();
    await tx.flush();
    return locked.dispute;
  });
}

export { notFound as disputeNotFound };

/** GET /disputes filters. */
export interface DisputeFilters {
  status?: DisputeStatus;
  paymentId?: string;
}

/**
 * The caller's disputes, newest first, by keyset on (created_at, id) like every list (decision
 * 0046; index disputes_merchant_env_created_idx), one row more than the page to know of a next one.
 */
export async function listDisputes(
  em: EntityManager,
  scope: RecordScope,
  filters: DisputeFilters,
  page: { limit: number; after?: { createdAt: Date; id: string } },
): Promise<{ items: DisputeResponse[]; next: { createdAt: Date; id: string } | null }> {
  const after = page.after;
  const rows = await em.fork().find(
    Dispute,
    {
      merchant: scope.merchantId,
      environment: scope.environment,
      ...(filters.status ? { status: filters.status } : {}),
      ...(filters.paymentId ? { payment: filters.paymentId } : {}),
      ...(after
        ? { $or: [{ createdAt: { $lt: after.createdAt } }, { createdAt: after.createdAt, id: { $lt: after.id } }] }
        : {}),
    },
    { orderBy: { createdAt: 'desc', id: 'desc' }, limit: page.limit + 1 },
  );
  const kept = rows.slice(0, page.limit);
  const last = kept[kept.length - 1];
  return {
    items: kept.map(presentDispute),
    next: rows.length > page.limit && last ? { createdAt: last.createdAt, id: last.id } : null,
  };
}
