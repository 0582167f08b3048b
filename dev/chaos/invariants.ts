/**
 * The money invariants of PRODUCT.md, checked after a chaos run against three witnesses that
 * do not trust each other: the provider's ledger (what really moved), the database (what we
 * recorded) and the answers the load got (what we promised the merchant). Pure functions over
 * plain data, so they are unit-tested apart from the run.
 */

import type { HeldSpan } from './endpoints';

export interface LedgerEntryView {
  id: string;
  type: 'capture' | 'refund' | 'dispute';
  /**
   * A capture: `requires_action` (3-D Secure) or `processing` while undecided, then `succeeded`,
   * `failed` or `canceled`, changed in place (the ledger keeps no history). A refund: `pending`,
   * then its outcome. A dispute: needs_response, under_review, won, lost, accepted.
   */
  status:
    | 'succeeded'
    | 'failed'
    | 'pending'
    | 'requires_action'
    | 'processing'
    | 'canceled'
    | 'needs_response'
    | 'under_review'
    | 'won'
    | 'lost'
    | 'accepted';
  amountMinor: number;
  currency: string;
  metadata: Record<string, string>;
  createdAt: string;
  /** The provider's id of this capture, refund or dispute. */
  transactionId?: string;
  /** A refund's or dispute's capture (its `transactionId`). */
  paymentTransactionId?: string | null;
  idempotencyKey?: string | null;
}

export interface PaymentRow {
  id: string;
  merchantId: string;
  status: string;
  amountMinor: number;
  amountRefundedMinor: number;
  amountPendingRefundMinor: number;
  /** The card token of a token payment (null for a hosted one). */
  cardToken?: string | null;
}

export interface RefundRow {
  id: string;
  paymentId: string;
  status: string;
  amountMinor: number;
}

export interface DisputeRow {
  id: string;
  paymentId: string;
  status: string;
  amountMinor: number;
  /** The processor's id (its ledger entry's `transactionId`). */
  providerDisputeId?: string;
}

export interface InvoiceRow {
  id: string;
  subscriptionId: string;
  status: string;
  amountMinor: number;
}

export interface SubscriptionRow {
  id: string;
  status: string;
}

export interface EmailRow {
  id: string;
  sentAt: Date | null;
}

/** What the load was told, record by record. */
export interface Acknowledgement {
  kind: 'payment' | 'refund' | 'subscription' | 'cancellation';
  id: string;
  merchantId: string;
  /** The status in the (last) 2xx answer. */
  status: string;
  /** When the answer arrived (epoch ms). */
  at: number;
  amountMinor?: number;
  paymentId?: string;
}

export interface InvariantInput {
  ledger: LedgerEntryView[];
  payments: PaymentRow[];
  refunds: RefundRow[];
  /** Our dispute rows (absent: a run without disputes). */
  disputes?: DisputeRow[];
  invoices: InvoiceRow[];
  subscriptions: SubscriptionRow[];
  emails: EmailRow[];
  /** Every delivered mail file: its Message-ID and when the catcher wrote it (epoch ms). */
  deliveries: Array<{ messageId: string; at: number }>;
  /** When a worker process was SIGKILLed (epoch ms). */
  workerKills: number[];
  acknowledgements: Acknowledgement[];
  /** Answers with status >= 500 other than the documented 502/503 (each one is a violation). */
  serverErrors: Array<{ operation: string; status: number; code: string }>;
  /** How many answers the load got in all. */
  answers: number;
  crossMerchantProbes: number;
  /** Cross-merchant probes that did not answer 404. */
  crossMerchantLeaks: Array<{ path: string; status: number }>;
  /**
   * Capture transaction id -> the last moment (epoch ms, when the request that saw it was sent)
   * the run saw it `requires_action` or `processing` in the ledger (it samples the ledger through
   * the load and the drain). Statuses only move forward, so the attempt was undecided from its
   * `createdAt` until then.
   */
  ledgerOpenSeenAt?: Record<string, number>;
}

export interface InvariantResult {
  name: string;
  checked: number;
  violations: string[];
  /** Tolerated events worth reporting (not violations). */
  notes?: string[];
}

/**
 * SMTP has no idempotency key: a sender killed after the server accepted an email and before
 * `sent_at` was recorded resends it once its claim lapses, with the same Message-ID (receiving
 * systems drop the copy). Another copy is tolerated only when a worker died within this long
 * after each earlier copy arrived (a resend can meet another kill); any other duplicate is a
 * violation.
 */
export const RESEND_AFTER_KILL_WINDOW_MS = 5_000;

