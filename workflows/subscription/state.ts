import type { SubscriptionStatus } from '../../src/rules/subscriptionPlan';
import { PROVIDER_OUTCOME } from '../failures';
import type {
  CancelRequest,
  Collection,
  HostedCardUpdate,
  StartOutcome,
  SubscriptionCursor,
  SubscriptionLiveState,
  SubscriptionWorkflowInput,
} from '../subscriptionApi';

/** Continue-as-new at the first wait once a run has this many events (tests lower it). */
export const DEFAULT_HISTORY_EVENT_LIMIT = 600;

/**
 * Everything one run of a subscription's workflow knows, in one object: the steps read and
 * change it, the handlers read it, and continue-as-new hands it to the next run (`cursorOf`).
 */
export interface SubscriptionState {
  readonly input: SubscriptionWorkflowInput;
  readonly historyLimit: number;
  status: SubscriptionStatus;
  /** The period being billed, or next to bill, and its start (epoch ms; null before the card). */
  periodIndex: number;
  periodStartMs: number | null;
  /** The period's invoice while it is being collected. */
  collection: Collection | null;
  /**
   * The period's invoice is being opened by the step that makes its first attempt
   * (RENEWAL_OPEN_IN_CHARGE): collecting already, before `collection` knows the invoice.
   */
  opening: boolean;
  /** Waiting for the customer: when the hosted page expires (null: not requested yet). */
  authorization: { expiresAtMs: number | null } | null;
  /** The first cancel request (later ones change nothing). */
  cancel: CancelRequest | null;
  /** The record is gone (a refused first charge) or never appeared: nothing left to do. */
  discarded: boolean;
  /** What the create's answer is, once known. */
  firstOutcome: StartOutcome | null;
  providerEvent: boolean;
  /** A webhook about an invoice's charge (SUBSCRIPTION_INVOICE_WAITS): the waiting attempt is asked about. */
  invoiceEvent: boolean;
  /** Emails and callback workflows started in the background and not finished yet. */
  pendingSends: number;
  /** Emails this run started sending that are not confirmed sent (failed ones stay counted). */
  unconfirmedEmails: number;
  runs: number;
  /** Draining before continue-as-new: a waiting first-outcome Update answers at once. */
  closing: boolean;
  /** A hosted card update waiting for the customer (watched beside the billing loop). */
  cardUpdate: HostedCardUpdate | null;
  /** Hosted card update pages requested so far. */
  cardPages: number;
  /**
   * A past_due subscription's new card: `requested` until the collection takes it as its next
   * attempt, `charging` until that attempt's outcome is known.
   */
  cardCharge: 'requested' | 'charging' | null;
  /** A card update is being applied (they are applied one at a time). */
  cardBusy: boolean;
  /** SUBSCRIPTION_RUN_AGE recorded in this run: its waits end at the run age bound. */
  ageBounded: boolean;
  /** An operator's `handOver` signal arrived: the run hands over at its next wait (when age bounded). */
  handOverAsked: boolean;
  /**
   * On a test clock (TEST_CLOCK_TIME, decision 0090): the clock and the time its advances reached;
   * null: real time.
   */
  clock: { id: string; nowMs: number } | null;
  /** On a clock: the wait the run is parked in (its clock deadline; idle: the clock may move on). */
  clockWait: { untilMs: number | null; idle: boolean } | null;
  /**
   * Customer cards signalled (`customerCard`, decision 0088) since the last attempt started: a
   * wait for a new card after a hard decline ends on them (CUSTOMER_CHARGE_DEFAULT).
   */
  customerCards: string[];
  /** Customer cards an attempt has already read (the last few): a repeated signal changes nothing. */
  customerCardsSeen: string[];
  /** For the `state` query: the invoice and period last opened. */
  live: { invoiceId: string | null; currentPeriodStart: string | null; currentPeriodEnd: string | null };
}

export function initialState(input: SubscriptionWorkflowInput): SubscriptionState {
  const resume = input.resume;
  return {
    input,
    historyLimit: input.historyEventLimit ?? DEFAULT_HISTORY_EVENT_LIMIT,
    status: resume?.status ?? 'created',
    periodIndex: resume?.periodIndex ?? 0,
    // While authorizing no period has started (a cursor then carries 0 for it).
    periodStartMs: resume && !resume.authorization ? resume.periodStartMs : null,
    collection: resume?.collection ?? null,
    opening: false,
    authorization: resume ? (resume.authorization ?? null) : input.needsAuthorization ? { expiresAtMs: null } : null,
    cancel: null,
    discarded: false,
    // A run continued while still `created` was waiting for the provider: that is the answer.
    firstOutcome: resume
      ? resume.status === 'created'
        ? { kind: PROVIDER_OUTCOME.unavailable }
        : { kind: 'settled' }
      : null,
    providerEvent: resume?.providerEvent ?? false,
    invoiceEvent: resume?.invoiceEvent ?? false,
    pendingSends: 0,
    unconfirmedEmails: 0,
    runs: resume?.runs ?? 0,
    closing: false,
    live: { invoiceId: resume?.collection?.invoiceId ?? null, currentPeriodStart: null, currentPeriodEnd: null },
    cardUpdate: resume?.cardUpdate ?? null,
    cardPages: resume?.cardPages ?? 0,
    cardCharge: resume?.chargeNow ? 'requested' : null,
    cardBusy: false,
    ageBounded: false,
    handOverAsked: false,
    // Set by the workflow once it has asked TEST_CLOCK_TIME (clockOf).
    clock: null,
    clockWait: null,
    customerCards: resume?.customerCards ?? [],
    customerCardsSeen: resume?.customerCardsSeen ?? [],
  };
}

