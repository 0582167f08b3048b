import { randomBytes } from 'node:crypto';
import { toMajor } from './money';

/**
 * The sandbox's in-memory state and its operations. Every operation here is synchronous:
 * an idempotency-key or reference lookup and the insert that follows it can never be
 * interleaved with another request, so concurrent duplicates create exactly one record.
 */

export class SandboxError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = 'SandboxError';
  }
}

/** `decline`: every card charge with a known token is declined (`card_declined`), e.g. a card that stopped working. */
export const PAYMENT_FAULT_MODES = ['ok', 'unavailable', 'invalid', 'timeout', 'decline'] as const;
export const REFUND_FAULT_MODES = ['ok', 'unavailable', 'invalid', 'timeout', 'pending', 'fail'] as const;
export type PaymentFaultMode = (typeof PAYMENT_FAULT_MODES)[number];
export type RefundFaultMode = (typeof REFUND_FAULT_MODES)[number];

export interface Faults {
  payments: PaymentFaultMode;
  refunds: RefundFaultMode;
  latencyMs: number;
}

export const NO_FAULTS: Faults = { payments: 'ok', refunds: 'ok', latencyMs: 0 };

export type PaymentMode = 'card' | 'checkout' | 'setup';
/** A dispute's status (dev/sandbox/disputes.ts): open (`needs_response`, `under_review`) or decided. */
export const DISPUTE_STATUSES = ['needs_response', 'under_review', 'won', 'lost', 'accepted'] as const;
export type DisputeStatus = (typeof DISPUTE_STATUSES)[number];
export type PaymentStatus = 'pending' | 'succeeded' | 'failed' | 'canceled';
export type RefundStatus = 'pending' | 'succeeded' | 'failed';

export interface PaymentRecord {
  id: string;
  mode: PaymentMode;
  status: PaymentStatus;
  amountMinor: number;
  currency: string;
  idempotencyKey: string;
  cardToken: string | null;
  failureCode: string | null;
  failureMessage: string | null;
  checkoutUrl: string | null;
  savedCardToken: string | null;
  saveCard: boolean;
  returnUrl: string | null;
  webhookUrl: string | null;
  description: string | null;
  metadata: Record<string, string>;
  createdAt: string;
}

export interface RefundRecord {
  id: string;
  paymentId: string;
  status: RefundStatus;
  amountMinor: number;
  currency: string;
  referenceId: string;
  /** The caller's Idempotency-Key, when it sent one. */
  idempotencyKey: string | null;
  reason: string | null;
  webhookUrl: string | null;
  failureCode: string | null;
  failureMessage: string | null;
  metadata: Record<string, string>;
  createdAt: string;
}

export interface LedgerEntry {
  id: string;
  type: 'capture' | 'refund' | 'dispute';
  /** A dispute's entry: its status (dev/sandbox/disputes.ts), changed in place. */
  status: 'succeeded' | 'failed' | 'pending' | DisputeStatus;
  amountMinor: number;
  currency: string;
  idempotencyKey: string | null;
  reference: string | null;
  transactionId: string;
  paymentTransactionId: string | null;
  metadata: Record<string, string>;
  createdAt: string;
}

export interface CreatePaymentInput {
  idempotencyKey: string;
  amountMinor: number;
  currency: string;
  mode: PaymentMode;
  cardToken: string | null;
  returnUrl: string | null;
  webhookUrl: string | null;
  saveCard: boolean;
  description: string | null;
  metadata: Record<string, string>;
}

export interface CreateRefundInput {
  paymentId: string;
  amountMinor: number;
  currency: string;
  referenceId: string;
  idempotencyKey: string | null;
  reason: string | null;
  webhookUrl: string | null;
  metadata: Record<string, string>;
}

/** A state change that happened after the first answer: the server sends its webhook. */
export interface Settlement<T> {
  record: T;
  changed: boolean;
}

export function newSandboxId(prefix: 'txn' | 'rf' | 'le' | 'whevt' | 'tok_saved'): string {
  return `${prefix}_${randomBytes(12).toString('hex')}`;
}

/** Card tokens that capture: `tok_dispute` is then disputed (dev/sandbox/disputes.ts). */
const CAPTURES = new Set(['tok_success', 'tok_dispute']);

const DECLINES: Record<string, { code: string; message: string }> = {
  tok_decline: { code: 'card_declined', message: 'The card was declined.' },
  tok_insufficient_funds: { code: 'insufficient_funds', message: 'The card has insufficient funds.' },
};