const SUCCEEDED_PAYMENT = new Set(['succeeded', 'partially_refunded', 'refunded']);
/** Cards whose charges the processor does not decide at once (3-D Secure, processing). */
export const LIFECYCLE_CARDS = new Set(['tok_3ds', 'tok_3ds_offsession', 'tok_processing', 'tok_processing_fail']);
const UNDECIDED = new Set(['requires_action', 'processing']);

function countBy<T>(items: T[], key: (item: T) => string | undefined): Map<string, T[]> {
  const map = new Map<string, T[]>();
  for (const item of items) {
    const k = key(item);
    if (k === undefined) continue;
    const list = map.get(k) ?? [];
    list.push(item);
    map.set(k, list);
  }
  return map;
}

export function checkInvariants(input: InvariantInput): InvariantResult[] {
  const captures = input.ledger.filter((e) => e.type === 'capture' && e.status === 'succeeded');
  const refundsMoved = input.ledger.filter((e) => e.type === 'refund' && e.status === 'succeeded');
  const capturesByPayment = countBy(captures, (e) => e.metadata.paymentId);
  const capturesByInvoice = countBy(captures, (e) => e.metadata.invoiceId);
  const refundsByRefund = countBy(refundsMoved, (e) => e.metadata.refundId);
  const paymentsById = new Map(input.payments.map((p) => [p.id, p]));
  const refundsById = new Map(input.refunds.map((r) => [r.id, r]));

  // 1. A payment is captured at most once; an invoice is charged at most once; and the ledger
  //    and our records agree on which were.
  const once: string[] = [];
  for (const [paymentId, list] of capturesByPayment) {
    if (list.length > 1) once.push(`payment ${paymentId} captured ${list.length} times`);
    const row = paymentsById.get(paymentId);
    if (!row) once.push(`payment ${paymentId} captured by the provider but unknown to us`);
    else if (!SUCCEEDED_PAYMENT.has(row.status)) once.push(`payment ${paymentId} captured but recorded ${row.status}`);
  }
  for (const p of input.payments) {
    if (SUCCEEDED_PAYMENT.has(p.status) && !capturesByPayment.has(p.id)) {
      once.push(`payment ${p.id} recorded ${p.status} without a capture`);
    }
  }
  for (const [invoiceId, list] of capturesByInvoice) {
    if (list.length > 1) once.push(`invoice ${invoiceId} charged ${list.length} times`);
  }
  for (const inv of input.invoices) {
    const charged = capturesByInvoice.get(inv.id)?.length ?? 0;
    if (inv.status === 'paid' && charged !== 1) once.push(`invoice ${inv.id} paid with ${charged} charges`);
    if (inv.status !== 'paid' && charged > 0) once.push(`invoice ${inv.id} charged but recorded ${inv.status}`);
  }

  // 2. Succeeded plus in-flight refunds never exceed the payment; at most one in flight; each
  //    refund moved once, and as recorded.
  const bound: string[] = [];
  const refundsByPayment = countBy(input.refunds, (r) => r.paymentId);
  for (const p of input.payments) {
    const rows = refundsByPayment.get(p.id) ?? [];
    const pending = rows.filter((r) => r.status === 'pending');
    if (pending.length > 1) bound.push(`payment ${p.id} has ${pending.length} refunds in flight`);
    const moved = rows.reduce((sum, r) => sum + (refundsByRefund.get(r.id)?.[0]?.amountMinor ?? 0), 0);
    const inFlight = pending.reduce((sum, r) => sum + r.amountMinor, 0);
    if (moved + inFlight > p.amountMinor) {
      bound.push(`payment ${p.id}: ${moved} refunded + ${inFlight} in flight > ${p.amountMinor}`);
    }
    if (p.amountRefundedMinor !== moved) {
      bound.push(`payment ${p.id} records ${p.amountRefundedMinor} refunded, the provider moved ${moved}`);
    }
  }
  for (const [refundId, list] of refundsByRefund) {
    if (list.length > 1) bound.push(`refund ${refundId} moved ${list.length} times`);
    const row = refundsById.get(refundId);
    if (!row) bound.push(`refund ${refundId} moved by the provider but unknown to us`);
    else if (row.status !== 'succeeded') bound.push(`refund ${refundId} moved but recorded ${row.status}`);
  }
  for (const r of input.refunds) {
    if (r.status === 'succeeded' && !refundsByRefund.has(r.id))
      bound.push(`refund ${r.id} recorded succeeded, never moved`);
  }

  // 3. A cancelled subscription is never charged again.
  const cancelled: string[] = [];
  const cancellations = input.acknowledgements.filter((a) => a.kind === 'cancellation');
  const chargesBySubscription = countBy(captures, (e) => e.metadata.subscriptionId);
  for (const c of cancellations) {
    for (const charge of chargesBySubscription.get(c.id) ?? []) {
      if (Date.parse(charge.createdAt) > c.at) {
        cancelled.push(
          `subscription ${c.id} charged at ${charge.createdAt}, after its cancellation at ${new Date(c.at).toISOString()}`,
        );
      }
    }
  }
  const subscriptionsById = new Map(input.subscriptions.map((s) => [s.id, s]));
  for (const c of cancellations) {
    const row = subscriptionsById.get(c.id);
    if (row && row.status !== 'cancelled')
      cancelled.push(`subscription ${c.id} cancelled (answered 200) but now ${row.status}`);
  }

  // 4. A record of another merchant is a 404.
  const isolation = input.crossMerchantLeaks.map((l) => `${l.path} answered ${l.status} to another merchant`);

  // 5. Nothing acknowledged is lost; every `succeeded` answer is one capture.
  const lost: string[] = [];
  for (const a of input.acknowledgements) {
    if (a.kind === 'payment') {
      const row = paymentsById.get(a.id);
      if (!row) lost.push(`payment ${a.id} acknowledged (${a.status}) but not recorded`);
      if (a.status === 'succeeded' && (capturesByPayment.get(a.id)?.length ?? 0) !== 1) {
        lost.push(`payment ${a.id} answered succeeded with ${capturesByPayment.get(a.id)?.length ?? 0} captures`);
      }
    } else if (a.kind === 'refund') {
      const row = refundsById.get(a.id);
      if (!row) lost.push(`refund ${a.id} acknowledged (${a.status}) but not recorded`);
      else if (a.status === 'succeeded' && row.status !== 'succeeded') {
        lost.push(`refund ${a.id} answered succeeded, now ${row.status}`);
      }
    } else if (a.kind === 'subscription' && !subscriptionsById.has(a.id)) {
      lost.push(`subscription ${a.id} acknowledged but not recorded`);
    }
  }

  // Each email sent once: one delivered file per sent outbox row; another copy only after its
  // sender was killed mid-send (same Message-ID).
  const mail: string[] = [];
  const resent: string[] = [];
  const delivered = countBy(input.deliveries, (d) => d.messageId);
  for (const [messageId, copies] of delivered) {
    if (copies.length === 1) continue;
    // Every copy but the last must have lost its sender right after the server accepted it.
    const times = copies.map((c) => c.at).sort((a, b) => a - b);
    const explained = times
      .slice(0, -1)
      .every((at) => input.workerKills.some((k) => k >= at - 500 && k <= at + RESEND_AFTER_KILL_WINDOW_MS));
    if (explained)
      resent.push(
        `email ${messageId} delivered ${copies.length} times, each resend after its sender was killed mid-send`,
      );
    else mail.push(`email ${messageId} delivered ${copies.length} times`);
  }
  for (const e of input.emails) {
    const got = delivered.get(`<${e.id}@payments.local>`)?.length ?? 0;
    if (e.sentAt && got === 0) mail.push(`email ${e.id} recorded sent, never delivered`);
  }

  // 6. Succeeded refunds plus lost or accepted disputes never exceed a payment's amount: what the
  //    provider moved (its ledger alone) and what we recorded, each on its own; and each dispute
  //    the provider decided is recorded with its decision.
  const LOST = new Set(['lost', 'accepted']);
  const DECIDED = new Set(['won', 'lost', 'accepted']);
  const disputed: string[] = [];
  const disputeEntries = input.ledger.filter((e) => e.type === 'dispute');
  // A refund or dispute entry names its capture (`paymentTransactionId`), whose metadata names our
  // payment; an entry without it (an older ledger) falls back to its own metadata, or to our
  // refund row it names.
  const paymentOfTransaction = new Map<string, string>();
  for (const e of input.ledger) {
    if (e.type === 'capture' && e.transactionId && e.metadata.paymentId)
      paymentOfTransaction.set(e.transactionId, e.metadata.paymentId);
  }
  const paymentOfEntry = (e: LedgerEntryView) =>
    (e.paymentTransactionId ? paymentOfTransaction.get(e.paymentTransactionId) : undefined) ??
    e.metadata.paymentId ??
    refundsById.get(e.metadata.refundId ?? '')?.paymentId;
  const refundedAtProvider = countBy(refundsMoved, paymentOfEntry);
  const lostAtProvider = countBy(
    disputeEntries.filter((e) => LOST.has(e.status)),
    paymentOfEntry,
  );
  const ourDisputes = countBy(input.disputes ?? [], (d) => d.paymentId);
  for (const p of input.payments) {
    const moved = (refundedAtProvider.get(p.id) ?? []).reduce((sum, e) => sum + e.amountMinor, 0);
    const lost = (lostAtProvider.get(p.id) ?? []).reduce((sum, e) => sum + e.amountMinor, 0);
    if (moved + lost > p.amountMinor) {
      disputed.push(`payment ${p.id}: ${moved} refunded + ${lost} lost in disputes > ${p.amountMinor} (provider)`);
    }
    const recordedLost = (ourDisputes.get(p.id) ?? [])
      .filter((d) => LOST.has(d.status))
      .reduce((sum, d) => sum + d.amountMinor, 0);
    if (p.amountRefundedMinor + recordedLost > p.amountMinor) {
      disputed.push(
        `payment ${p.id}: ${p.amountRefundedMinor} refunded + ${recordedLost} lost in disputes > ${p.amountMinor} (recorded)`,
      );
    }
  }
  if (input.disputes) {
    const byProviderId = new Map(
      input.disputes.filter((d) => d.providerDisputeId).map((d) => [d.providerDisputeId!, d]),
    );
    for (const e of disputeEntries) {
      if (!DECIDED.has(e.status) || !e.transactionId) continue;
      const row = byProviderId.get(e.transactionId);
      if (!row) disputed.push(`dispute ${e.transactionId} ${e.status} at the provider, unknown to us`);
      else if (row.status !== e.status)
        disputed.push(`dispute ${row.id} ${e.status} at the provider, recorded ${row.status}`);
    }
  }

  // 7. An authenticated (3-D Secure) or processing charge captures at most once, and an invoice is
  //    never charged again while one of its charges is undecided. The ledger keeps one entry per
  //    attempt whose status changes in place: it shows how each attempt ended, not when. So:
  //    - captures: at most one succeeded per idempotency key (every attempt's key) and per
  //      payment; a payment that went through authentication or processing (its card, or an answer
  //      of the API) and that we record, or the API answered, as succeeded has exactly one;
  //    - invoices: a later attempt B of an invoice is a violation when an earlier attempt A is
  //      still undecided at the end, or succeeded (B came while it waited or after it paid), or
  //      was seen undecided in a ledger sample taken after B was created (`ledgerOpenSeenAt`). An
  //      A that ended failed or canceled before the next sample is not ordered against B: the
  //      check is as precise as the sampling interval.
  const lifecycle: string[] = [];
  const capturesByKey = countBy(captures, (e) => e.idempotencyKey ?? undefined);
  for (const [key, list] of capturesByKey) {
    if (list.length > 1) lifecycle.push(`idempotency key ${key} captured ${list.length} times`);
  }
  const lifecyclePayments = new Set(
    input.payments.filter((p) => p.cardToken && LIFECYCLE_CARDS.has(p.cardToken)).map((p) => p.id),
  );
  for (const a of input.acknowledgements) {
    if (a.kind === 'payment' && UNDECIDED.has(a.status)) lifecyclePayments.add(a.id);
  }
  const saidSucceeded = new Set(
    input.acknowledgements.filter((a) => a.kind === 'payment' && SUCCEEDED_PAYMENT.has(a.status)).map((a) => a.id),
  );
  for (const id of lifecyclePayments) {
    const n = capturesByPayment.get(id)?.length ?? 0;
    const row = paymentsById.get(id);
    if (n > 1) lifecycle.push(`payment ${id} (authentication or processing) captured ${n} times`);
    else if (n === 0 && row && SUCCEEDED_PAYMENT.has(row.status))
      lifecycle.push(`payment ${id} (authentication or processing) recorded ${row.status} without a capture`);
    else if (n === 0 && saidSucceeded.has(id))
      lifecycle.push(`payment ${id} (authentication or processing) answered succeeded without a capture`);
  }
  const attemptsByInvoice = countBy(
    input.ledger.filter((e) => e.type === 'capture'),
    (e) => e.metadata.invoiceId,
  );
  const seenOpen = input.ledgerOpenSeenAt ?? {};
  for (const [invoiceId, attempts] of attemptsByInvoice) {
    const sorted = [...attempts].sort((x, y) => Date.parse(x.createdAt) - Date.parse(y.createdAt));
    for (let j = 1; j < sorted.length; j++) {
      const later = sorted[j]!;
      const laterAt = Date.parse(later.createdAt);
      for (const earlier of sorted.slice(0, j)) {
        if (Date.parse(earlier.createdAt) >= laterAt) continue;
        const openUntil = earlier.transactionId ? seenOpen[earlier.transactionId] : undefined;
        const why = UNDECIDED.has(earlier.status)
          ? `still ${earlier.status}`
          : earlier.status === 'succeeded'
            ? 'which succeeded'
            : openUntil !== undefined && openUntil >= laterAt
              ? `seen undecided until ${new Date(openUntil).toISOString()}`
              : undefined;
        if (why) {
          lifecycle.push(
            `invoice ${invoiceId} charged again at ${later.createdAt} after its attempt of ${earlier.createdAt}, ${why}`,
          );
          break;
        }
      }
    }
  }

  const errors = input.serverErrors.map((e) => `${e.operation} answered ${e.status} ${e.code}`);

  return [
    {
      name: '1. captured / charged at most once',
      checked: input.payments.length + input.invoices.length,
      violations: once,
    },
    { name: '2. refunds within the capture, one in flight', checked: input.refunds.length, violations: bound },
    { name: '3. no charge after a cancellation', checked: cancellations.length, violations: cancelled },
    { name: '4. other merchants see 404', checked: input.crossMerchantProbes, violations: isolation },
    { name: '5. nothing acknowledged lost', checked: input.acknowledgements.length, violations: lost },
    {
      name: '6. refunds plus lost disputes within the amount',
      checked: disputeEntries.length + (input.disputes?.length ?? 0),
      violations: disputed,
    },
    {
      name: '7. authenticated / processing charges captured once, invoices not charged while undecided',
      checked: lifecyclePayments.size + attemptsByInvoice.size,
      violations: lifecycle,
    },
    { name: 'emails sent once', checked: input.emails.length, violations: mail, notes: resent },
    { name: 'no 500 answers', checked: input.answers, violations: errors },
  ];
}

