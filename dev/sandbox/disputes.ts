import { randomBytes } from 'node:crypto';
import { toMajor } from './money';
import { SandboxError, type DisputeStatus, type PaymentRecord, type SandboxStore } from './state';

/**
 * The sandbox's disputes (chargebacks): PRODUCT.md, "Processor lifecycle", `tok_dispute`. A
 * captured `tok_dispute` payment is disputed `disputeSeconds` later for what is left of it (the
 * capture minus its succeeded and pending refunds; nothing when that is 0), reason `fraudulent`,
 * evidence due `evidenceSeconds` after opening. Our adapter submits evidence (`under_review`) or
 * accepts (`accepted`); `/_admin/disputes/{id}/close` decides (`won` | `lost`); a dispute still
 * `needs_response` at its deadline is `lost`. Each dispute is one ledger entry (type `dispute`)
 * whose status changes in place. Like the store, every operation is synchronous.
 */

export const DISPUTE_TOKEN = 'tok_dispute';
export const OPEN_DISPUTE_STATUSES: readonly DisputeStatus[] = ['needs_response', 'under_review'];

export interface DisputeRecord {
  id: string;
  paymentId: string;
  status: DisputeStatus;
  amountMinor: number;
  currency: string;
  reason: string;
  evidenceDueBy: string;
  evidence: { text: string; submittedAt: string } | null;
  webhookUrl: string | null;
  /** The disputed payment's metadata (our adapter finds its payment by `paymentId`). */
  metadata: Record<string, string>;
  createdAt: string;
  updatedAt: string;
  closedAt: string | null;
}

/** A state change of a dispute, and the webhook it sends (none when nothing changed). */
export interface DisputeChange {
  record: DisputeRecord;
  webhook: 'dispute.created' | 'dispute.updated' | 'dispute.closed' | null;
}

const notUpdatable = (d: DisputeRecord) =>
  new SandboxError(
    409,
    'dispute_not_updatable',
    `The dispute is ${d.status}: only a needs_response dispute takes this.`,
  );

export class SandboxDisputes {
  readonly disputes = new Map<string, DisputeRecord>();

  constructor(private readonly store: SandboxStore) {}

  reset(): void {
    this.disputes.clear();
  }

  /**
   * Whether a payment opens a dispute once captured: a `tok_dispute` card capture, never a
   * subscription's invoice charge (PRODUCT.md: disputes are of payments only).
   */
  static disputes(payment: PaymentRecord): boolean {
    return (
      payment.mode === 'card' &&
      payment.status === 'succeeded' &&
      payment.cardToken === DISPUTE_TOKEN &&
      payment.metadata.invoiceId === undefined &&
      payment.metadata.subscriptionId === undefined
    );
  }

  /** Opens the dispute of a captured payment for what is left of it; null when nothing is left. */
  open(paymentId: string, evidenceSeconds: number, now = new Date()): DisputeChange | null {
    const payment = this.store.payments.get(paymentId);
    if (!payment || payment.status !== 'succeeded') return null;
    const amountMinor = payment.amountMinor - this.committedRefunds(paymentId) - this.lostOrOpen(paymentId);
    if (amountMinor <= 0) return null;
    const at = now.toISOString();
    const dispute: DisputeRecord = {
      id: `dsp_${randomBytes(12).toString('hex')}`,
      paymentId,
      status: 'needs_response',
      amountMinor,
      currency: payment.currency,
      reason: 'fraudulent',
      evidenceDueBy: new Date(now.getTime() + evidenceSeconds * 1000).toISOString(),
      evidence: null,
      webhookUrl: payment.webhookUrl,
      metadata: { ...payment.metadata },
      createdAt: at,
      updatedAt: at,
      closedAt: null,
    };
    this.disputes.set(dispute.id, dispute);
    this.store.addLedgerEntry({
      id: `le_${randomBytes(12).toString('hex')}`,
      type: 'dispute',
      status: 'needs_response',
      amountMinor,
      currency: payment.currency,
      idempotencyKey: null,
      reference: null,
      transactionId: dispute.id,
      paymentTransactionId: paymentId,
      metadata: { ...payment.metadata },
      createdAt: at,
    });
    return { record: dispute, webhook: 'dispute.created' };
  }

  get(id: string): DisputeRecord {
    const dispute = this.disputes.get(id);
    if (!dispute) throw new SandboxError(404, 'not_found', `No dispute ${id}.`);
    return dispute;
  }

