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

/** A card verification declined: 402 `card_declined` with the card's `declineCode`. */
export class CardDeclinedError extends SandboxError {
  constructor(
    readonly declineCode: string,
    message: string,
  ) {
    super(402, 'card_declined', message);
    this.name = 'CardDeclinedError';
  }
}

/**
 * `decline`: every card charge with a known token is declined (`card_declined`), e.g. a card that
 * stopped working. `unknown_status`: the operation is performed, then the payment is answered with
 * a status nobody knows (`on_hold`), otherwise well-formed (a processor's new state).
 */
export const PAYMENT_FAULT_MODES = ['ok', 'unavailable', 'invalid', 'timeout', 'decline', 'unknown_status'] as const;

/** The status a payment is answered with in the `unknown_status` fault mode. */
export const UNKNOWN_PAYMENT_STATUS = 'on_hold';
/**
 * Refunds: `unknown_status` performs the operation as `ok` does, then answers every refund (alone or
 * in a list) with a status nobody knows (`on_hold`), otherwise well-formed.
 */
export const REFUND_FAULT_MODES = [
  'ok',
  'unavailable',
  'invalid',
  'timeout',
  'pending',
  'fail',
  'unknown_status',
] as const;

/** The status a refund is answered with in the refunds' `unknown_status` fault mode. */
export const UNKNOWN_REFUND_STATUS = 'on_hold';
/**
 * Disputes (GET, evidence, accept under /v1/disputes): `unavailable`, `invalid`, `timeout` as for
 * payments; `unknown_status` performs the operation as `ok` does, then answers every dispute (alone
 * or in a list) with a status nobody knows (`on_hold`), otherwise well-formed; a dispute's webhooks
 * sent meanwhile carry that status too (the ledger keeps the real one).
 */
export const DISPUTE_FAULT_MODES = ['ok', 'unavailable', 'invalid', 'timeout', 'unknown_status'] as const;

/** The status a dispute is answered with in the disputes' `unknown_status` fault mode. */
export const UNKNOWN_DISPUTE_STATUS = 'on_hold';
export type PaymentFaultMode = (typeof PAYMENT_FAULT_MODES)[number];
export type RefundFaultMode = (typeof REFUND_FAULT_MODES)[number];
export type DisputeFaultMode = (typeof DISPUTE_FAULT_MODES)[number];

export interface Faults {
  payments: PaymentFaultMode;
  refunds: RefundFaultMode;
  disputes: DisputeFaultMode;
  latencyMs: number;
}

export const NO_FAULTS: Faults = { payments: 'ok', refunds: 'ok', disputes: 'ok', latencyMs: 0 };

export type PaymentMode = 'card' | 'checkout' | 'setup';
/**
 * `requires_action`: a card charge waits for the customer to authenticate (3-D Secure) at its
 * `actionUrl`; `processing`: accepted, the processor decides later (a timer, or /_admin/settle-payment).
 */
export type PaymentStatus = 'pending' | 'requires_action' | 'processing' | 'succeeded' | 'failed' | 'canceled';
/** A dispute's status (dev/sandbox/disputes.ts): open (`needs_response`, `under_review`) or decided. */
export const DISPUTE_STATUSES = ['needs_response', 'under_review', 'won', 'lost', 'accepted'] as const;
export type DisputeStatus = (typeof DISPUTE_STATUSES)[number];
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
  /** Where the customer authenticates while `requires_action` (`<base>/authenticate/<id>`), else null. */
  actionUrl: string | null;
  /** The charge was made without the customer (a renewal, a retry): `tok_3ds_offsession` asks to authenticate. */
  offSession: boolean;
  /** The charge asked the customer to authenticate (its page exists, whatever became of it). */
  authenticationRequired: boolean;
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
  /**
   * A capture: `requires_action` while its customer authenticates, `processing` while the
   * processor decides, then `succeeded` / `failed` (or `canceled`: an authentication cancelled
   * before the customer acted), changed in place. A refund: `pending`, then its outcome. A
   * dispute: its status (dev/sandbox/disputes.ts), changed in place.
   */
  status: 'succeeded' | 'failed' | 'pending' | 'requires_action' | 'processing' | 'canceled' | DisputeStatus;
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
  /** A charge made without the customer present (renewals, retries). */
  offSession: boolean;
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

const DECLINES: Record<string, { code: string; message: string }> = {
  tok_decline: { code: 'card_declined', message: 'The card was declined.' },
  tok_insufficient_funds: { code: 'insufficient_funds', message: 'The card has insufficient funds.' },
  tok_lost_card: { code: 'lost_card', message: 'The card was reported lost.' },
  tok_expired_card: { code: 'expired_card', message: 'The card has expired.' },
};

