import type { InvoiceWaitingStatus } from '../../src/db/entities';
import type { AppliedCharge, CardReplacement, OpenedInvoice } from '../../src/domain/subscriptions';
import type { Outbox } from '../../src/rules/subscriptionPlan';
import type { ChargeRequest } from '../../src/rules/subscriptionCollection';

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

/** One charge attempt of an invoice: defined with its pure rules (src/rules/subscriptionCollection.ts). */
export type { ChargeRequest };

/** A billing period's start as the workflow sends it (dates as ISO strings). */
export interface PeriodInvoiceInput {
  subscriptionId: string;
  periodIndex: number;
  phaseId: string;
  amountMinor: number;
  periodStart: string;
  periodEnd: string;
  /** On a test clock: the clock's time (decision 0090); absent: real time. */
  atMs?: number;
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