  /** The disputes of a payment transaction, in creation order. */
  ofPayment(paymentId: string): DisputeRecord[] {
    return [...this.disputes.values()].filter((d) => d.paymentId === paymentId);
  }

  /** Evidence sent: `under_review`. The same evidence again (a retried call) changes nothing. */
  submitEvidence(id: string, text: string): DisputeChange {
    const dispute = this.get(id);
    if (dispute.status === 'under_review' && dispute.evidence?.text === text) return { record: dispute, webhook: null };
    if (dispute.status !== 'needs_response') throw notUpdatable(dispute);
    const at = new Date().toISOString();
    dispute.evidence = { text, submittedAt: at };
    return this.move(dispute, 'under_review', at);
  }

  /** The merchant accepts the dispute: `accepted` (lost). Again: unchanged. */
  accept(id: string): DisputeChange {
    const dispute = this.get(id);
    if (dispute.status === 'accepted') return { record: dispute, webhook: null };
    if (dispute.status !== 'needs_response') throw notUpdatable(dispute);
    return this.move(dispute, 'accepted', new Date().toISOString());
  }

  /** `/_admin/disputes/{id}/close`: the processor decides an open dispute. The same decision again: unchanged. */
  close(id: string, status: 'won' | 'lost'): DisputeChange {
    const dispute = this.get(id);
    if (dispute.status === status) return { record: dispute, webhook: null };
    if (!OPEN_DISPUTE_STATUSES.includes(dispute.status)) {
      throw new SandboxError(409, 'dispute_closed', `The dispute is already ${dispute.status}.`);
    }
    return this.move(dispute, status, new Date().toISOString());
  }

  /** The evidence deadline: a dispute still `needs_response` is lost; any other is left as it is. */
  expire(id: string, now = new Date()): DisputeChange | null {
    const dispute = this.disputes.get(id);
    if (!dispute || dispute.status !== 'needs_response') return null;
    if (now.getTime() < Date.parse(dispute.evidenceDueBy)) return null;
    return this.move(dispute, 'lost', now.toISOString());
  }

  /**
   * A refund on this payment transaction is refused while a dispute is open (`charge_disputed`),
   * and refunds plus lost or accepted disputes never exceed the capture.
   */
  checkRefund(paymentId: string, amountMinor: number): void {
    const disputes = this.ofPayment(paymentId);
    if (disputes.some((d) => OPEN_DISPUTE_STATUSES.includes(d.status))) {
      throw new SandboxError(400, 'charge_disputed', 'The payment has an open dispute: it cannot be refunded.');
    }
    const payment = this.store.payments.get(paymentId);
    if (!payment) return;
    const left = payment.amountMinor - this.committedRefunds(paymentId) - this.lostOrOpen(paymentId);
    if (amountMinor > left) {
      throw new SandboxError(
        400,
        'amount_exceeds_captured',
        `Refunds would exceed the captured amount: ${toMajor(Math.max(0, left), payment.currency)} ${payment.currency} left to refund.`,
      );
    }
  }

  private committedRefunds(paymentId: string): number {
    let committed = 0;
    for (const refund of this.store.refunds.values()) {
      if (refund.paymentId === paymentId && refund.status !== 'failed') committed += refund.amountMinor;
    }
    return committed;
  }

  /** What open, lost and accepted disputes of the payment take from it. */
  private lostOrOpen(paymentId: string): number {
    return this.ofPayment(paymentId)
      .filter((d) => d.status !== 'won')
      .reduce((sum, d) => sum + d.amountMinor, 0);
  }

  private move(dispute: DisputeRecord, status: DisputeStatus, at: string): DisputeChange {
    dispute.status = status;
    dispute.updatedAt = at;
    const closed = !OPEN_DISPUTE_STATUSES.includes(status);
    if (closed) dispute.closedAt = at;
    const entry = this.store.ledgerEntry(dispute.id);
    if (entry) entry.status = status;
    return { record: dispute, webhook: closed ? 'dispute.closed' : 'dispute.updated' };
  }
}

export function disputeJson(d: DisputeRecord) {
  return {
    object: 'dispute' as const,
    id: d.id,
    paymentId: d.paymentId,
    status: d.status,
    amount: toMajor(d.amountMinor, d.currency),
    currency: d.currency,
    reason: d.reason,
    evidenceDueBy: d.evidenceDueBy,
    evidence: d.evidence ? { ...d.evidence } : null,
    metadata: { ...d.metadata },
    createdAt: d.createdAt,
    updatedAt: d.updatedAt,
    closedAt: d.closedAt,
  };
}