/** Cards whose on-session charges capture and whose off-session ones (renewals, retries) decline. */
const OFF_SESSION_DECLINES: Record<string, { code: string; message: string }> = {
  tok_renewal_lost_card: DECLINES.tok_lost_card!,
  tok_renewal_insufficient_funds: DECLINES.tok_insufficient_funds!,
};

/**
 * Cards whose charges are not decided at once: `tok_3ds` always asks the customer to authenticate,
 * `tok_3ds_offsession` only for charges made without the customer (`offSession`); the
 * `tok_processing` ones are accepted and settled `SANDBOX_PROCESSING_SECONDS` later.
 */
export const AUTHENTICATION_TOKENS = ['tok_3ds', 'tok_3ds_offsession'] as const;
export const PROCESSING_OUTCOMES: Record<string, 'succeeded' | 'failed'> = {
  tok_processing: 'succeeded',
  tok_processing_fail: 'failed',
};
const DEBIT_FAILED = { code: 'debit_failed', message: 'The processor could not collect the payment.' };
const AUTHENTICATION_FAILED = { code: 'authentication_failed', message: 'The customer failed to authenticate.' };
/** Cards that are not declined at once; `tok_dispute` captures and is then disputed (dev/sandbox/disputes.ts). */
const OTHER_CARDS = new Set<string>([
  'tok_success',
  'tok_dispute',
  ...AUTHENTICATION_TOKENS,
  ...Object.keys(PROCESSING_OUTCOMES),
]);

/** What the sandbox tells of a card it keeps (never a number): brand, last 4 digits, expiry. */
export interface SandboxCard {
  brand: string;
  last4: string;
  expMonth: number;
  expYear: number;
}

/** The last 4 digits of each test card (as Stripe's test cards); any other card is a Visa ending 4242. */
const CARD_LAST4: Record<string, string> = {
  tok_success: '4242',
  tok_decline: '0002',
  tok_insufficient_funds: '9995',
  tok_lost_card: '9987',
  tok_expired_card: '0069',
  tok_renewal_lost_card: '0341',
  tok_renewal_insufficient_funds: '0341',
  tok_3ds: '3220',
  tok_3ds_offsession: '3155',
  tok_processing: '0077',
  tok_processing_fail: '0085',
  tok_dispute: '0259',
};

/** The card a test token stands for, as the sandbox describes it (expiry: December, three years on). */
export function describeCard(card: string, now = new Date()): SandboxCard {
  return {
    brand: 'visa',
    last4: CARD_LAST4[card] ?? '4242',
    expMonth: 12,
    expYear: now.getUTCFullYear() + 3,
  };
}

/**
 * Cards whose verification (attaching them to a customer) is declined, with the code: those every
 * charge of which is declined as a card that does not work. A card short of funds is still a card
 * (a zero-amount verification checks the card, not the balance), and so are the `tok_renewal_...`
 * ones (decision 0087).
 */
const VERIFICATION_DECLINES: ReadonlySet<string> = new Set(['tok_decline', 'tok_lost_card', 'tok_expired_card']);

/** A card attached to a customer (`/v1/payment_methods`): its saved token is what charges send. */
export interface AttachedCard {
  /** The saved token (`tok_saved_...`), also the payment method's id at the sandbox. */
  id: string;
  /** The test card it was attached from. */
  card: string;
  customer: string;
  idempotencyKey: string;
  detached: boolean;
  metadata: Record<string, string>;
  createdAt: string;
}

/** One `/v1` request as the sandbox received it (`GET /_admin/requests`). */
export interface ProviderRequestLog {
  method: string;
  /** The path with its query string. */
  url: string;
  idempotencyKey: string | null;
  /** The status answered (a fault's included). */
  status: number;
  receivedAt: string;
}

/** The most `/v1` requests the sandbox remembers (the oldest are forgotten first). */
export const MAX_REQUEST_LOG = 10_000;

/**
 * What the sandbox keeps (issue 44 item 10, decision 0079). Its state lives in memory; a
 * long-running sandbox forgets, oldest first: ledger entries past `maxLedgerEntries`, and
 * everything older than `retentionSeconds` (ledger entries, and payments and refunds that no
 * longer move, with their idempotency keys). `0` disables either. Saved card tokens are kept (a
 * subscription charges its card for as long as it lives), and so are disputes (rare, and their
 * payments with them).
 */
export interface SandboxRetention {
  /** SANDBOX_RETENTION_SECONDS (default 30 days). */
  retentionSeconds: number;
  /** SANDBOX_MAX_LEDGER_ENTRIES (default 100,000). */
  maxLedgerEntries: number;
}