export class SandboxStore {
  readonly payments = new Map<string, PaymentRecord>();
  readonly paymentsByKey = new Map<string, PaymentRecord>();
  readonly refunds = new Map<string, RefundRecord>();
  /** reference_id -> its refunds, one per payment transaction at most, in creation order. */
  readonly refundsByReference = new Map<string, RefundRecord[]>();
  readonly refundsByKey = new Map<string, RefundRecord>();
  readonly ledger: LedgerEntry[] = [];
  private readonly ledgerByTransaction = new Map<string, LedgerEntry>();
  /** Card tokens this sandbox issued (`tok_saved_...`) -> the payment that saved them. */
  readonly savedTokens = new Map<string, string>();
  faults: Faults = { ...NO_FAULTS };

  reset(): void {
    this.payments.clear();
    this.paymentsByKey.clear();
    this.refunds.clear();
    this.refundsByReference.clear();
    this.refundsByKey.clear();
    this.ledger.length = 0;
    this.ledgerByTransaction.clear();
    this.savedTokens.clear();
    this.faults = { ...NO_FAULTS };
  }

  // ---- payments ----

  createPayment(input: CreatePaymentInput, checkoutBaseUrl: string, declineCards = false): PaymentRecord {
    const existing = this.paymentsByKey.get(input.idempotencyKey);
    if (existing) {
      const differs: string[] = [];
      if (existing.amountMinor !== input.amountMinor) differs.push('amount');
      if (existing.currency !== input.currency) differs.push('currency');
      if (existing.mode !== input.mode) differs.push('mode');
      if (existing.cardToken !== input.cardToken) differs.push('cardToken');
      if (differs.length > 0) {
        throw new SandboxError(
          409,
          'idempotency_key_reused',
          `Idempotency-Key was already used with another ${differs.join(', ')}.`,
        );
      }
      return existing;
    }

    let status: PaymentStatus = 'pending';
    let failure: { code: string; message: string } | undefined;
    if (input.mode === 'card') {
      const token = input.cardToken ?? '';
      failure = DECLINES[token];
      if (!failure && !CAPTURES.has(token) && !this.savedTokens.has(token)) {
        throw new SandboxError(400, 'invalid_card_token', 'Unknown card token.');
      }
      if (declineCards) failure ??= DECLINES.tok_decline;
      status = failure ? 'failed' : 'succeeded';
    }
    // A setup with a token verifies the card and saves it at once: no page, nothing moves. A
    // token whose charges decline is still a card (as a Stripe SetupIntent attaches it).
    const verify = input.mode === 'setup' && input.cardToken !== null;
    if (verify) {
      const token = input.cardToken ?? '';
      if (!DECLINES[token] && !CAPTURES.has(token) && !this.savedTokens.has(token)) {
        throw new SandboxError(400, 'invalid_card_token', 'Unknown card token.');
      }
      status = 'succeeded';
    }

    const id = newSandboxId('txn');
    const payment: PaymentRecord = {
      id,
      mode: input.mode,
      status,
      amountMinor: input.amountMinor,
      currency: input.currency,
      idempotencyKey: input.idempotencyKey,
      cardToken: input.cardToken,
      failureCode: failure?.code ?? null,
      failureMessage: failure?.message ?? null,
      checkoutUrl: input.mode === 'card' || verify ? null : `${checkoutBaseUrl}/checkout/${id}`,
      savedCardToken: verify ? input.cardToken : null,
      saveCard: input.saveCard,
      returnUrl: input.returnUrl,
      webhookUrl: input.webhookUrl,
      description: input.description,
      metadata: input.metadata,
      createdAt: new Date().toISOString(),
    };
    if (input.mode === 'card' && status === 'succeeded' && input.saveCard) {
      payment.savedCardToken = this.savedTokens.has(input.cardToken ?? '') ? input.cardToken : this.issueToken(id);
    }
    this.payments.set(id, payment);
    this.paymentsByKey.set(input.idempotencyKey, payment);
    if (input.mode === 'card') this.recordCapture(payment);
    return payment;
  }

  getPayment(id: string): PaymentRecord {
    const payment = this.payments.get(id);
    if (!payment) throw new SandboxError(404, 'not_found', `No payment ${id}.`);
    return payment;
  }

  /** A pending checkout/setup payment becomes `canceled`; any other status is left as it is. */
  cancelPayment(id: string): Settlement<PaymentRecord> {
    const payment = this.getPayment(id);
    if (payment.status !== 'pending') return { record: payment, changed: false };
    payment.status = 'canceled';
    return { record: payment, changed: true };
  }

