import { upsertSearchAttributes } from '@temporalio/workflow';
import type { PaymentCursor, PaymentWorkflowInput, SubmitOutcome } from '../paymentApi';
import { ATTEMPT_ON_START, BOUNDED_HISTORIES, STATUS_SEARCH_ATTRIBUTES, type HasChange } from '../patches';
import { runIsLong } from '../runBound';
import { PaymentStatusKey } from '../searchAttributes';
import { PROVIDER_OUTCOME } from '../failures';

/**
 * `awaiting_authentication`: the customer authenticates (`requires_action`), voided at expiry
 * like `awaiting_customer`; `awaiting_processor`: the processor decides later (`processing`), no expiry.
 */
export type PaymentStatus =
  'awaiting_attempt' | 'awaiting_customer' | 'awaiting_authentication' | 'awaiting_processor' | 'settled' | 'discarded';

/** What the provider says of the payment, as an attempt's result or a reconciliation's answer. */
export type ProviderAnswer = 'settled' | 'created' | 'action' | 'processing' | 'not_found' | 'missing';

/** A processing payment's first question to the provider without a webhook, then doubling up to daily. */
export const PROCESSING_POLL_FIRST_MS = 60_000;
export const PROCESSING_POLL_MAX_MS = 86_400_000;

/** The PaymentStatus search attribute of a status (`created` as the API starts it). */
const paymentStatusOf = (status: PaymentStatus) => (status === 'awaiting_attempt' ? 'created' : status);

/**
 * Everything one run of a payment's workflow knows, in one object: the steps read and change it,
 * the handlers read it, and continue-as-new hands it to the next run (`cursor`).
 *
 * The constructor asks `hasChange` in the order the run always has (each `patched()` call writes a
 * marker in a run of the old type): STATUS_SEARCH_ATTRIBUTES, BOUNDED_HISTORIES, then
 * ATTEMPT_ON_START only for a first run started with the merchant's submit.
 */
export class PaymentState {
  readonly input: PaymentWorkflowInput;
  /** Whether a change applies to this run (`patched`, or every V2 change without a marker). */
  readonly hasChange: HasChange;
  readonly paymentId: string;
  readonly expiresAtMs: number;
  /** PaymentStatus upserts and the settled validator (STATUS_SEARCH_ATTRIBUTES). */
  readonly statusAttribute: boolean;
  /** Continue-as-new at a wait once long (BOUNDED_HISTORIES). */
  readonly bounded: boolean;
  status: PaymentStatus;
  /** Handing over to a new run: a new submit is refused (the API sends it again, to that run). */
  closing = false;
  /** An attempt is asked for (a submit, or the request that started this run). */
  attemptRequested: boolean;
  /** The first attempt's request is in the start event: it needs no task of its own before the call. */
  startAttempt: boolean;
  /** Provider attempts made so far (all runs). */
  completedAttempts: number;
  /** What the latest attempt established (a repeat is answered with it when nothing is tried). */
  lastOutcome: SubmitOutcome;
  /** The provider may have acted: reconcile before anything else. */
  ambiguous: boolean;
  /** A provider webhook not looked at yet. */
  providerEvent: boolean;
  /** While `awaiting_processor`: how long the next wait for a webhook lasts before the provider is asked. */
  pollDelayMs: number;
  /** Moved to `requires_action` or `processing`: its merchant event is to be sent now (./announce.ts). */
  announce = false;

  constructor(input: PaymentWorkflowInput, hasChange: HasChange) {
    const resume = input.resume;
    this.input = input;
    this.hasChange = hasChange;
    this.paymentId = input.paymentId;
    this.expiresAtMs = Date.parse(input.expiresAt);
    this.status = resume?.state ?? 'awaiting_attempt';
    this.statusAttribute = hasChange(STATUS_SEARCH_ATTRIBUTES);
    this.bounded = hasChange(BOUNDED_HISTORIES);
    // The request that started this run asked for an attempt: made even if its Update is lost.
    this.attemptRequested = !resume && input.attemptOnStart === true && hasChange(ATTEMPT_ON_START);
    this.startAttempt = this.attemptRequested;
    this.completedAttempts = resume?.completedAttempts ?? 0;
    this.lastOutcome = resume?.lastOutcome ?? { kind: PROVIDER_OUTCOME.unavailable };
    // A run the sweeper started for a live payment asks the provider first (reconcileOnStart).
    this.ambiguous = resume?.ambiguous ?? input.reconcileOnStart === true;
    this.providerEvent = resume?.providerEvent ?? false;
    this.pollDelayMs = resume?.pollDelayMs ?? this.firstPollDelayMs();
    this.announce = resume?.announce ?? false;
  }

  /** The first wait of a processing payment (its input's `processingPollSeconds`, tests lower it). */
  firstPollDelayMs(): number {
    const seconds = this.input.processingPollSeconds;
    return seconds !== undefined && seconds > 0 ? seconds * 1000 : PROCESSING_POLL_FIRST_MS;
  }

  /** Still waiting for an attempt, the customer or the processor. */
  open(): boolean {
    return (
      this.status === 'awaiting_attempt' ||
      this.status === 'awaiting_customer' ||
      this.status === 'awaiting_authentication' ||
      this.status === 'awaiting_processor'
    );
  }

  /** Waiting for the processor's decision (`processing`); read through a method (no narrowing). */
  awaitsProcessor(): boolean {
    return this.status === 'awaiting_processor';
  }

  /** Read through a method where an await may have changed it (no narrowing). */
  settled(): boolean {
    return this.status === 'settled';
  }

  /** The run is long enough to hand over to a new one (only since BOUNDED_HISTORIES). */
  isLong(): boolean {
    return this.bounded && runIsLong(this.input.historyEventLimit);
  }

  /** Moves the payment on, and says so to operators (PaymentStatus) since STATUS_SEARCH_ATTRIBUTES. */
  setStatus(next: PaymentStatus): void {
    if (next === this.status) return;
    this.status = next;
    if (this.statusAttribute) upsertSearchAttributes([{ key: PaymentStatusKey, value: paymentStatusOf(next) }]);
  }

  /** Where the provider's answer leaves the payment. */
  follow(answer: ProviderAnswer): void {
    if (answer === 'settled') this.setStatus('settled');
    else if (answer === 'created') this.setStatus('awaiting_customer');
    else if (answer === 'action') this.moveAndAnnounce('awaiting_authentication');
    else if (answer === 'processing') this.moveAndAnnounce('awaiting_processor');
    else if (answer === 'missing') this.setStatus('discarded');
    // not_found: the provider never saw the request; it may be attempted again.
  }

  /** A move the merchant hears of while the payment is in flight (payment.requires_action, payment.processing). */
  private moveAndAnnounce(next: PaymentStatus): void {
    if (next === this.status) return;
    this.setStatus(next);
    this.announce = true;
  }

  /** What the next run needs to go on exactly where this one stopped (taken at a wait: open). */
  cursor(): PaymentCursor {
    return {
      state: this.status as PaymentCursor['state'],
      completedAttempts: this.completedAttempts,
      lastOutcome: this.lastOutcome,
      ambiguous: this.ambiguous,
      providerEvent: this.providerEvent,
      ...(this.status === 'awaiting_processor' ? { pollDelayMs: this.pollDelayMs } : {}),
      ...(this.announce ? { announce: true } : {}),
      runs: (this.input.resume?.runs ?? 0) + 1,
    };
  }
}