/** What the run's two webhook endpoints saw (dev/chaos/endpoints.ts). */
export interface DeliveryIsolationInput {
  /** EVENT_DELIVERY_CONCURRENCY_PER_MERCHANT of the cluster. */
  concurrencyPerMerchant: number;
  /** The hanging merchant's endpoint: the most requests it held at once, all it got, when it held any. */
  hanging: { maxOpen: number; requests: number; held: HeldSpan[] };
  /** When another merchant's answering endpoint received each delivery (epoch ms). */
  answeredAt: number[];
  /** The end of the run (epoch ms): a span still held then ends there. */
  until: number;
}

/**
 * 8. A merchant whose endpoint hangs delays only its own deliveries (PRODUCT.md, "Isolation"):
 * its endpoint never holds more than EVENT_DELIVERY_CONCURRENCY_PER_MERCHANT requests at once, and
 * another merchant's endpoint receives deliveries while it holds some. A run where the hanging
 * endpoint was never called checked nothing: that is a violation too.
 */
export function checkDeliveryIsolation(input: DeliveryIsolationInput): InvariantResult {
  const { hanging, concurrencyPerMerchant } = input;
  const violations: string[] = [];
  if (hanging.maxOpen > concurrencyPerMerchant) {
    violations.push(
      `the hanging endpoint held ${hanging.maxOpen} requests at once (limit ${concurrencyPerMerchant} per merchant)`,
    );
  }
  if (hanging.requests === 0) violations.push('the hanging endpoint was never called: nothing was checked');
  const heldMs = hanging.held.reduce((sum, s) => sum + Math.max(0, (s.to ?? input.until) - s.from), 0);
  const whileHeld = input.answeredAt.filter((at) =>
    hanging.held.some((s) => at >= s.from && at <= (s.to ?? input.until)),
  ).length;
  if (hanging.requests > 0 && whileHeld === 0) {
    violations.push(
      `no delivery reached the other merchant's endpoint during the ${(heldMs / 1000).toFixed(0)} s the hanging one held requests`,
    );
  }
  return {
    name: '8. a hanging endpoint delays only its merchant',
    checked: hanging.requests + input.answeredAt.length,
    violations,
    notes: [
      `hanging endpoint: ${hanging.requests} requests, at most ${hanging.maxOpen} at once, held ${(heldMs / 1000).toFixed(0)} s; ` +
        `the other merchant's endpoint: ${input.answeredAt.length} deliveries, ${whileHeld} of them meanwhile`,
    ],
  };
}