  /** The customer's Pay or Decline on the hosted page. */
  checkoutAct(id: string, action: 'pay' | 'decline'): Settlement<PaymentRecord> {
    const payment = this.payments.get(id);
    if (!payment || payment.mode === 'card') throw new SandboxError(404, 'not_found', `No checkout ${id}.`);
    if (payment.status === 'canceled') throw new SandboxError(410, 'payment_canceled', 'This payment was canceled.');
    if (payment.status !== 'pending') return { record: payment, changed: false };
    if (action === 'pay') {
      payment.status = 'succeeded';
      if (payment.mode === 'setup' || payment.saveCard) payment.savedCardToken = this.issueToken(payment.id);
    } else {
      payment.status = 'failed';
      payment.failureCode = 'card_declined';
      payment.failureMessage = 'The card was declined.';
    }
    // A setup only authorizes and saves the card: nothing moves, nothing in the ledger.
    if (payment.mode === 'checkout') this.recordCapture(payment);
    return { record: payment, changed: true };
  }

  private issueToken(paymentId: string): string {
    const token = newSandboxId('tok_saved');
    this.savedTokens.set(token, paymentId);
    return token;
  }

  private recordCapture(payment: PaymentRecord): void {
    this.addLedgerEntry({
      id: newSandboxId('le'),
      type: 'capture',
      status: payment.status === 'succeeded' ? 'succeeded' : 'failed',
      amountMinor: payment.amountMinor,
      currency: payment.currency,
      idempotencyKey: payment.idempotencyKey,
      reference: null,
      transactionId: payment.id,
      paymentTransactionId: null,
      metadata: payment.metadata,
      createdAt: new Date().toISOString(),
    });
  }

  // ---- refunds ----

  /**
   * Deduplicated by the Idempotency-Key when one is sent, and by reference_id within one payment
   * transaction: one account serves many merchants, and two of them may use the same reference.
   */
  createRefund(input: CreateRefundInput, mode: RefundFaultMode): RefundRecord {
    const keyed = input.idempotencyKey === null ? undefined : this.refundsByKey.get(input.idempotencyKey);
    if (keyed) {
      const differs: string[] = [];
      if (keyed.paymentId !== input.paymentId) differs.push('paymentId');
      if (keyed.amountMinor !== input.amountMinor) differs.push('amount');
      if (keyed.currency !== input.currency) differs.push('currency');
      if (keyed.referenceId !== input.referenceId) differs.push('reference_id');
      if (differs.length > 0) {
        throw new SandboxError(
          409,
          'idempotency_key_reused',
          `Idempotency-Key was already used with another ${differs.join(', ')}.`,
        );
      }
      return keyed;
    }
    const existing = this.findRefund({ referenceId: input.referenceId, paymentId: input.paymentId })[0];
    if (existing) {
      // Says nothing of the other refund: the caller learns only that the pair is taken.
      if (existing.amountMinor !== input.amountMinor || existing.currency !== input.currency) {
        throw new SandboxError(
          409,
          'reference_reused',
          'reference_id was already used for another refund of this payment.',
        );
      }
      return existing;
    }

    const payment = this.payments.get(input.paymentId);
    if (!payment) throw new SandboxError(404, 'not_found', `No payment ${input.paymentId}.`);
    if (payment.mode === 'setup' || payment.status !== 'succeeded') {
      throw new SandboxError(400, 'payment_not_refundable', `Payment ${payment.id} is not a succeeded capture.`);
    }
    if (payment.currency !== input.currency) {
      throw new SandboxError(400, 'invalid_request', `currency: the payment is in ${payment.currency}.`);
    }
    let committed = 0;
    for (const refund of this.refunds.values()) {
      if (refund.paymentId === payment.id && refund.status !== 'failed') committed += refund.amountMinor;
    }
    if (committed + input.amountMinor > payment.amountMinor) {
      const left = toMajor(payment.amountMinor - committed, payment.currency);
      throw new SandboxError(
        400,
        'amount_exceeds_captured',
        `Refunds would exceed the captured amount: ${left} ${payment.currency} left to refund.`,
      );
    }

    const failed = mode === 'fail';
    const refund: RefundRecord = {
      id: newSandboxId('rf'),
      paymentId: payment.id,
      status: failed ? 'failed' : mode === 'pending' ? 'pending' : 'succeeded',
      amountMinor: input.amountMinor,
      currency: input.currency,
      referenceId: input.referenceId,
      idempotencyKey: input.idempotencyKey,
      reason: input.reason,
      // A refund without its own webhook URL reports to its payment's.
      webhookUrl: input.webhookUrl ?? payment.webhookUrl,
      failureCode: failed ? 'insufficient_balance' : null,
      failureMessage: failed ? 'The merchant balance is insufficient for this refund.' : null,
      metadata: input.metadata,
      createdAt: new Date().toISOString(),
    };
    this.refunds.set(refund.id, refund);
    const sameReference = this.refundsByReference.get(refund.referenceId);
    if (sameReference) sameReference.push(refund);
    else this.refundsByReference.set(refund.referenceId, [refund]);
    if (refund.idempotencyKey !== null) this.refundsByKey.set(refund.idempotencyKey, refund);
    this.addLedgerEntry({
      id: newSandboxId('le'),
      type: 'refund',
      status: refund.status,
      amountMinor: refund.amountMinor,
      currency: refund.currency,
      idempotencyKey: refund.idempotencyKey,
      reference: refund.referenceId,
      transactionId: refund.id,
      paymentTransactionId: payment.id,
      metadata: refund.metadata,
      createdAt: refund.createdAt,
    });
    return refund;
  }

