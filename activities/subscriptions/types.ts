import type { InvoiceWaitingStatus } from '../../src/db/entities';
import type { AppliedCharge, CardReplacement, OpenedInvoice } from '../../src/domain/subscriptions';
import type { Outbox } from '../../src/rules/subscriptionPlan';

/** What opening a period's invoice found or made; the subscription workflow branches on it. */
export type { OpenedInvoice };

export type ChargeOutcome =
  | AppliedCharge
  | { kind: 'rejected'; code: string; message: string }
  | { kind: 'not_found' }
  /** The provider has not decided (or answered what we do not know): the same attempt is asked about again. */
  | {
      kind: 'undecided';
      status: string;
      /**
       * The invoice shows the wait (decision 0060): the customer authenticates, or the processor
       * decides later; `outbox`: what recording it wrote (absent: recorded before, or nothing).
       */
      waiting?: InvoiceWaitingStatus;
      outbox?: Outbox;
    };

/** An attempt awaiting authentication, cancelled at the processor: its outcome if it was decided first. */
export type CancelledAttempt = ChargeOutcome | { kind: 'canceled' };

/** What a card update came to: the card replaced (or already that one), or why not. */
export type CardChange = CardReplacement | { kind: 'rejected'; code: string; message: string };

/** A hosted card update's page, created at the provider (or why not). */
export type CardPage =
  | { kind: 'pending'; transactionId: string }
  | { kind: 'not_updatable' | 'missing' }
  | { kind: 'rejected'; code: string; message: string };

/** Where a hosted card update stands: authorized (the card replaced), still open, or over. */
export type CardUpdateState = 'authorized' | 'waiting' | 'ended';

export interface ChargeRequest {
  invoiceId: string;
  /** 1-based attempt number on this invoice; picks the provider idempotency key. */
  attempt: number;
  /** Delay to the next attempt if this one is declined; null when it is the last. */
  retryDelayMs: number | null;
  /** The subscription's very first charge (token flow): a refused token discards it. */
  discardOnReject: boolean;
  /**
   * The customer is present: the first attempt of the first invoice. Every other attempt (a
   * renewal, a retry) is an off-session charge. Absent (runs of older code): off-session.
   */
  onSession?: boolean;
  /**
   * How long an attempt answered `requires_action` waits for the customer (the retry schedule's
   * total): the deadline its email names. Absent (older runs): none named.
   */
  authenticationWaitMs?: number;
}

/** A billing period's start as the workflow sends it (dates as ISO strings). */
export interface PeriodInvoiceInput {
  subscriptionId: string;
  periodIndex: number;
  phaseId: string;
  amountMinor: number;
  periodStart: string;
  periodEnd: string;
}

/** A period's invoice opened, with its first charge attempt when that was made. */
export interface OpenedAndCharged {
  opened: OpenedInvoice;
  /**
   * Attempt 1's outcome, or the last recorded attempt's when attempts were recorded already
   * (`opened.attempts`); absent when the invoice is not open.
   */
  charged?: ChargeOutcome;
}
