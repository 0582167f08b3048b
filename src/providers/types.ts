/**
 * The one provider interface. Each provider is a thin HTTP adapter plus a pure mapping file;
 * everything above this line speaks these types only. Amounts are integer minor units.
 */
export type ProviderPaymentMode = 'card' | 'checkout' | 'setup';
/**
 * `pending`: a hosted page (or setup) awaits the customer. `requires_action`: the processor asks the
 * customer to authenticate (3-D Secure) at `actionUrl`. `processing`: accepted, decided later.
 */
export type ProviderPaymentStatus = 'pending' | 'requires_action' | 'processing' | 'succeeded' | 'failed' | 'canceled';
export type ProviderRefundStatus = 'pending' | 'succeeded' | 'failed';

export interface ProviderPayment {
  transactionId: string;
  status: ProviderPaymentStatus;
  amountMinor: number;
  currency: string;
  failureCode: string | null;
  failureMessage: string | null;
  /** The hosted page for the customer (checkout / setup), without a query string. */
  redirectUrl: string | null;
  savedCardToken: string | null;
  /** Where the customer authenticates this charge while `requires_action`, else null. */
  actionUrl: string | null;
  /** What the processor tells of the saved card (`savedCardToken`), when it says; absent: unknown. */
  savedCard?: CardDetails | null;
}

/** What a processor tells of a card it keeps: never the number, only what identifies it to people. */
export interface CardDetails {
  brand: string | null;
  last4: string | null;
  expMonth: number | null;
  expYear: number | null;
}

/**
 * A card to verify and keep for a customer (PRODUCT.md, "Customers and payment methods"). No
 * money moves: no authentication, no ledger entry.
 */
export interface AttachPaymentMethodInput {
  /** Our payment method id: the processor dedupes on it. */
  idempotencyKey: string;
  /** The merchant's card token (the sandbox's test tokens; Stripe's `pm_...`). */
  cardToken: string;
  /** Our customer, and the processor's own customer for it when one was created before. */
  customer: { id: string; email: string | null; name: string | null; providerCustomerId: string | null };
  metadata: Record<string, string>;
}

export type AttachPaymentMethodResult =
  | {
      status: 'attached';
      /** What a charge sends as its card token from now on (a processor reference). */
      reference: string;
      /** The processor's customer the card is attached to (null: the processor has none). */
      providerCustomerId: string | null;
      card: CardDetails;
    }
  /** The processor declined to keep the card (its verification was declined). */
  | { status: 'declined'; declineCode: string; message: string };

export interface CreatePaymentInput {
  /** Our payment id (or invoice id): the provider dedupes on it. */
  idempotencyKey: string;
  amountMinor: number;
  currency: string;
  mode: ProviderPaymentMode;
  cardToken?: string;
  /**
   * A charge made without the customer present (a subscription's renewal or retry): the processor
   * may then ask for authentication (`requires_action`). Absent: on-session (API payments).
   */
  offSession?: boolean;
  returnUrl?: string;
  webhookUrl?: string;
  saveCard?: boolean;
  description?: string;
  /**
   * When the payment expires (hosted modes): a provider whose hosted page has its own expiry
   * (Stripe Checkout) sets it from this, within its limits. Without it, the provider's default.
   */
  expiresAt?: Date;
  metadata: Record<string, string>;
}

export interface ProviderRefund {
  refundId: string;
  transactionId: string;
  status: ProviderRefundStatus;
  amountMinor: number;
  currency: string;
  referenceId: string;
  failureCode: string | null;
  failureMessage: string | null;
}

export interface CreateRefundInput {
  /** Our refund id: the provider dedupes on it, and it is how we find the refund again. */
  idempotencyKey: string;
  transactionId: string;
  amountMinor: number;
  currency: string;
  /**
   * The merchant's refund externalId. Unique per merchant only: the provider dedupes on it
   * within one payment transaction, never across them.
   */
  referenceId: string;
  reason?: string;
  webhookUrl?: string;
  metadata: Record<string, string>;
}

/**
 * "What became of the request sent under this idempotency key?" Asked only after a call was sent
 * (the record's `providerCallSentAt`) and its answer is unknown. A provider that cannot look a key
 * up directly (Stripe) replays `request` under the same key within its idempotency window (it
 * answers the original outcome, or performs the request now if it never was), and past it asks
 * by our key in metadata (decision 0058): never a scan of everything created since.
 */
export interface PaymentLookup {
  idempotencyKey: string;
  mode: ProviderPaymentMode;
  /** When the request was first sent under this key (the record's creation when not marked). */
  notBefore: Date;
  /**
   * The very request sent under this key, when the caller can rebuild it (same parameters) AND
   * performing it now, if it never reached the provider, is what the caller wants (the attempt's
   * own reconciliation; never an expiry or a cancellation asking whether anything happened).
   */
  request?: CreatePaymentInput;
  /** Where an earlier attempt of this lookup got to, and how to report progress (decision 0064). */
  resume?: LookupResume;
}