export const DEFAULT_RETENTION: SandboxRetention = { retentionSeconds: 2_592_000, maxLedgerEntries: 100_000 };

/** Statuses a sandbox payment may still leave: kept whatever their age. */
const MOVING_PAYMENT_STATUSES: ReadonlySet<PaymentStatus> = new Set<PaymentStatus>(['processing']);

export class SandboxStore {
  constructor(
    private readonly retention: SandboxRetention = DEFAULT_RETENTION,
    /** Payments that must be kept whatever their age (a dispute's). */
    private readonly pinned: (paymentId: string) => boolean = () => false,
  ) {}

  /** When the age-based prune last ran (ms); it runs at most once a retention period's tenth, at most once a minute. */
  private lastPrunedAt = 0;

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
  /** Cards attached to customers, by their saved token; and by the caller's idempotency key. */
  readonly attachedCards = new Map<string, AttachedCard>();
  readonly attachedByKey = new Map<string, AttachedCard>();
  faults: Faults = { ...NO_FAULTS };
  /** Every `/v1` request received, oldest first (at most MAX_REQUEST_LOG). */
  readonly requests: ProviderRequestLog[] = [];

  logRequest(entry: ProviderRequestLog): void {
    this.requests.push(entry);
    if (this.requests.length > MAX_REQUEST_LOG) this.requests.splice(0, this.requests.length - MAX_REQUEST_LOG);
  }