/** The clock time a run on a clock starts at: the previous run's, else the clock's at the create. */
export const clockStartOf = (input: SubscriptionWorkflowInput): number =>
  input.resume?.clockNowMs ?? input.testClock?.startMs ?? 0;

/** The subscription's now: its clock's time on a test clock, real time otherwise (decision 0090). */
export const nowMs = (s: SubscriptionState): number => (s.clock ? s.clock.nowMs : Date.now());

/** What the next run needs to go on exactly where this one stopped. */
export function cursorOf(s: SubscriptionState): SubscriptionCursor {
  return {
    status: s.status,
    periodIndex: s.periodIndex,
    // Before the card is there no period has started; the next run sets it when billing begins.
    periodStartMs: s.periodStartMs ?? 0,
    runs: s.runs + 1,
    ...(s.authorization ? { authorization: { ...s.authorization } } : {}),
    ...(s.collection ? { collection: { ...s.collection } } : {}),
    ...(s.providerEvent ? { providerEvent: true } : {}),
    ...(s.invoiceEvent ? { invoiceEvent: true } : {}),
    ...(s.cardUpdate ? { cardUpdate: { ...s.cardUpdate } } : {}),
    ...(s.cardPages > 0 ? { cardPages: s.cardPages } : {}),
    ...(s.cardCharge === 'requested' ? { chargeNow: true } : {}),
    ...(s.unconfirmedEmails === 0 ? { emailsConfirmed: true } : {}),
    ...(s.clock ? { clockNowMs: s.clock.nowMs } : {}),
    ...(s.customerCards.length > 0 ? { customerCards: [...s.customerCards] } : {}),
    ...(s.customerCardsSeen.length > 0 ? { customerCardsSeen: [...s.customerCardsSeen] } : {}),
  };
}

export function liveStateOf(s: SubscriptionState): SubscriptionLiveState {
  return {
    status: s.status,
    periodIndex: s.periodIndex,
    currentPeriodStart: s.live.currentPeriodStart,
    currentPeriodEnd: s.live.currentPeriodEnd,
    invoiceId: s.collection?.invoiceId ?? s.live.invoiceId,
    attempts: s.collection?.attempts ?? 0,
    // Waiting for a new card after a hard decline: no attempt is due.
    nextAttemptAt:
      s.collection && s.collection.newCardByMs === undefined && !s.collection.undecided?.waiting
        ? new Date(s.collection.nextAttemptAtMs).toISOString()
        : null,
    cancelRequested: s.cancel !== null,
    runs: s.runs,
  };
}

/** Whether a period's invoice is being collected (a new card's charge at once then applies). */
export const collecting = (s: SubscriptionState): boolean => s.collection !== null || s.opening;

/**
 * Whether a new card is charged at once: the invoice is being collected, and not waiting for the
 * processor's decision (`processing`: the new card only replaces the old one).
 */
export const chargesNewCardAtOnce = (s: SubscriptionState): boolean =>
  collecting(s) && s.collection?.undecided?.waiting !== 'processing';

/** How many customer cards an attempt read are remembered (a repeated signal is about a recent one). */
const CUSTOMER_CARDS_SEEN = 20;

/** A `customerCard` signal: noted unless an attempt has read that card already. */
export function noteCustomerCard(s: SubscriptionState, paymentMethodId: string): void {
  if (s.customerCards.includes(paymentMethodId) || s.customerCardsSeen.includes(paymentMethodId)) return;
  s.customerCards.push(paymentMethodId);
}

/**
 * An attempt starts: it reads the customer's cards from PostgreSQL, so the cards signalled so far
 * are in it (a signal is sent after its card is committed); only later ones wake a wait after it.
 */
export function customerCardsRead(s: SubscriptionState): void {
  if (s.customerCards.length === 0) return;
  s.customerCardsSeen = [...s.customerCardsSeen, ...s.customerCards].slice(-CUSTOMER_CARDS_SEEN);
  s.customerCards = [];
}