  getRefund(id: string): RefundRecord {
    const refund = this.refunds.get(id);
    if (!refund) throw new SandboxError(404, 'not_found', `No refund ${id}.`);
    return refund;
  }

  /** The refunds matching every given field, in creation order. */
  findRefund(by: { idempotencyKey?: string; referenceId?: string; paymentId?: string }): RefundRecord[] {
    let found: RefundRecord[];
    if (by.idempotencyKey !== undefined) {
      const keyed = this.refundsByKey.get(by.idempotencyKey);
      found = keyed ? [keyed] : [];
    } else if (by.referenceId !== undefined) {
      found = this.refundsByReference.get(by.referenceId) ?? [];
    } else {
      found = [...this.refunds.values()];
    }
    return found.filter(
      (r) =>
        (by.referenceId === undefined || r.referenceId === by.referenceId) &&
        (by.paymentId === undefined || r.paymentId === by.paymentId),
    );
  }

  /**
   * `/_admin/settle`: a pending refund succeeds or fails; its ledger entry follows. A reference
   * used on several payment transactions needs the transaction to name one refund.
   */
  settleRefund(reference: string, status: 'succeeded' | 'failed', paymentTransactionId?: string): RefundRecord {
    const matches = this.findRefund({ referenceId: reference, paymentId: paymentTransactionId });
    const refund = matches[0];
    if (!refund) {
      const on = paymentTransactionId === undefined ? '' : ` on payment ${paymentTransactionId}`;
      throw new SandboxError(404, 'not_found', `No refund with reference_id ${reference}${on}.`);
    }
    if (matches.length > 1) {
      throw new SandboxError(
        409,
        'reference_ambiguous',
        `${matches.length} refunds have reference_id ${reference}: add paymentTransactionId to name one.`,
      );
    }
    if (refund.status !== 'pending') {
      throw new SandboxError(409, 'refund_not_pending', `The refund is already ${refund.status}.`);
    }
    refund.status = status;
    if (status === 'failed') {
      refund.failureCode = 'insufficient_balance';
      refund.failureMessage = 'The merchant balance is insufficient for this refund.';
    }
    const entry = this.ledgerByTransaction.get(refund.id);
    if (entry) entry.status = status;
    return refund;
  }

  addLedgerEntry(entry: LedgerEntry): void {
    this.ledger.push(entry);
    this.ledgerByTransaction.set(entry.transactionId, entry);
  }

  /** The ledger entry of a capture, refund or dispute, by its transaction id. */
  ledgerEntry(transactionId: string): LedgerEntry | undefined {
    return this.ledgerByTransaction.get(transactionId);
  }
}

// ---- wire shapes (major units) ----

export function paymentJson(p: PaymentRecord) {
  return {
    object: 'payment' as const,
    id: p.id,
    mode: p.mode,
    status: p.status,
    amount: toMajor(p.amountMinor, p.currency),
    currency: p.currency,
    idempotencyKey: p.idempotencyKey,
    failureCode: p.failureCode,
    failureMessage: p.failureMessage,
    checkoutUrl: p.checkoutUrl,
    savedCardToken: p.savedCardToken,
    metadata: { ...p.metadata },
    createdAt: p.createdAt,
  };
}

export function refundJson(r: RefundRecord) {
  return {
    object: 'refund' as const,
    id: r.id,
    paymentId: r.paymentId,
    status: r.status,
    amount: toMajor(r.amountMinor, r.currency),
    currency: r.currency,
    reference_id: r.referenceId,
    idempotencyKey: r.idempotencyKey,
    failureCode: r.failureCode,
    failureMessage: r.failureMessage,
    metadata: { ...r.metadata },
    createdAt: r.createdAt,
  };
}

export function ledgerEntryJson(e: LedgerEntry) {
  return {
    id: e.id,
    type: e.type,
    status: e.status,
    amount: toMajor(e.amountMinor, e.currency),
    currency: e.currency,
    idempotencyKey: e.idempotencyKey,
    reference: e.reference,
    transactionId: e.transactionId,
    paymentTransactionId: e.paymentTransactionId,
    metadata: { ...e.metadata },
    createdAt: e.createdAt,
  };
}