/** A refund by our idempotency key, within the payment transaction it refunds. */
export interface RefundLookup {
  idempotencyKey: string;
  transactionId: string;
  /** Where an earlier attempt of this lookup got to, and how to report progress (decision 0064). */
  resume?: LookupResume;
}

/**
 * What a lookup of several provider calls learned on the way, so that a retried attempt goes on
 * from there instead of starting over (decision 0064). Only facts that stay true: an object id
 * (ids never change), or that replaying the request cannot answer (past the window, or the key
 * holds other parameters). An adapter ignores what it does not use.
 */
export interface LookupProgress {
  /** The provider's object found so far (Stripe: the PaymentIntent, Customer or Checkout Session). */
  objectId?: string;
  /** Replaying the request under its key cannot answer any more: go on to the next way. */
  replayPassed?: boolean;
}

export interface LookupResume {
  /** What earlier attempts learned (empty on a first attempt). */
  from: LookupProgress;
  /** Told each new fact between provider calls (the activity heartbeats it). */
  learned: (progress: LookupProgress) => void;
}

/**
 * A dispute (chargeback) the processor opened on a captured payment. `needs_response` and
 * `under_review` are open; `won`, `lost` and `accepted` are the processor's decision.
 */
export type ProviderDisputeStatus = 'needs_response' | 'under_review' | 'won' | 'lost' | 'accepted';

export interface ProviderDispute {
  disputeId: string;
  /** The disputed payment transaction. */
  transactionId: string;
  status: ProviderDisputeStatus;
  amountMinor: number;
  currency: string;
  reason: string;
  evidenceDueBy: Date;
}

export type ProviderWebhookEvent = (
  | { kind: 'payment'; type: string; payment: ProviderPayment; metadata: Record<string, string> }
  | { kind: 'refund'; type: string; refund: ProviderRefund; metadata: Record<string, string> }
  /** A dispute opened or changed; `metadata` is the disputed payment's. */
  | { kind: 'dispute'; type: string; dispute: ProviderDispute; metadata: Record<string, string> }
  /**
   * An event type the provider sends that concerns none of our records, or a verified event whose
   * object we cannot read (`reason`): acknowledged, routed nowhere (the record's workflow asks the
   * provider itself).
   */
  | { kind: 'ignored'; type: string; reason?: string }
) & {
  /**
   * The processor's own mode of the event when it says (Stripe's `livemode`): a live event serves
   * only the live environment, a test event only the test one (decision 0058).
   */
  livemode?: boolean;
};

export interface PaymentProvider {
  readonly name: string;
  createPayment(input: CreatePaymentInput): Promise<ProviderPayment>;
  /**
   * null when the provider has no such payment (so the request was never performed): the answer
   * must be authoritative (read-your-writes), never an eventually consistent search.
   */
  findPayment(by: { transactionId: string } | PaymentLookup): Promise<ProviderPayment | null>;
  /** Cancels a pending hosted payment; a settled one comes back unchanged. */
  cancelPayment(transactionId: string): Promise<ProviderPayment>;
  createRefund(input: CreateRefundInput): Promise<ProviderRefund>;
  /** null when the provider has no such refund (so the request was never performed); authoritative. */
  findRefund(
    by: { refundId: string } | RefundLookup | { referenceId: string; transactionId: string },
  ): Promise<ProviderRefund | null>;
  /**
   * Disputes. null when the provider has no such dispute. An adapter that cannot do this (yet)
   * throws ProviderUnsupportedError: the record is kept as it is, never failed.
   */
  findDispute(disputeId: string): Promise<ProviderDispute | null>;
  /** Sends the evidence (the dispute goes `under_review`); the same evidence again is answered unchanged. */
  submitDisputeEvidence(disputeId: string, text: string): Promise<ProviderDispute>;
  /** Accepts the dispute (`accepted`: lost); again, unchanged. */
  acceptDispute(disputeId: string): Promise<ProviderDispute>;
  /**
   * Verifies a card and keeps it for a customer (creating the processor's customer when
   * `providerCustomerId` is null). An unknown token is a ProviderError `rejected`
   * (`invalid_card_token`); a declined verification is an answer (`declined`).
   */
  attachPaymentMethod(input: AttachPaymentMethodInput): Promise<AttachPaymentMethodResult>;
  /** Stops keeping a card (`reference` from attachPaymentMethod); one already gone is no error. */
  detachPaymentMethod(reference: string): Promise<void>;
  /** Verifies the signature and parses; throws ProviderWebhookError when it does not verify. */
  parseWebhook(rawBody: string, headers: Record<string, string | string[] | undefined>): ProviderWebhookEvent;
}