  reset(): void {
    this.requests.length = 0;
    this.payments.clear();
    this.paymentsByKey.clear();
    this.refunds.clear();
    this.refundsByReference.clear();
    this.refundsByKey.clear();
    this.ledger.length = 0;
    this.ledgerByTransaction.clear();
    this.savedTokens.clear();
    this.attachedCards.clear();
    this.attachedByKey.clear();
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
      if (!this.knownToken(token)) throw new SandboxError(400, 'invalid_card_token', 'Unknown card token.');
      const card = this.cardOf(token);
      failure = DECLINES[card] ?? (input.offSession ? OFF_SESSION_DECLINES[card] : undefined);
      if (declineCards) failure ??= DECLINES.tok_decline;
      status = failure ? 'failed' : this.firstAnswer(card, input.offSession);
    }
    // A setup with a token verifies the card and saves it at once: no page, nothing moves. A
    // token whose charges decline is still a card (as a Stripe SetupIntent attaches it).
    const verify = input.mode === 'setup' && input.cardToken !== null;
    if (verify) {
      if (!this.knownToken(input.cardToken ?? '')) {
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
      actionUrl: status === 'requires_action' ? `${checkoutBaseUrl}/authenticate/${id}` : null,
      offSession: input.offSession,
      authenticationRequired: status === 'requires_action',
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
    this.prune();
    if (input.mode === 'card') this.recordCapture(payment);
    return payment;
  }

  getPayment(id: string): PaymentRecord {
    const payment = this.payments.get(id);
    if (!payment) throw new SandboxError(404, 'not_found', `No payment ${id}.`);
    return payment;
  }

  /**
   * A pending checkout/setup payment, or a charge awaiting authentication, becomes `canceled`
   * (its page then captures nothing); any other status (`processing` included) is left as it is.
   */
  cancelPayment(id: string): Settlement<PaymentRecord> {
    const payment = this.getPayment(id);
    if (payment.status !== 'pending' && payment.status !== 'requires_action')
      return { record: payment, changed: false };
    payment.status = 'canceled';
    payment.actionUrl = null;
    this.updateLedger(payment.id, 'canceled');
    return { record: payment, changed: true };
  }

  /**
   * The customer's Authenticate or Fail on the authentication page of a `requires_action` charge:
   * it captures or fails, once. A cancelled attempt is 410; a settled one 409 (nothing moves again).
   */
  authenticationAct(id: string, action: 'authenticate' | 'fail'): Settlement<PaymentRecord> {
    const payment = this.authenticationOf(id);
    payment.status = action === 'authenticate' ? 'succeeded' : 'failed';
    payment.actionUrl = null;
    if (action === 'authenticate') {
      if (payment.saveCard) payment.savedCardToken = this.savedToken(payment);
    } else {
      payment.failureCode = AUTHENTICATION_FAILED.code;
      payment.failureMessage = AUTHENTICATION_FAILED.message;
    }
    this.updateLedger(payment.id, payment.status);
    return { record: payment, changed: true };
  }

  /** The charge an authentication page is for, while it may still be acted on (else a 4xx). */
  authenticationOf(id: string): PaymentRecord {
    const payment = this.payments.get(id);
    if (!payment?.authenticationRequired) {
      throw new SandboxError(404, 'not_found', 'No such authentication.');
    }
    if (payment.status === 'canceled') {
      // An invoice's attempt cancelled for a new card (or the subscription's end): the invoice moved on.
      const why = payment.metadata.invoiceId
        ? `The invoice ${payment.metadata.invoiceId} moved on: this payment was canceled and nothing can be authenticated.`
        : 'This payment was canceled: nothing can be authenticated.';
      throw new SandboxError(410, 'payment_canceled', why);
    }
    if (payment.status !== 'requires_action') {
      throw new SandboxError(
        409,
        'authentication_not_pending',
        payment.status === 'processing' || payment.status === 'pending'
          ? 'This payment does not need authentication.'
          : `This payment has already ${payment.status}: nothing more is captured.`,
      );
    }
    return payment;
  }

  /**
   * A `processing` charge settles (its timer, or `/_admin/settle-payment`): captured, or failed
   * with `debit_failed`. Unknown: 404; not processing: 409.
   */
  settleProcessing(id: string, status: 'succeeded' | 'failed'): PaymentRecord {
    const payment = this.payments.get(id);
    if (!payment) throw new SandboxError(404, 'not_found', `No payment ${id}.`);
    if (payment.status !== 'processing') {
      throw new SandboxError(409, 'payment_not_processing', `The payment is ${payment.status}, not processing.`);
    }
    payment.status = status;
    if (status === 'failed') {
      payment.failureCode = DEBIT_FAILED.code;
      payment.failureMessage = DEBIT_FAILED.message;
    } else if (payment.saveCard) {
      payment.savedCardToken = this.savedToken(payment);
    }
    this.updateLedger(payment.id, status);
    return payment;
  }

  /** What a `tok_processing...` charge settles as by itself. */
  processingOutcome(payment: PaymentRecord): 'succeeded' | 'failed' {
    return PROCESSING_OUTCOMES[this.cardOf(payment.cardToken ?? '')] ?? 'succeeded';
  }

  private knownToken(token: string): boolean {
    return (
      DECLINES[token] !== undefined ||
      OFF_SESSION_DECLINES[token] !== undefined ||
      OTHER_CARDS.has(token) ||
      this.savedTokens.has(token) ||
      this.attachedCards.get(token)?.detached === false
    );
  }

  // ---- payment methods (cards attached to customers) ----

  /**
   * Verifies a card and keeps it for `customer`: a new saved token each time (even for a card
   * attached before), deduplicated by the idempotency key. Unknown token: 400; a card that does
   * not work: 402 `card_declined` with its decline code. Nothing moves: no ledger entry.
   */
  attachCard(input: {
    idempotencyKey: string;
    cardToken: string;
    customer: string;
    metadata: Record<string, string>;
  }): AttachedCard {
    const existing = this.attachedByKey.get(input.idempotencyKey);
    if (existing) {
      if (existing.card !== this.cardOf(input.cardToken)) {
        throw new SandboxError(409, 'idempotency_key_reused', 'Idempotency-Key was already used with another card.');
      }
      return existing;
    }
    if (!this.knownToken(input.cardToken)) throw new SandboxError(400, 'invalid_card_token', 'Unknown card token.');
    const card = this.cardOf(input.cardToken);
    if (VERIFICATION_DECLINES.has(card)) {
      const decline = DECLINES[card]!;
      throw new CardDeclinedError(decline.code, decline.message);
    }
    const attached: AttachedCard = {
      id: newSandboxId('tok_saved'),
      card,
      customer: input.customer,
      idempotencyKey: input.idempotencyKey,
      detached: false,
      metadata: input.metadata,
      createdAt: new Date().toISOString(),
    };
    this.attachedCards.set(attached.id, attached);
    this.attachedByKey.set(input.idempotencyKey, attached);
    return attached;
  }

  /** The card no longer kept: its token is refused by later charges. Unknown: 404. */
  detachCard(id: string): AttachedCard {
    const attached = this.attachedCards.get(id);
    if (!attached) throw new SandboxError(404, 'not_found', `No payment method ${id}.`);
    attached.detached = true;
    return attached;
  }

  /**
   * The test card a token stands for: a token this sandbox saved behaves as the card it was saved
   * from (a `tok_3ds` card saved stays one); one saved from a hosted page as `tok_success`.
   */
  private cardOf(token: string): string {
    const attached = this.attachedCards.get(token);
    if (attached) return attached.card;
    const from = this.savedTokens.get(token);
    if (from === undefined) return token;
    const saved = this.payments.get(from)?.cardToken;
    return saved && saved !== token ? this.cardOf(saved) : 'tok_success';
  }

  /** A card charge's first answer for a card that is not declined. */
  private firstAnswer(card: string, offSession: boolean): PaymentStatus {
    if (card === 'tok_3ds' || (card === 'tok_3ds_offsession' && offSession)) return 'requires_action';
    if (PROCESSING_OUTCOMES[card] !== undefined) return 'processing';
    return 'succeeded';
  }

  private savedToken(payment: PaymentRecord): string {
    const token = payment.cardToken ?? '';
    return this.savedTokens.has(token) ? token : this.issueToken(payment.id);
  }

  private updateLedger(transactionId: string, status: LedgerEntry['status']): void {
    const entry = this.ledgerByTransaction.get(transactionId);
    if (entry) entry.status = status;
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

  /**
   * The test card a token stands for: itself, or for a saved token (`tok_saved_...`) the card of
   * the payment that saved it (a hosted page's card is `tok_success`). Unknown: 400.
   */
  private issueToken(paymentId: string): string {
    const token = newSandboxId('tok_saved');
    this.savedTokens.set(token, paymentId);
    return token;
  }

  private recordCapture(payment: PaymentRecord): void {
    this.addLedgerEntry({
      id: newSandboxId('le'),
      type: 'capture',
      status:
        payment.status === 'requires_action' || payment.status === 'processing' || payment.status === 'succeeded'
          ? payment.status
          : 'failed',
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
    this.prune();
  }

  /**
   * Forgets what SandboxRetention says, oldest first: the ledger past its size at once, the rest
   * by age (a sweep of the maps, throttled). Maps iterate in insertion (creation) order.
   */
  prune(now = Date.now()): void {
    const { maxLedgerEntries, retentionSeconds } = this.retention;
    const dropLedger = (count: number) => {
      for (const gone of this.ledger.splice(0, count)) {
        if (this.ledgerByTransaction.get(gone.transactionId) === gone)
          this.ledgerByTransaction.delete(gone.transactionId);
      }
    };
    if (maxLedgerEntries > 0 && this.ledger.length > maxLedgerEntries)
      dropLedger(this.ledger.length - maxLedgerEntries);
    if (retentionSeconds <= 0) return;
    const retentionMs = retentionSeconds * 1000;
    if (now - this.lastPrunedAt < Math.min(retentionMs / 10, 60_000)) return;
    this.lastPrunedAt = now;
    const cutoff = now - retentionMs;
    const old = (createdAt: string) => Date.parse(createdAt) < cutoff;
    let expired = 0;
    while (expired < this.ledger.length && old(this.ledger[expired]!.createdAt)) expired++;
    dropLedger(expired);
    for (const refund of this.refunds.values()) {
      if (!old(refund.createdAt)) break;
      if (refund.status === 'pending') continue;
      this.forgetRefund(refund);
    }
    for (const payment of this.payments.values()) {
      if (!old(payment.createdAt)) break;
      if (MOVING_PAYMENT_STATUSES.has(payment.status) || this.pinned(payment.id)) continue;
      this.payments.delete(payment.id);
      if (this.paymentsByKey.get(payment.idempotencyKey) === payment) this.paymentsByKey.delete(payment.idempotencyKey);
    }
  }

  private forgetRefund(refund: RefundRecord): void {
    this.refunds.delete(refund.id);
    if (refund.idempotencyKey && this.refundsByKey.get(refund.idempotencyKey) === refund) {
      this.refundsByKey.delete(refund.idempotencyKey);
    }
    const sameReference = this.refundsByReference.get(refund.referenceId);
    if (sameReference) {
      const left = sameReference.filter((r) => r !== refund);
      if (left.length > 0) this.refundsByReference.set(refund.referenceId, left);
      else this.refundsByReference.delete(refund.referenceId);
    }
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
    actionUrl: p.actionUrl,
    offSession: p.offSession,
    savedCardToken: p.savedCardToken,
    /** What the saved card is (a hosted page's card is a Visa ending 4242). */
    savedCard: p.savedCardToken ? describeCard(p.cardToken ?? 'tok_success') : null,
    metadata: { ...p.metadata },
    createdAt: p.createdAt,
  };
}

export function attachedCardJson(a: AttachedCard) {
  return {
    object: 'payment_method' as const,
    id: a.id,
    customer: a.customer,
    card: describeCard(a.card, new Date(a.createdAt)),
    detached: a.detached,
    metadata: { ...a.metadata },
    createdAt: a.createdAt,
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
