import type { EntityManager } from '@mikro-orm/postgresql';
import { IsolationLevel, LockMode } from '@mikro-orm/core';
import { UniqueConstraintViolationException } from '@mikro-orm/core';
import {
  Email,
  Invoice,
  Merchant,
  MerchantEvent,
  Subscription,
  SubscriptionPhase,
  TestClock,
  type Customer,
  type KeyEnvironment,
} from '../db/entities';
import { AppError } from '../errors';
import { newId } from '../ids';
import { parameterisedRows, preparedRows, type PreparedStatement } from '../db/orm';
import { toMajor } from '../rules/money';
import { declineTypeOf, type DeclineType } from '../rules/declines';
import type { SubscriptionRecordForRevival } from '../rules/subscriptionCollection';
import { presentInvoice, type InvoiceView } from './invoices';
import { emailFields, recordEmail, recordWithheldEmail, type ClaimedEmail, type EmailProfile } from './emails';
import { asTestModeEmail, subscriptionEmailRecipient } from '../rules/emailRecipient';
import { outboxEventFields, recordEvent, type MerchantEventType } from './events';
import { subscriptionEmail, type SubscriptionEmailKind, type SubscriptionOfEmail } from './subscriptionEmails';
import {
  DEFAULT_RETRY_SCHEDULE_DAYS,
  type Outbox,
  type Plan,
  type SubscriptionStatus,
} from '../rules/subscriptionPlan';
import type { RecordScope } from './scope';
import { lockQuota, quotaExceeded } from './quotas';
import { takeClockSeat } from './testClocks';
import { addPaymentMethod } from './customers';
import type { CardDetails } from '../providers/types';
import { workerMetrics, type SubscriptionChargeOutcome } from '../metrics/worker';

/**
 * Subscription rules on the database side: the response shape, creation, and every state
 * change the workflow makes, each in one transaction with its outbox rows (merchant events
 * and customer emails). Every change is idempotent: applied again, it changes nothing and
 * answers the same outbox ids, so an activity may always be retried.
 */

export const EVERGREEN = 'evergreen';

export type { Outbox };

/** What a subscription's view ({@link presentSubscription}) reads of it: an entity, or a row read without the ORM. */
export type SubscriptionViewFields = Pick<
  Subscription,
  | 'id'
  | 'externalId'
  | 'amountMinor'
  | 'currency'
  | 'billingIntervalDays'
  | 'status'
  | 'currentPeriodStart'
  | 'currentPeriodEnd'
  | 'redirectUrl'
  | 'clockCreatedAt'
  | 'createdAt'
  | 'updatedAt'
  | 'cancelledAt'
  | 'cancellationReason'
  | 'environment'
  | 'processor'
  | 'customer'
  | 'customerId'
  | 'description'
  | 'metadata'
  | 'callbackUrl'
  | 'returnUrl'
  | 'retryScheduleDays'
> & { testClock: { id: string } | null };

/** What the view reads of a phase. */
export type PhaseViewFields = Pick<
  SubscriptionPhase,
  'id' | 'name' | 'position' | 'iterations' | 'amountMinor' | 'billingIntervalDays'
>;

/** What the view reads of the latest invoice. */
export type LatestInvoiceFields = Omit<InvoiceView, 'subscriptionId'> & Pick<Invoice, 'updatedAt'>;

export function presentSubscription(
  s: SubscriptionViewFields,
  phases: PhaseViewFields[],
  latestInvoice: LatestInvoiceFields | null,
) {
  return {
    id: s.id,
    externalId: s.externalId,
    amount: toMajor(s.amountMinor, s.currency),
    currency: s.currency,
    billingIntervalDays: s.billingIntervalDays,
    status: s.status,
    currentPeriodStart: s.currentPeriodStart?.toISOString() ?? null,
    currentPeriodEnd: s.currentPeriodEnd?.toISOString() ?? null,
    phases: [...phases]
      .sort((a, b) => a.position - b.position)
      .map((p) => ({
        id: p.id,
        name: p.name,
        order: p.position,
        iterations: p.iterations,
        amount: toMajor(p.amountMinor, s.currency),
        billingIntervalDays: p.billingIntervalDays,
      })),
    redirectUrl: s.redirectUrl,
    // On a test clock, clock time (decision 0090): its create, and its latest invoice's change.
    createdAt: (s.clockCreatedAt ?? s.createdAt).toISOString(),
    updatedAt: (s.clockCreatedAt ? clockUpdatedAt(s, s.clockCreatedAt, latestInvoice) : s.updatedAt).toISOString(),
    cancelledAt: s.cancelledAt?.toISOString() ?? null,
    cancellationReason: s.cancellationReason,
    environment: s.environment,
    processor: s.processor,
    customer: s.customer,
    customerId: s.customerId,
    description: s.description,
    metadata: s.metadata,
    callbackUrl: s.callbackUrl,
    returnUrl: s.returnUrl,
    retryScheduleDays: s.retryScheduleDays,
    // The full invoice of "Lists" (hostedUrl and declineType included).
    latestInvoice: latestInvoice && presentInvoice({ ...latestInvoice, subscriptionId: s.id }, s),
    testClock: s.testClock?.id ?? null,
  };
}

/** A clock subscription's last change in clock time: its cancellation, its latest invoice's change, or its create. */
const clockUpdatedAt = (
  s: Pick<Subscription, 'cancelledAt'>,
  createdAt: Date,
  latestInvoice: Pick<Invoice, 'updatedAt'> | null,
): Date =>
  new Date(Math.max(createdAt.getTime(), latestInvoice?.updatedAt.getTime() ?? 0, s.cancelledAt?.getTime() ?? 0));

export type SubscriptionResponse = ReturnType<typeof presentSubscription>;

/** A subscription as the API answers it, scoped to its merchant and environment (null: not found). */
export async function findSubscriptionView(
  em: EntityManager,
  id: string,
  scope: RecordScope,
): Promise<SubscriptionResponse | null> {
  // One snapshot: the subscription and its latest invoice as one change left them (read apart,
  // a change committing in between showed e.g. an invoice requires_action on an active one).
  return em.fork().transactional(
    async (tx) => {
      const subscription = await tx.findOne(Subscription, {
        id,
        merchant: scope.merchantId,
        environment: scope.environment,
      });
      if (!subscription) return null;
      return viewOf(tx, subscription);
    },
    { isolationLevel: IsolationLevel.REPEATABLE_READ },
  );
}

async function viewOf(em: EntityManager, subscription: Subscription): Promise<SubscriptionResponse> {
  const [phases, invoices] = await Promise.all([
    em.find(SubscriptionPhase, { subscription: subscription.id }, { orderBy: { position: 'asc' } }),
    em.find(Invoice, { subscription: subscription.id }, { orderBy: { periodIndex: 'desc' }, limit: 1 }),
  ]);
  return presentSubscription(subscription, phases, invoices[0] ?? null);
}

/** The plan the workflow bills by, from the stored phases. */
export function planOf(subscription: Pick<Subscription, 'retryScheduleDays'>, phases: SubscriptionPhase[]): Plan {
  return {
    phases: [...phases]
      .sort((a, b) => a.position - b.position)
      .map((p) => ({
        id: p.id,
        amountMinor: p.amountMinor,
        billingIntervalDays: p.billingIntervalDays,
        iterations: p.iterations,
      })),
    retryScheduleDays: subscription.retryScheduleDays,
  };
}

export interface NewSubscription {
  merchantId: string;
  environment: KeyEnvironment;
  processor: string;
  externalId: string;
  amountMinor: number;
  currency: string;
  billingIntervalDays: number;
  cardToken?: string;
  customer?: Customer;
  /** Created with `customerId`: each later charge uses that customer's default (decision 0087). */
  customerId?: string;
  /** The customer's payment method `cardToken` is (the first charge's card). */
  paymentMethodId?: string;
  description?: string;
  metadata?: Record<string, string>;
  callbackUrl?: string;
  returnUrl?: string;
  retryScheduleDays: number[];
  phases: Array<{ name: string; iterations: number; amountMinor: number; billingIntervalDays: number }>;
  /** On a test clock (decision 0090): the clock, whose time is the subscription's creation. */
  testClock?: TestClock;
}

/** Inserts a `created` subscription with its phases, the evergreen phase last. Caller flushes. */
export function insertSubscription(
  em: EntityManager,
  merchant: Merchant,
  input: NewSubscription,
): { subscription: Subscription; phases: SubscriptionPhase[] } {
  const now = new Date();
  const subscription = em.create(Subscription, {
    id: newId('subscription'),
    merchant,
    externalId: input.externalId,
    environment: input.environment,
    processor: input.processor,
    amountMinor: input.amountMinor,
    currency: input.currency,
    billingIntervalDays: input.billingIntervalDays,
    status: 'created',
    cardToken: input.cardToken ?? null,
    redirectUrl: null,
    setupTransactionId: null,
    customer: input.customer ?? null,
    customerId: input.customerId ?? null,
    paymentMethodId: input.paymentMethodId ?? null,
    description: input.description ?? null,
    metadata: input.metadata ?? null,
    callbackUrl: input.callbackUrl ?? null,
    returnUrl: input.returnUrl ?? null,
    retryScheduleDays: input.retryScheduleDays,
    currentPeriodStart: null,
    currentPeriodEnd: null,
    cancelledAt: null,
    cancellationReason: null,
    cancelRequestedAt: null,
    cancelRequestReason: null,
    cancelRequestNotify: null,
    testClock: input.testClock ?? null,
    clockCreatedAt: input.testClock?.frozenTime ?? null,
    createdAt: now,
    updatedAt: now,
  });
  const listed = [
    ...input.phases.map((p) => ({ ...p })),
    {
      name: EVERGREEN,
      iterations: null,
      amountMinor: input.amountMinor,
      billingIntervalDays: input.billingIntervalDays,
    },
  ];
  const phases = listed.map((p, i) =>
    em.create(SubscriptionPhase, {
      id: newId('phase'),
      subscription,
      name: p.name,
      position: i + 1,
      iterations: p.iterations,
      amountMinor: p.amountMinor,
      billingIntervalDays: p.billingIntervalDays,
    }),
  );
  return { subscription, phases };
}

/** What POST /subscriptions asks for (the parsed body). */
export interface SubscriptionRequest {
  externalId: string;
  amountMinor: number;
  currency: string;
  billingIntervalDays: number;
  cardToken?: string;
  customer?: Customer;
  /** Resolved from `customerId` (src/app/subscriptions.ts): the customer and its method charged first. */
  customerId?: string;
  paymentMethodId?: string;
  /** The processor that keeps `paymentMethodId`'s card: the subscription must go to it. */
  paymentMethodProcessor?: string;
  description?: string;
  metadata?: Record<string, string>;
  callbackUrl?: string;
  returnUrl?: string;
  retryScheduleDays?: number[];
  phases: Array<{ name: string; iterations: number; amountMinor: number; billingIntervalDays: number }>;
  /** A test clock id (test keys only; decision 0090). */
  testClock?: string;
}

function conflict(existing: Subscription, body: SubscriptionRequest): AppError | undefined {
  if (existing.amountMinor === body.amountMinor && existing.currency === body.currency) return undefined;
  return new AppError(
    'external_id_conflict',
    'A subscription with this externalId exists with another amount or currency.',
    { subscriptionId: existing.id },
  );
}

/**
 * Inserts the subscription with its phases and commits, or finds the one this externalId
 * already names. Its workflow is started after the commit (a workflow never looks for a row
 * that is not there); a commit whose start never happened is picked up by the sweeper.
 */
async function createOrFind(
  em: EntityManager,
  scope: RecordScope,
  body: SubscriptionRequest,
  processor: string,
  liveTestLimit: number,
): Promise<{ subscription: Subscription; phases: SubscriptionPhase[] | null }> {
  return em.fork().transactional(async (tx) => {
    // The `live_test_subscriptions` quota (decision 0079): counted and inserted under its advisory
    // lock, after the externalId's own record is looked for (a repeat answers it, never quota_exceeded).
    // Live: every subscription but a cancelled one (it holds its workflow).
    const quota = scope.environment === 'test' && liveTestLimit > 0;
    if (quota) await lockQuota(tx, 'live_test_subscriptions', scope);
    const existing = await tx.findOne(Subscription, { merchant: scope.merchantId, externalId: body.externalId });
    if (existing) {
      // externalIds stay unique per merchant across environments (one unique key): the other
      // environment's subscription is refused without being named or described.
      if (existing.environment !== scope.environment) {
        throw new AppError('external_id_conflict', 'This externalId is used by a record of the other environment.');
      }
      const mismatch = conflict(existing, body);
      if (mismatch) throw mismatch;
      return { subscription: existing, phases: null };
    }
    if (quota) {
      const current = await tx.count(Subscription, {
        merchant: scope.merchantId,
        environment: scope.environment,
        status: { $ne: 'cancelled' },
      });
      if (current >= liveTestLimit) throw quotaExceeded('live_test_subscriptions', liveTestLimit, current);
    }
    // On a test clock: in scope, not advancing, not full; its time is the creation's (decision 0090).
    const clock = body.testClock ? await takeClockSeat(tx, scope, body.testClock) : undefined;
    const { subscription, phases } = insertSubscription(tx, tx.getReference(Merchant, scope.merchantId), {
      merchantId: scope.merchantId,
      environment: scope.environment,
      processor,
      externalId: body.externalId,
      amountMinor: body.amountMinor,
      currency: body.currency,
      billingIntervalDays: body.billingIntervalDays,
      ...(body.cardToken ? { cardToken: body.cardToken } : {}),
      ...(body.customer ? { customer: body.customer } : {}),
      ...(body.customerId ? { customerId: body.customerId } : {}),
      ...(body.paymentMethodId ? { paymentMethodId: body.paymentMethodId } : {}),
      ...(body.description ? { description: body.description } : {}),
      ...(body.metadata ? { metadata: body.metadata } : {}),
      ...(body.callbackUrl ? { callbackUrl: body.callbackUrl } : {}),
      ...(body.returnUrl ? { returnUrl: body.returnUrl } : {}),
      retryScheduleDays: body.retryScheduleDays ?? DEFAULT_RETRY_SCHEDULE_DAYS,
      ...(clock ? { testClock: clock } : {}),
      phases: body.phases.map((p) => ({
        name: p.name,
        iterations: p.iterations,
        amountMinor: p.amountMinor,
        billingIntervalDays: p.billingIntervalDays,
      })),
    });
    await tx.flush();
    return { subscription, phases };
  });
}

/**
 * createOrFind, once more when two identical requests ran at once: the loser's insert violates
 * the unique externalId and, once more, finds the winner's subscription. Answers the
 * subscription and its phases (null when found: subscriptionStartInput reads them).
 */
export async function createOrFindSubscription(
  em: EntityManager,
  scope: RecordScope,
  body: SubscriptionRequest,
  { processor, liveTestLimit = 0 }: { processor: string; liveTestLimit?: number },
): Promise<{ subscription: Subscription; phases: SubscriptionPhase[] | null }> {
  return createOrFind(em, scope, body, processor, liveTestLimit).catch((err: unknown) => {
    if (err instanceof UniqueConstraintViolationException)
      return createOrFind(em, scope, body, processor, liveTestLimit);
    throw err;
  });
}

/** The processor of the subscription this externalId names in the caller's environment (null: none). */
export async function existingSubscriptionProcessor(
  em: EntityManager,
  scope: RecordScope,
  externalId: string,
): Promise<string | null> {
  const existing = await em
    .fork()
    .findOne(
      Subscription,
      { merchant: scope.merchantId, externalId, environment: scope.environment },
      { fields: ['processor'] },
    );
  return existing?.processor ?? null;
}

/** What a subscription's workflow is started with: the record, its merchant and its plan. */
export type SubscriptionStartInput = Subscription & { merchantId: string; plan: Plan };

/** The start input of a subscription, with its phases as written (or read here when not given). */
export async function subscriptionStartInput(
  em: EntityManager,
  subscription: Subscription,
  phases: SubscriptionPhase[] | null,
): Promise<SubscriptionStartInput> {
  const stored =
    phases ??
    (await em.fork().find(SubscriptionPhase, { subscription: subscription.id }, { orderBy: { position: 'asc' } }));
  return { ...subscription, merchantId: subscription.merchant.id, plan: planOf(subscription, stored) };
}

/** The start input of a subscription by id (the sweeper); null when it was discarded meanwhile. */
export async function subscriptionStartOf(em: EntityManager, id: string): Promise<SubscriptionStartInput | null> {
  const subscription = await em.findOne(Subscription, { id });
  if (!subscription) return null;
  const phases = await em.find(SubscriptionPhase, { subscription: id }, { orderBy: { position: 'asc' } });
  return { ...subscription, merchantId: subscription.merchant.id, plan: planOf(subscription, phases) };
}

/**
 * A live subscription and its latest invoice as the record holds them (subscriptionRevivalOf in
 * src/rules/subscriptionCollection.ts derives where a new run takes it up; decision 0061): the
 * subscription's status and setup, the invoice's status, attempts, decline, next date, whether an
 * attempt's call is outstanding (marked sent, no outcome recorded), its last change, and the
 * authentication emails of its waiting attempt (their reminders); without an invoice, whether a
 * card is on file and the subscription's last change (a hosted authorization's). Null: gone.
 */
export async function subscriptionRecordOf(
  em: EntityManager,
  id: string,
): Promise<SubscriptionRecordForRevival | null> {
  const rows: Array<{
    status: SubscriptionRecordForRevival['status'];
    setup_transaction_id: string | null;
    has_card: boolean;
    subscription_updated_at: Date;
    invoice_id: string | null;
    period_index: number | null;
    period_start: Date | null;
    period_end: Date | null;
    invoice_status: NonNullable<SubscriptionRecordForRevival['invoice']>['status'] | null;
    attempts: number | null;
    decline_type: 'hard' | 'soft' | null;
    next_attempt_at: Date | null;
    call_sent: boolean | null;
    updated_at: Date | null;
    action_keys: string[] | null;
    cancel_requested_at: Date | null;
    cancel_request_reason: string | null;
    cancel_request_notify: boolean | null;
  }> = await em.getConnection().execute(
    `select s.status, s.setup_transaction_id, s.card_token is not null as has_card,
            s.cancel_requested_at, s.cancel_request_reason, s.cancel_request_notify,
            s.updated_at as subscription_updated_at, i.id as invoice_id, i.period_index, i.period_start, i.period_end,
            i.status as invoice_status, i.attempts, i.decline_type, i.next_attempt_at,
            i.provider_call_sent_at is not null as call_sent, i.updated_at,
            (select array_agg(e.dedupe_key) from emails e
              where i.status = 'requires_action'
                and e.dedupe_key in (
                  select s.id || ':email:action_required:' || i.id || ':' || (i.attempts + 1) || ':' || n
                    from generate_series(0, jsonb_array_length(s.retry_schedule_days)) n)) as action_keys
          from subscriptions s
          left join lateral (
            select * from invoices where subscription_id = s.id order by period_index desc limit 1
          ) i on true
          where s.id = ?`,
    [id],
  );
  const row = rows[0];
  if (!row) return null;
  const ms = (d: Date | null) => (d === null ? null : new Date(d).getTime());
  return {
    status: row.status,
    setupTransactionId: row.setup_transaction_id,
    hasCard: row.has_card === true,
    updatedAtMs: ms(row.subscription_updated_at)!,
    invoice:
      row.invoice_id === null
        ? null
        : {
            id: row.invoice_id,
            periodIndex: Number(row.period_index),
            periodStartMs: ms(row.period_start)!,
            periodEndMs: ms(row.period_end)!,
            status: row.invoice_status!,
            attempts: Number(row.attempts),
            declineType: row.decline_type,
            nextAttemptAtMs: ms(row.next_attempt_at),
            callSent: row.call_sent === true,
            updatedAtMs: ms(row.updated_at)!,
          },
    actionRequiredEmailKeys: row.action_keys ?? [],
    cancelRequest:
      row.cancel_requested_at === null || row.status === 'cancelled'
        ? null
        : { reason: row.cancel_request_reason ?? 'merchant_request', notify: row.cancel_request_notify ?? true },
  };
}

// ---- state changes made by the workflow (through activities) ----

/** Runs one state change under the subscription's row lock, then answers its outbox ids. */
async function change(
  em: EntityManager,
  subscriptionId: string,
  /** Where its emails go (decision 0066); null: this change records none. */
  profile: EmailProfile | null,
  apply: (tx: EntityManager, s: Subscription, out: OutboxWriter) => Promise<void>,
): Promise<Outbox | null> {
  return em.transactional(async (tx) => {
    const subscription = await tx.findOne(
      Subscription,
      { id: subscriptionId },
      // Lock the subscription's row only (`for update of`), not the joined merchant's.
      { lockMode: LockMode.PESSIMISTIC_WRITE, lockTableAliases: ['s0'], populate: ['merchant'] },
    );
    if (!subscription) return null;
    // On a test clock its emails are dated in clock time (decision 0090).
    const dated = subscription.testClock && profile ? await nowOfRecord(tx, subscription) : null;
    const out = new OutboxWriter(tx, subscription, profile, dated);
    await apply(tx, subscription, out);
    await out.recordEvents();
    await tx.flush();
    return { status: subscription.status, ...(await out.ids()) };
  });
}

/**
 * Records emails and events under stable dedupe keys (`<subscriptionId>:...`); on a re-run the
 * state check skips the recording, and `ids()` finds what the first run recorded.
 */
class OutboxWriter {
  private readonly emailKeys: string[] = [];
  private readonly eventKeys: string[] = [];

  constructor(
    private readonly tx: EntityManager,
    private readonly subscription: Subscription,
    private readonly profile: EmailProfile | null,
    /** The Date of its emails when not their send's time (a test clock's time). */
    private readonly dated: Date | null = null,
  ) {}

  private key(suffix: string): string {
    return `${this.subscription.id}:${suffix}`;
  }

  /** Ids of the rows recorded by this change (all there is to answer when nothing is expected). */
  private readonly recordedEmailIds: string[] = [];
  private readonly recordedEventIds: string[] = [];
  /** Rows of a previous run are named: ids() must look them up. */
  private expecting = false;

  /** Names outbox rows a previous run of this change recorded (nothing is recorded again). */
  expect(emailSuffixes: string[], eventSuffixes: string[]): void {
    this.expecting = true;
    this.emailKeys.push(...emailSuffixes.map((s) => this.key(s)));
    this.eventKeys.push(...eventSuffixes.map((s) => this.key(s)));
  }

  private readonly events: Array<{ type: MerchantEventType; dedupeKey: string }> = [];

  event(type: MerchantEventType, suffix: string): void {
    const dedupeKey = this.key(suffix);
    this.eventKeys.push(dedupeKey);
    // Every event is recorded (the event log); only one with a callbackUrl is delivered.
    this.events.push({ type, dedupeKey });
  }

  /** Events carry the subscription as the API answers it after the change. */
  async recordEvents(): Promise<void> {
    if (this.events.length === 0) return;
    const s = this.subscription;
    await this.tx.flush();
    const data = await viewOf(this.tx, s);
    for (const { type, dedupeKey } of this.events) {
      const event = recordEvent(this.tx, {
        merchant: s.merchant,
        type,
        resourceId: s.id,
        dedupeKey,
        callbackUrl: s.callbackUrl,
        environment: s.environment,
        data,
      });
      if (s.callbackUrl) this.recordedEventIds.push(event.id);
    }
  }

  /**
   * Records an email to the subscription's recipient (decision 0066). `claimSeconds`: the row is
   * inserted claimed for that long, as the mailer claims one, and answered for the caller to send
   * at once (null when nothing is to be sent: nobody to write to, or withheld).
   */
  email(
    kind: SubscriptionEmailKind,
    suffix: string,
    facts: Parameters<typeof subscriptionEmail>[2],
    claimSeconds?: number,
  ): ClaimedEmail | null {
    const s = this.subscription;
    // A change that records emails is always given a profile: never guess where one goes.
    if (!this.profile) throw new Error(`subscription email ${kind} recorded without an email profile`);
    const addressed = addressedEmail(this.profile, s, s.merchant.email, kind, facts);
    if (addressed.kind === 'none') return null; // nobody to write to; the merchant still gets its events
    const dedupeKey = this.key(suffix);
    this.emailKeys.push(dedupeKey);
    if (addressed.kind === 'withheld') {
      recordWithheldEmail(this.tx, { merchant: s.merchant, dedupeKey, ...addressed.content });
      return null;
    }
    const email = recordEmail(
      this.tx,
      { merchant: s.merchant, dedupeKey, to: addressed.to, ...addressed.content },
      claimSeconds === undefined ? undefined : { claimSeconds },
      this.dated,
    );
    this.recordedEmailIds.push(email.id);
    return claimSeconds === undefined ? null : claimedEmailOf(email);
  }

  async ids(): Promise<{ emailIds: string[]; eventIds: string[] }> {
    await this.tx.flush();
    // A first run knows what it recorded (rows are never sent before their transaction commits);
    // only a re-run that names earlier rows looks them up. No callbackUrl: no events at all.
    if (!this.expecting) return { emailIds: [...this.recordedEmailIds], eventIds: [...this.recordedEventIds] };
    const [emails, events] = await Promise.all([
      this.emailKeys.length
        ? this.tx.find(Email, { dedupeKey: { $in: this.emailKeys }, sentAt: null }, { fields: ['id'] })
        : [],
      this.eventKeys.length && this.subscription.callbackUrl
        ? this.tx.find(MerchantEvent, { dedupeKey: { $in: this.eventKeys }, deliveredAt: null }, { fields: ['id'] })
        : [],
    ]);
    return { emailIds: emails.map((e) => e.id), eventIds: events.map((e) => e.id) };
  }
}

/** A recorded email as its recorder sends it at once (the Date header only when not the send's time). */
const claimedEmailOf = (email: {
  id: string;
  to: string;
  subject: string;
  text: string;
  datedAt: Date | null;
}): ClaimedEmail => ({
  id: email.id,
  to: email.to,
  subject: email.subject,
  text: email.text,
  ...(email.datedAt ? { datedAt: email.datedAt } : {}),
});

/**
 * A subscription email addressed (decision 0066): nobody to write to, withheld (recorded, never
 * sent), or to `to` (the customer, or the merchant in its place with the test-mode text).
 */
type AddressedEmail =
  | { kind: 'none' }
  | { kind: 'withheld'; content: { subject: string; text: string } }
  | { kind: 'to'; to: string; content: { subject: string; text: string } };

function addressedEmail(
  profile: EmailProfile,
  s: SubscriptionOfEmail & Pick<Subscription, 'environment'>,
  merchantEmail: string | null,
  kind: SubscriptionEmailKind,
  facts: Parameters<typeof subscriptionEmail>[2],
): AddressedEmail {
  const recipient = subscriptionEmailRecipient({
    production: profile.production,
    environment: s.environment,
    customerEmail: s.customer?.email,
    merchantEmail,
  });
  if (recipient.kind === 'none') return { kind: 'none' };
  const content = subscriptionEmail(kind, s, facts);
  if (recipient.kind === 'withheld') {
    return { kind: 'withheld', content: asTestModeEmail(content, recipient.onBehalfOf) };
  }
  return {
    kind: 'to',
    to: recipient.to,
    content: recipient.kind === 'merchant_test' ? asTestModeEmail(content, recipient.onBehalfOf) : content,
  };
}

/** The hosted card authorization was created at the provider: `pending`, with its page. */
export async function markAwaitingAuthorization(
  em: EntityManager,
  subscriptionId: string,
  setup: { transactionId: string; redirectUrl: string | null },
): Promise<Outbox | null> {
  return change(em, subscriptionId, null, async (_tx, s) => {
    if (s.status !== 'created') return;
    s.status = 'pending';
    s.setupTransactionId = setup.transactionId;
    s.redirectUrl = setup.redirectUrl;
    s.updatedAt = new Date();
  });
}

/**
 * The customer authorized a card on the hosted page: it is the one charged from now on. A
 * subscription made for a customer (`customerId`) also keeps the card as one of the customer's
 * payment methods, once (its source is the subscription), the default when the customer has none
 * (decision 0087): later charges then follow the customer's default as for any other card.
 */
export async function saveAuthorizedCard(
  em: EntityManager,
  subscriptionId: string,
  cardToken: string,
  card: CardDetails | null = null,
): Promise<void> {
  const kept: { customer: { id: string; processor: string } | null } = { customer: null };
  await change(em, subscriptionId, null, async (_tx, s) => {
    if (s.customerId !== null && (s.cardToken === null || s.cardToken === cardToken)) {
      kept.customer = { id: s.customerId, processor: s.processor };
    }
    if (s.cardToken) return;
    s.cardToken = cardToken;
    s.updatedAt = new Date();
  });
  if (!kept.customer) return;
  const { id: customerId, processor } = kept.customer;
  await addPaymentMethod(em, customerId, {
    id: newId('paymentMethod'),
    processor,
    reference: cardToken,
    providerCustomerId: null,
    card,
    sourcePaymentId: subscriptionId,
  });
  // The subscription names the method its card is (ledger metadata.paymentMethodId of its charges).
  await em
    .fork()
    .getConnection()
    .execute(
      `update subscriptions s set payment_method_id = pm.id
         from payment_methods pm
        where s.id = ? and s.payment_method_id is null and pm.source_payment_id = s.id`,
      [subscriptionId],
    );
}

/** Activation: first period paid (or free). Recorded once; the caller decides when. */
function activate(s: Subscription, out: OutboxWriter): void {
  if (s.status === 'active') return;
  const first = s.status === 'created' || s.status === 'pending';
  s.status = 'active';
  if (first) {
    out.event('subscription.activated', 'activated');
    out.email('activated', 'email:activated', {});
  }
}

export interface OpenInvoiceInput {
  subscriptionId: string;
  periodIndex: number;
  phaseId: string;
  amountMinor: number;
  periodStart: Date;
  periodEnd: Date;
  /** On a test clock: the clock's time, the invoice's dates (decision 0090); absent: now. */
  at?: Date;
}

export type OpenedInvoice =
  | {
      kind: 'open' | 'paid' | 'void';
      invoiceId: string;
      attempts: number;
      outbox: Outbox;
      /**
       * Set when this call inserted the invoice with its first charge attempt marked sent
       * (`markChargeSent`): no earlier call under that attempt's key can exist.
       */
      chargeMarkedSent?: true;
      /** The new invoice as charging reads it (`markChargeSent`): this process's, never the workflow's. */
      forCharge?: InvoiceForCharge;
    }
  /** `outbox`: the cancellation this call applied from a recorded DELETE (decision 0076). */
  | { kind: 'cancelled'; outbox?: Outbox }
  | { kind: 'missing' };

/**
 * A billing period begins: its invoice (one per period, whatever the retries), and the
 * subscription's current period. A free period's invoice is paid at once (nothing to charge).
 * `markChargeSent`: the caller charges the invoice next, in the same activity; a new invoice of a
 * subscription with a card is inserted with its provider call marked sent (issue 12: the mark's
 * own statement saved; the rule that it is committed before the provider is asked still holds).
 */
export async function openPeriodInvoice(
  em: EntityManager,
  input: OpenInvoiceInput,
  /** `profile`: where its emails go (a free period's invoice activates: decision 0066). */
  options: { markChargeSent?: boolean; profile: EmailProfile },
): Promise<OpenedInvoice> {
  if (input.amountMinor > 0) {
    const fast = await openChargeableInvoice(em, input, options.markChargeSent === true);
    if (fast) return fast;
  }
  let opened = undefined as
    { kind: 'open' | 'paid' | 'void'; invoiceId: string; attempts: number } | { kind: 'cancelled' } | undefined;
  const outbox = await change(em, input.subscriptionId, options.profile, async (tx, s, out) => {
    let invoice = await tx.findOne(Invoice, { subscription: s.id, periodIndex: input.periodIndex });
    if (!invoice) {
      if (s.status === 'cancelled') {
        opened = { kind: 'cancelled' };
        return;
      }
      if (s.cancelRequestedAt) {
        // A DELETE recorded while no workflow took it (decision 0076): no new invoice, the
        // cancellation applied here, under the row's lock.
        await applyCancellation(tx, s, out, s.cancelRequestReason ?? 'merchant_request', s.cancelRequestNotify ?? true);
        opened = { kind: 'cancelled' };
        return;
      }
      const now = input.at ?? new Date();
      invoice = tx.create(Invoice, {
        id: newId('invoice'),
        merchant: s.merchant,
        subscription: s,
        periodIndex: input.periodIndex,
        phase: tx.getReference(SubscriptionPhase, input.phaseId),
        amountMinor: input.amountMinor,
        currency: s.currency,
        periodStart: input.periodStart,
        periodEnd: input.periodEnd,
        status: input.amountMinor === 0 ? 'paid' : 'open',
        attempts: 0,
        providerTransactionId: null,
        failureCode: null,
        failureMessage: null,
        nextAttemptAt: null,
        paidAt: input.amountMinor === 0 ? now : null,
        voidedAt: null,
        createdAt: now,
        updatedAt: now,
      });
      s.currentPeriodStart = input.periodStart;
      s.currentPeriodEnd = input.periodEnd;
      s.updatedAt = now;
      if (invoice.status === 'paid') activate(s, out);
    } else if (invoice.status === 'paid') {
      // A re-run of a step that also charged it (openAndChargeInvoice): that charge's receipt and
      // event are named too, or one not yet sent when its worker died would never be.
      expectPaidInvoice(out, invoice.id);
    } else {
      out.expect(['email:activated'], ['activated']);
    }
    // An invoice whose attempt waits for the customer or the processor is still being collected.
    const kind = invoice.status === 'paid' || invoice.status === 'void' ? invoice.status : 'open';
    opened = { kind, invoiceId: invoice.id, attempts: invoice.attempts };
  });
  if (!outbox || !opened) return { kind: 'missing' };
  if (opened.kind !== 'cancelled') return { ...opened, outbox };
  return outbox.emailIds.length > 0 || outbox.eventIds.length > 0 ? { kind: 'cancelled', outbox } : opened;
}

/** The outbox keys (suffixes) of an invoice's successful charge: its receipt and its event. */
const paidChargeKeys = (invoiceId: string) => ({
  receipt: `email:receipt:${invoiceId}`,
  succeeded: `charge_succeeded:${invoiceId}`,
});

/** A re-run names what paying the invoice recorded: its charge's receipt and event, and the activation's. */
function expectPaidInvoice(out: OutboxWriter, invoiceId: string): void {
  const { receipt, succeeded } = paidChargeKeys(invoiceId);
  out.expect([receipt, 'email:activated'], [succeeded, 'activated']);
}

/** No outbox rows: opening an invoice to charge reports nothing by itself (its charge does). */
const NO_OUTBOX = { emailIds: [], eventIds: [] };

/**
 * What charging an invoice reads of its subscription: plain values, not an entity (issue 12: the
 * ORM's query and hydration of an invoice with its subscription was the largest part of the
 * worker's own CPU per renewal).
 */
export type SubscriptionForCharge = Pick<
  Subscription,
  'id' | 'environment' | 'processor' | 'status' | 'cardToken' | 'customerId' | 'paymentMethodId' | 'callbackUrl'
> &
  SubscriptionOfEmail & { merchant: Pick<Merchant, 'id'> };

/** What charging an invoice reads of it (an Invoice entity loaded with its subscription is one too). */
export type InvoiceForCharge = Pick<
  Invoice,
  | 'id'
  | 'amountMinor'
  | 'currency'
  | 'status'
  | 'attempts'
  | 'periodStart'
  | 'periodEnd'
  | 'providerTransactionId'
  | 'providerCallSentAt'
  | 'createdAt'
> & {
  subscription: SubscriptionForCharge;
  /** Read with it (loadInvoiceForCharge, the opening statement): a capture is recorded from it in one statement. */
  snapshot?: SubscriptionSnapshot;
};

/** The `subscriptions` columns an InvoiceForCharge carries (SubscriptionForCharge's, in snake case). */
const SUBSCRIPTION_FOR_CHARGE_COLUMNS = [
  'id',
  'merchant_id',
  'external_id',
  'environment',
  'processor',
  'status',
  'customer_id',
  'callback_url',
  'description',
  'customer',
  'billing_interval_days',
  'amount_minor',
  'currency',
  'cancellation_reason',
  'current_period_end',
  // The rest of what its view reads (a capture's event carries it): see SubscriptionSnapshot.
  'current_period_start',
  'redirect_url',
  'clock_created_at',
  'created_at',
  'updated_at',
  'cancelled_at',
  'metadata',
  'return_url',
  'retry_schedule_days',
  'test_clock_id',
];
/**
 * The customer's card that can charge the subscription `alias` (not deleted, never hard-declined
 * by a subscription's charge, kept by the subscription's processor): its default when it can,
 * else its newest one that can (the order of the fallback round: a default a subscription
 * hard-declined is no card, decision 0088); its `column`, null when none can.
 */
const customerMethodOf = (alias: string, column: string) =>
  `(select pm.${column} from payment_methods pm join customers c on c.id = pm.customer_id
     where pm.customer_id = ${alias}.customer_id and pm.deleted_at is null and pm.hard_declined_at is null
       and pm.processor = ${alias}.processor
     order by (pm.id = c.default_payment_method_id) desc nulls last, pm.created_at desc, pm.id desc limit 1)`;

/**
 * The subscription's own card can still be charged: it is not a customer's method deleted or
 * hard-declined since (a hard-declined card is never charged again, PRODUCT.md).
 */
const ownCardUsable = (alias: string) =>
  `(${alias}.payment_method_id is null or exists (select 1 from payment_methods opm
     where opm.id = ${alias}.payment_method_id and opm.deleted_at is null and opm.hard_declined_at is null))`;

/**
 * Those columns from `subscriptions` as `alias`, each prefixed `s_`, and the card the invoice of
 * period `periodIndex` (an SQL expression) is charged with (`s_card_token`, `s_payment_method_id`):
 * a subscription created with `customerId` charges its customer's card at that moment (the
 * default, else its newest usable one) from its second period on, and in its first period once
 * the invoice is hard-declined (`hardDeclined`, an SQL expression: its round found no card, so
 * its next attempt is a new card's) or its own card is (PRODUCT.md "Customers and payment
 * methods"; decisions 0087, 0088); its own card (the create's, a card update's) when the customer
 * has none, unless that card is a method hard-declined or deleted since (then none: `no_card`);
 * every other charge, its own card. Read here, in the charging activity, so the workflow's
 * commands do not change.
 */
const subscriptionForChargeColumns = (alias: string, periodIndex: string, hardDeclined = 'false') => {
  const own = ownCardUsable(alias);
  const byCustomer = `${alias}.customer_id is not null and (${periodIndex} > 0 or ${hardDeclined} or not ${own})`;
  return [
    ...SUBSCRIPTION_FOR_CHARGE_COLUMNS.map((c) => `${alias}.${c} as s_${c}`),
    `case when ${byCustomer}
          then coalesce(${customerMethodOf(alias, 'provider_reference')}, case when ${own} then ${alias}.card_token end)
          else ${alias}.card_token end as s_card_token`,
    `case when ${byCustomer}
          then coalesce(${customerMethodOf(alias, 'id')}, case when ${own} then ${alias}.payment_method_id end)
          else ${alias}.payment_method_id end as s_payment_method_id`,
  ].join(', ');
};

/** A timestamp column as the ORM's pg client answers it (text: MikroORM turns off pg's date parsing). */
const dateOf = (value: unknown): Date | null => (value == null ? null : new Date(value as string));

function subscriptionForChargeOfRow(row: Record<string, unknown>): SubscriptionForCharge {
  return {
    id: row.s_id as string,
    merchant: { id: row.s_merchant_id as string },
    externalId: row.s_external_id as string,
    environment: row.s_environment as KeyEnvironment,
    processor: row.s_processor as string,
    status: row.s_status as SubscriptionStatus,
    cardToken: row.s_card_token as string | null,
    customerId: (row.s_customer_id ?? null) as string | null,
    paymentMethodId: (row.s_payment_method_id ?? null) as string | null,
    callbackUrl: row.s_callback_url as string | null,
    description: row.s_description as string | null,
    customer: row.s_customer as Customer | null,
    billingIntervalDays: Number(row.s_billing_interval_days),
    amountMinor: Number(row.s_amount_minor),
    currency: row.s_currency as string,
    cancellationReason: row.s_cancellation_reason as string | null,
    currentPeriodEnd: dateOf(row.s_current_period_end),
  };
}

/**
 * The subscription as a charge read it, with what the event of its capture carries (its view,
 * presentSubscription) and its emails name: its row's fields, the row's version, its phases and its
 * merchant's email. A capture is recorded from it in one statement (recordPaidInvoiceCharge) when
 * the row is still that version; otherwise by the general path, which reads everything again.
 */
export interface SubscriptionSnapshot {
  /**
   * PostgreSQL's `xmin` of the row as read: the transaction that wrote that version. Every
   * update of the row writes a new version with another xmin (a `for update` lock does not), so
   * an equal xmin is the same row, field for field.
   */
  version: string;
  subscription: SubscriptionViewFields;
  /** Written once, with the subscription (never updated), so not covered by the row's version. */
  phases: PhaseViewFields[];
  /** Where its emails may go (decision 0066): the statement checks it is still this one. */
  merchantEmail: string | null;
}

/** What {@link subscriptionSnapshotOfRow} reads besides the `s_` columns: `s_phases`, `s_merchant_email`. */
const snapshotExtras = (alias: string) =>
  `(select json_agg(json_build_object('id', p.id, 'name', p.name, 'position', p.position, 'iterations', p.iterations,
                                      'amountMinor', p.amount_minor, 'billingIntervalDays', p.billing_interval_days)
                    order by p.position)
      from subscription_phases p where p.subscription_id = ${alias}.s_id) as s_phases,
   (select m.email from merchants m where m.id = ${alias}.s_merchant_id) as s_merchant_email`;

function subscriptionSnapshotOfRow(row: Record<string, unknown>, version: string): SubscriptionSnapshot {
  return {
    version,
    subscription: {
      id: row.s_id as string,
      externalId: row.s_external_id as string,
      amountMinor: Number(row.s_amount_minor),
      currency: row.s_currency as string,
      billingIntervalDays: Number(row.s_billing_interval_days),
      status: row.s_status as SubscriptionStatus,
      currentPeriodStart: dateOf(row.s_current_period_start),
      currentPeriodEnd: dateOf(row.s_current_period_end),
      redirectUrl: row.s_redirect_url as string | null,
      clockCreatedAt: dateOf(row.s_clock_created_at),
      createdAt: dateOf(row.s_created_at)!,
      updatedAt: dateOf(row.s_updated_at)!,
      cancelledAt: dateOf(row.s_cancelled_at),
      cancellationReason: row.s_cancellation_reason as string | null,
      environment: row.s_environment as KeyEnvironment,
      processor: row.s_processor as string,
      customer: row.s_customer as Customer | null,
      customerId: (row.s_customer_id ?? null) as string | null,
      description: row.s_description as string | null,
      metadata: row.s_metadata as Record<string, string> | null,
      callbackUrl: row.s_callback_url as string | null,
      returnUrl: row.s_return_url as string | null,
      retryScheduleDays: row.s_retry_schedule_days as number[],
      testClock: row.s_test_clock_id ? { id: row.s_test_clock_id as string } : null,
    },
    phases: (row.s_phases as PhaseViewFields[] | null) ?? [],
    merchantEmail: (row.s_merchant_email ?? null) as string | null,
  };
}

const INVOICE_FOR_CHARGE: PreparedStatement = {
  name: 'invoice_for_charge',
  text: `with r as (
       select i.id, i.amount_minor, i.currency, i.status, i.attempts, i.period_start, i.period_end,
              i.provider_transaction_id, i.provider_call_sent_at, i.created_at, s.xmin::text as s_version,
              ${subscriptionForChargeColumns('s', 'i.period_index', "i.decline_type = 'hard'")}
         from invoices i join subscriptions s on s.id = i.subscription_id
        where i.id = $1
     )
     select r.*, ${snapshotExtras('r')} from r`,
};

/** An invoice and its subscription as charging reads them; null when there is no such invoice. */
export async function loadInvoiceForCharge(em: EntityManager, invoiceId: string): Promise<InvoiceForCharge | null> {
  const [row] = await preparedRows(em, INVOICE_FOR_CHARGE, [invoiceId]);
  if (!row) return null;
  return {
    id: row.id as string,
    amountMinor: Number(row.amount_minor),
    currency: row.currency as string,
    status: row.status as InvoiceForCharge['status'],
    attempts: Number(row.attempts),
    periodStart: dateOf(row.period_start)!,
    periodEnd: dateOf(row.period_end)!,
    providerTransactionId: row.provider_transaction_id as string | null,
    providerCallSentAt: dateOf(row.provider_call_sent_at),
    createdAt: dateOf(row.created_at)!,
    subscription: subscriptionForChargeOfRow(row),
    snapshot: subscriptionSnapshotOfRow(row, row.s_version as string),
  };
}

/**
 * The renewal's usual case: under the subscription's row lock, a period's first, chargeable
 * invoice is inserted and the subscription's current period set (issue 12: a renewal storm is
 * bound by the worker's CPU, and the ORM's transaction took six round trips).
 */
const OPEN_CHARGEABLE_INVOICE: PreparedStatement = {
  name: 'open_chargeable_invoice',
  text: `with sub as (
       select ${subscriptionForChargeColumns('s', '$3::int')}, s.cancel_requested_at as s_cancel_requested_at
         from subscriptions s where s.id = $1 for update
     ), inserted as (
       insert into invoices (id, merchant_id, subscription_id, period_index, phase_id, amount_minor, currency,
                             period_start, period_end, status, attempts, created_at, updated_at,
                             provider_call_sent_at)
       select $2::text, sub.s_merchant_id, sub.s_id, $3::int, $4::text, $5::bigint, sub.s_currency,
              $6::timestamptz, $7::timestamptz, 'open', 0, $8::timestamptz, $8::timestamptz,
              case when $9::boolean and sub.s_card_token is not null then now() end
         from sub
        where sub.s_status <> 'cancelled' and sub.s_cancel_requested_at is null
          and not exists (select 1 from invoices where subscription_id = sub.s_id and period_index = $3::int)
       on conflict (subscription_id, period_index) do nothing
       returning subscription_id, provider_call_sent_at
     ), period as (
       update subscriptions
          set current_period_start = $6::timestamptz, current_period_end = $7::timestamptz, updated_at = $8::timestamptz
         from inserted where subscriptions.id = inserted.subscription_id
       returning subscriptions.xmin::text as version
     )
     select sub.*, exists (select 1 from inserted) as inserted,
            (select provider_call_sent_at from inserted) as call_sent_at,
            (select version from period) as s_version, ${snapshotExtras('sub')}
       from sub`,
};

/**
 * {@link OPEN_CHARGEABLE_INVOICE}, or null (the caller takes the general path above) when
 * anything else holds: the invoice exists already (a retry), the subscription is cancelled or
 * gone. `markChargeSent`: the new invoice is answered as charging reads it (`forCharge`).
 */
async function openChargeableInvoice(
  em: EntityManager,
  input: OpenInvoiceInput,
  markChargeSent: boolean,
): Promise<OpenedInvoice | null> {
  const now = input.at ?? new Date();
  const invoiceId = newId('invoice');
  const [row] = await preparedRows(em, OPEN_CHARGEABLE_INVOICE, [
    input.subscriptionId,
    invoiceId,
    input.periodIndex,
    input.phaseId,
    input.amountMinor,
    input.periodStart,
    input.periodEnd,
    now,
    markChargeSent,
  ]);
  if (!row?.inserted) return null;
  const callSentAt = dateOf(row.call_sent_at);
  const subscription = subscriptionForChargeOfRow(row);
  const opened = {
    kind: 'open' as const,
    invoiceId,
    attempts: 0,
    outbox: { status: subscription.status, ...NO_OUTBOX },
    ...(callSentAt ? { chargeMarkedSent: true as const } : {}),
  };
  if (!markChargeSent) return opened;
  const forCharge: InvoiceForCharge = {
    id: invoiceId,
    amountMinor: input.amountMinor,
    currency: subscription.currency,
    status: 'open',
    attempts: 0,
    periodStart: input.periodStart,
    periodEnd: input.periodEnd,
    providerTransactionId: null,
    providerCallSentAt: callSentAt,
    createdAt: now,
    // The period this statement set (`sub` is the row as it was before).
    subscription: { ...subscription, currentPeriodEnd: input.periodEnd },
    snapshot: periodSet(subscriptionSnapshotOfRow(row, row.s_version as string), input, now),
  };
  return { ...opened, forCharge };
}

/** A snapshot read before its row's period was set by the same statement: the row as written. */
const periodSet = (snapshot: SubscriptionSnapshot, input: OpenInvoiceInput, now: Date): SubscriptionSnapshot => ({
  ...snapshot,
  subscription: {
    ...snapshot.subscription,
    currentPeriodStart: input.periodStart,
    currentPeriodEnd: input.periodEnd,
    updatedAt: now,
  },
});

export type ChargeResult =
  | { kind: 'paid'; transactionId: string }
  | { kind: 'declined'; transactionId: string | null; failureCode: string; failureMessage: string };

export type AppliedCharge =
  | { kind: 'paid'; outbox: Outbox; claimed?: ClaimedEmail[] }
  | { kind: 'void'; outbox: Outbox }
  | { kind: 'declined'; nextAttemptAt: string | null; declineType: DeclineType; outbox: Outbox }
  | { kind: 'missing' };

/**
 * Records the provider's answer to attempt `attempt` of an invoice. Paid: the subscription is
 * active (activated on its first payment), receipt email, `charge_succeeded`. Declined: the
 * invoice waits for its next attempt (`retryDelayMs` from now; null: none left), the
 * subscription is `past_due`, payment-failed email naming the next retry date.
 */
export async function applyInvoiceCharge(
  em: EntityManager,
  /** The invoice as the caller loaded it, with its subscription (whose row is locked, then the invoice's). */
  target: InvoiceForCharge,
  attempt: number,
  charge: ChargeResult,
  retryDelayMs: number | null,
  /**
   * The caller sends the receipt right after (issue 12: no claim statement of its own): a receipt
   * this call records is inserted claimed for this many seconds, as the mailer would claim it, and
   * answered in `claimed`. Other emails (the activation's) are claimed by the mailer, as before.
   */
  options: {
    claimReceiptSeconds?: number;
    profile: EmailProfile;
    /** On a test clock: the clock's time, the attempt's dates and the next one's (decision 0090). */
    at?: Date | undefined;
  },
): Promise<AppliedCharge> {
  // A capture of an invoice read with its subscription's snapshot: in one statement when nothing moved since.
  if (charge.kind === 'paid' && target.snapshot && target.status !== 'paid' && target.attempts < attempt) {
    const fast = await recordPaidInvoiceCharge(em, target, attempt, charge.transactionId, options);
    if (fast) return fast;
  }
  const invoiceId = target.id;
  // Assigned inside the transaction's callback (declared wide so the compiler does not narrow it).
  let applied = { kind: 'missing' } as
    | { kind: 'paid' | 'void' | 'missing' }
    | { kind: 'declined'; nextAttemptAt: string | null; declineType: DeclineType };
  // Set only when this call recorded the attempt (subscription_charges_total counts it once).
  let recorded = null as SubscriptionChargeOutcome | null;
  // The receipt this call recorded claimed (options.claimReceiptSeconds), for the caller to send.
  let claimed = null as ClaimedEmail | null;
  const outbox = await change(em, target.subscription.id, options.profile, async (tx, s, out) => {
    const invoice = await tx.findOneOrFail(Invoice, { id: invoiceId }, { lockMode: LockMode.PESSIMISTIC_WRITE });
    const paid = paidChargeKeys(invoice.id);
    const failedEmail = [`email:failed:${invoice.id}:${attempt}`];
    const failedEvents = [`charge_failed:${invoice.id}:${attempt}`, `past_due:${invoice.id}`];
    if (invoice.status === 'paid') {
      expectPaidInvoice(out, invoice.id);
      applied = { kind: 'paid' };
      return;
    }
    if (invoice.status === 'void' && charge.kind !== 'paid') {
      applied = { kind: 'void' };
      return;
    }
    if (invoice.attempts >= attempt) {
      // This attempt was recorded already (a retried activity): answer as the first run did.
      out.expect(invoice.declineType === 'hard' ? [] : failedEmail, failedEvents);
      applied = {
        kind: 'declined',
        nextAttemptAt: invoice.nextAttemptAt?.toISOString() ?? null,
        declineType: invoice.declineType ?? 'soft',
      };
      return;
    }
    const now = options.at ?? new Date();
    invoice.attempts = attempt;
    invoice.updatedAt = now;
    s.updatedAt = now;
    if (charge.kind === 'paid') {
      // Paid wins even over a void: the money moved (a charge in flight finishes first).
      invoice.status = 'paid';
      invoice.paidAt = now;
      invoice.voidedAt = null;
      invoice.providerTransactionId = charge.transactionId;
      invoice.failureCode = null;
      invoice.failureMessage = null;
      invoice.declineType = null;
      invoice.nextAttemptAt = null;
      if (s.status !== 'cancelled') activate(s, out);
      out.event('subscription.charge_succeeded', paid.succeeded);
      claimed = out.email('receipt', paid.receipt, { invoice }, options.claimReceiptSeconds);
      applied = { kind: 'paid' };
      recorded = 'succeeded';
      return;
    }
    invoice.providerTransactionId = charge.transactionId ?? invoice.providerTransactionId;
    // An attempt that waited (authentication, processing) is decided: the invoice is collected
    // again, or, its subscription cancelled meanwhile, void (nothing is charged any more).
    const ended = s.status === 'cancelled';
    if (invoice.status !== 'open') {
      invoice.status = ended ? 'void' : 'open';
      if (ended) invoice.voidedAt = now;
    }
    // This attempt's outcome is known and the next one has a key of its own. (Set outside the
    // ORM, so cleared outside it too: the identity map may not have seen it set.)
    await tx.nativeUpdate(Invoice, { id: invoice.id }, { providerCallSentAt: null });
    invoice.failureCode = charge.failureCode;
    invoice.failureMessage = charge.failureMessage;
    // A hard decline is never retried with this card: no next attempt; the workflow asks the
    // customer for a new card (requestNewCard), in place of the payment-failed email.
    const declineType = declineTypeOf(charge.failureCode);
    invoice.declineType = declineType;
    invoice.nextAttemptAt =
      retryDelayMs === null || declineType === 'hard' || ended ? null : new Date(now.getTime() + retryDelayMs);
    out.event('subscription.charge_failed', failedEvents[0]!);
    if (declineType === 'soft' && !ended) {
      out.email('payment_failed', failedEmail[0]!, { invoice, nextAttemptAt: invoice.nextAttemptAt });
    }
    if (s.status !== 'past_due' && s.status !== 'cancelled') {
      s.status = 'past_due';
      out.event('subscription.past_due', failedEvents[1]!);
    }
    applied = { kind: 'declined', nextAttemptAt: invoice.nextAttemptAt?.toISOString() ?? null, declineType };
    recorded = 'failed';
  });
  if (outbox && recorded) workerMetrics.subscriptionCharge(recorded);
  if (!outbox || applied.kind === 'missing') return { kind: 'missing' };
  if (applied.kind === 'paid' && claimed) return { kind: 'paid', outbox, claimed: [claimed] };
  return { ...applied, outbox } as AppliedCharge;
}

/**
 * {@link applyInvoiceCharge} of a capture in one statement (issue 45: a renewal's recording took
 * about ten round trips, the ORM's transaction with its loads and flush), from what the charge
 * read (`target.snapshot`): the invoice paid, the subscription active, and the rows the general
 * path records, built here by the same functions (the activation's event and email on a first
 * capture, `subscription.charge_succeeded` carrying the subscription's view after the change, the
 * receipt). The statement changes anything only if the subscription's row is still the version
 * read (so the view built from it is the row it writes), its merchant's email the one read, the
 * invoice not yet paid, void or at this attempt, and the latest of its subscription; it locks the
 * subscription's row, then the invoice's, as the general path does. Answers null, having changed
 * nothing, when the general path must decide: anything moved since the read (a retry that finds
 * the attempt recorded included), no snapshot, a cancelled subscription, an email to withhold.
 */
const RECORD_PAID_INVOICE_CHARGE: PreparedStatement = {
  name: 'record_paid_invoice_charge',
  text: `with s as (
       select s.id from subscriptions s
        where s.id = $1 and s.xmin = $2::xid
          and (select m.email from merchants m where m.id = s.merchant_id) is not distinct from $3::text
        for update of s
     ), i as (
       select i.id from invoices i join s on s.id = i.subscription_id
        where i.id = $4 and i.status in ('open', 'requires_action', 'processing') and i.attempts < $5::int
          and not exists (select 1 from invoices later
                           where later.subscription_id = i.subscription_id and later.period_index > i.period_index)
        for update of i
     ), paid as (
       update invoices
          set status = 'paid', attempts = $5::int, paid_at = $6::timestamptz, voided_at = null,
              provider_transaction_id = $7::text, failure_code = null, failure_message = null, decline_type = null,
              next_attempt_at = null, updated_at = $6::timestamptz
         from i where invoices.id = i.id
       returning invoices.subscription_id
     ), moved as (
       update subscriptions set status = 'active', updated_at = $6::timestamptz
         from paid where subscriptions.id = paid.subscription_id
       returning subscriptions.merchant_id, subscriptions.test_clock_id
     ), clock as (
       select c.frozen_time from moved join test_clocks c on c.id = moved.test_clock_id
     ), emailed as (
       insert into emails (id, merchant_id, dedupe_key, "to", subject, text, attempts, claimed_until, dated_at,
                           created_at)
       select e.id, moved.merchant_id, e.dedupe_key, e."to", e.subject, e.text, e.attempts, e.claimed_until,
              (select frozen_time from clock), e.created_at
         from moved, rows from (jsonb_to_recordset($8::jsonb) as (id text, dedupe_key text, "to" text, subject text,
                                text text, attempts int, claimed_until timestamptz, created_at timestamptz))
                     with ordinality as e(id, dedupe_key, "to", subject, text, attempts, claimed_until, created_at, n)
        order by e.n
     ), evented as (
       insert into merchant_events (id, merchant_id, type, resource_id, object_id, environment, dedupe_key,
                                    callback_url, payload, attempts, created_at)
       select v.id, moved.merchant_id, v.type, v.resource_id, v.object_id, v.environment, v.dedupe_key,
              v.callback_url, v.payload, 0, v.created_at
         from moved, rows from (jsonb_to_recordset($9::jsonb) as (id text, type text, resource_id text,
                                object_id text, environment text, dedupe_key text, callback_url text, payload jsonb,
                                created_at timestamptz))
                     with ordinality as v(id, type, resource_id, object_id, environment, dedupe_key, callback_url,
                                          payload, created_at, n)
        order by v.n
     )
     select (select count(*)::int from moved) as moved, (select frozen_time from clock) as dated_at`,
};

/** {@link RECORD_PAID_INVOICE_CHARGE}, or null (nothing changed) when the general path must record the capture. */
async function recordPaidInvoiceCharge(
  em: EntityManager,
  target: InvoiceForCharge,
  attempt: number,
  transactionId: string,
  options: { claimReceiptSeconds?: number; profile: EmailProfile; at?: Date | undefined },
): Promise<AppliedCharge | null> {
  const snapshot = target.snapshot;
  if (!snapshot || snapshot.subscription.status === 'cancelled') return null;
  const now = options.at ?? new Date();
  const read = snapshot.subscription;
  // The subscription and the invoice as the general path leaves them (activate, the paid branch).
  const s: SubscriptionViewFields = { ...read, status: 'active', updatedAt: now };
  const invoice: LatestInvoiceFields & Pick<Invoice, 'providerTransactionId'> = {
    id: target.id,
    status: 'paid',
    amountMinor: target.amountMinor,
    currency: target.currency,
    periodStart: target.periodStart,
    periodEnd: target.periodEnd,
    attempts: attempt,
    nextAttemptAt: null,
    failureCode: null,
    failureMessage: null,
    declineType: null,
    hostedUrl: null, // not shown once paid (presentInvoice), whatever the row keeps
    paidAt: now,
    providerTransactionId: transactionId,
    createdAt: target.createdAt,
    updatedAt: now,
  };
  const first = read.status === 'created' || read.status === 'pending';
  const key = (suffix: string) => `${s.id}:${suffix}`;
  const keys = paidChargeKeys(invoice.id);
  // In the general path's order: the activation's event and email, then the capture's.
  const mails: Array<{
    kind: SubscriptionEmailKind;
    suffix: string;
    facts: Parameters<typeof subscriptionEmail>[2];
    claimSeconds?: number | undefined;
  }> = [
    ...(first ? [{ kind: 'activated' as const, suffix: 'email:activated', facts: {} }] : []),
    { kind: 'receipt', suffix: keys.receipt, facts: { invoice }, claimSeconds: options.claimReceiptSeconds },
  ];
  const emails: ReturnType<typeof emailFields>[] = [];
  let claimedIndex: number | null = null;
  for (const mail of mails) {
    const addressed = addressedEmail(options.profile, s, snapshot.merchantEmail, mail.kind, mail.facts);
    if (addressed.kind === 'none') continue;
    if (addressed.kind === 'withheld') return null; // rare (production, no merchant email): the general path
    if (mail.claimSeconds !== undefined) claimedIndex = emails.length;
    emails.push(
      emailFields(
        { dedupeKey: key(mail.suffix), to: addressed.to, ...addressed.content },
        mail.claimSeconds === undefined ? undefined : { claimSeconds: mail.claimSeconds },
      ),
    );
  }
  const data = presentSubscription(s, snapshot.phases, invoice);
  const eventOf = (type: MerchantEventType, suffix: string) =>
    outboxEventFields({
      type,
      resourceId: s.id,
      dedupeKey: key(suffix),
      callbackUrl: s.callbackUrl,
      environment: s.environment,
      data,
    });
  const events = [
    ...(first ? [eventOf('subscription.activated', 'activated')] : []),
    eventOf('subscription.charge_succeeded', keys.succeeded),
  ];
  const [row] = await preparedRows(em, RECORD_PAID_INVOICE_CHARGE, [
    s.id,
    snapshot.version,
    snapshot.merchantEmail,
    invoice.id,
    attempt,
    now,
    transactionId,
    JSON.stringify(
      emails.map((e) => ({
        id: e.id,
        dedupe_key: e.dedupeKey,
        to: e.to,
        subject: e.subject,
        text: e.text,
        attempts: e.attempts,
        claimed_until: e.claimedUntil,
        created_at: e.createdAt,
      })),
    ),
    JSON.stringify(
      events.map((e) => ({
        id: e.id,
        type: e.type,
        resource_id: e.resourceId,
        object_id: e.objectId,
        environment: e.environment,
        dedupe_key: e.dedupeKey,
        callback_url: e.callbackUrl,
        payload: e.payload,
        created_at: e.createdAt,
      })),
    ),
  ]);
  if (row?.moved !== 1) return null;
  workerMetrics.subscriptionCharge('succeeded');
  const outbox: Outbox = {
    status: s.status,
    emailIds: emails.map((e) => e.id),
    // Every event is recorded; only one with a callbackUrl is named for delivery.
    eventIds: s.callbackUrl ? events.map((e) => e.id) : [],
  };
  const claimed = claimedIndex === null ? null : emails[claimedIndex]!;
  if (!claimed) return { kind: 'paid', outbox };
  return { kind: 'paid', outbox, claimed: [claimedEmailOf({ ...claimed, datedAt: dateOf(row.dated_at) })] };
}

/** An invoice attempt the processor has not decided: what the invoice shows meanwhile. */
export type InvoiceWait =
  | { kind: 'requires_action'; transactionId: string; actionUrl: string | null; cancelAt: Date | null }
  | { kind: 'processing'; transactionId: string };

/** The outbox keys (suffixes) of an attempt that asks the customer to authenticate. */
const actionRequiredKeys = (invoiceId: string, attempt: number) => ({
  email: (reminder: number) => `email:action_required:${invoiceId}:${attempt}:${reminder}`,
  event: `action_required:${invoiceId}:${attempt}`,
  pastDue: `past_due:${invoiceId}`,
});

/**
 * Attempt `attempt` of an invoice is not decided by the processor (decision 0060); the attempt is
 * recorded (`attempts`) only once decided, so the invoice is never charged again meanwhile.
 * - `requires_action`: the customer authenticates at `hostedUrl` (failureCode
 *   `authentication_required`, no next attempt); the subscription is `past_due`; the "action
 *   required" email and `subscription.payment_action_required` (with `subscription.past_due` if
 *   the status moved, no `charge_failed`).
 * - `processing`: the invoice waits; a subscription's first charge makes it `pending`.
 * Answers null (nothing recorded) when the invoice moved on (decided, void) or is gone.
 */
export async function recordInvoiceWait(
  em: EntityManager,
  input: { subscriptionId: string; invoiceId: string; attempt: number; wait: InvoiceWait },
  profile: EmailProfile,
): Promise<Outbox | null> {
  let recorded = false;
  const outbox = await change(em, input.subscriptionId, profile, async (tx, s, out) => {
    const invoice = await tx.findOne(
      Invoice,
      { id: input.invoiceId, subscription: s.id },
      { lockMode: LockMode.PESSIMISTIC_WRITE },
    );
    if (!invoice || invoice.attempts >= input.attempt) return;
    const { wait } = input;
    const keys = actionRequiredKeys(invoice.id, input.attempt);
    if (invoice.status === wait.kind && invoice.providerTransactionId === wait.transactionId) {
      // Recorded already (a retried activity, a webhook and a poll): answer as the first run did.
      if (wait.kind === 'requires_action') out.expect([keys.email(0)], [keys.event, keys.pastDue]);
      recorded = true;
      return;
    }
    if (invoice.status !== 'open' && invoice.status !== 'requires_action') return;
    const now = new Date();
    invoice.status = wait.kind;
    invoice.providerTransactionId = wait.transactionId;
    invoice.nextAttemptAt = null;
    invoice.declineType = null;
    invoice.updatedAt = now;
    s.updatedAt = now;
    recorded = true;
    if (wait.kind === 'processing') {
      invoice.failureCode = null;
      invoice.failureMessage = null;
      // A first charge decided later: the subscription waits for it (the create answers it).
      if (s.status === 'created') s.status = 'pending';
      return;
    }
    invoice.hostedUrl = wait.actionUrl;
    invoice.failureCode = 'authentication_required';
    invoice.failureMessage = 'The customer must authenticate this payment.';
    if (s.status !== 'past_due' && s.status !== 'cancelled') {
      s.status = 'past_due';
      out.event('subscription.past_due', keys.pastDue);
    }
    out.event('subscription.payment_action_required', keys.event);
    out.email('action_required', keys.email(0), {
      invoice,
      hostedUrl: wait.actionUrl,
      cancelAt: wait.cancelAt ?? undefined,
    });
  });
  return outbox && recorded ? outbox : null;
}

/**
 * A reminder to authenticate an invoice's attempt (one per date of the retry schedule), while it
 * still waits for that: the same page, the same deadline.
 */
export async function remindAuthentication(
  em: EntityManager,
  input: { subscriptionId: string; invoiceId: string; attempt: number; reminder: number; cancelAt: Date },
  profile: EmailProfile,
): Promise<Outbox | null> {
  return change(em, input.subscriptionId, profile, async (tx, s, out) => {
    const suffix = actionRequiredKeys(input.invoiceId, input.attempt).email(input.reminder);
    if (await tx.count(Email, { dedupeKey: `${s.id}:${suffix}` })) {
      out.expect([suffix], []);
      return;
    }
    const invoice = await tx.findOne(Invoice, { id: input.invoiceId, subscription: s.id });
    if (s.status === 'cancelled' || invoice?.status !== 'requires_action' || invoice.attempts !== input.attempt - 1) {
      return;
    }
    out.email('action_required', suffix, {
      invoice,
      hostedUrl: invoice.hostedUrl,
      cancelAt: input.cancelAt,
      reminder: input.reminder,
    });
  });
}

/**
 * An attempt awaiting authentication was cancelled at the processor for a new card: the attempt
 * is over (recorded, its key done with), the invoice is collected again, by the new card next.
 */
export async function releaseInvoiceAttempt(
  em: EntityManager,
  input: { subscriptionId: string; invoiceId: string; attempt: number },
): Promise<void> {
  await change(em, input.subscriptionId, null, async (tx, s) => {
    const invoice = await tx.findOne(
      Invoice,
      { id: input.invoiceId, subscription: s.id },
      { lockMode: LockMode.PESSIMISTIC_WRITE },
    );
    if (invoice?.status !== 'requires_action' || invoice.attempts >= input.attempt) return;
    const now = new Date();
    invoice.status = 'open';
    invoice.attempts = input.attempt;
    invoice.nextAttemptAt = null;
    invoice.updatedAt = now;
    await tx.nativeUpdate(Invoice, { id: invoice.id }, { providerCallSentAt: null });
  });
}

/**
 * A hard decline of an invoice's attempt: the customer is asked for a new card before
 * `cancelAt`, once per declined attempt, with the link of the hosted card update the workflow
 * opened (`withLink`: the subscription's `redirectUrl`). Only while the subscription is
 * `past_due` and that attempt is the invoice's last one.
 */
export async function requestNewCard(
  em: EntityManager,
  input: { subscriptionId: string; invoiceId: string; attempt: number; withLink: boolean; cancelAt: Date },
  profile: EmailProfile,
): Promise<Outbox | null> {
  return change(em, input.subscriptionId, profile, async (tx, s, out) => {
    const suffix = `email:card_required:${input.invoiceId}:${input.attempt}`;
    if (await tx.count(Email, { dedupeKey: `${s.id}:${suffix}` })) {
      out.expect([suffix], []);
      return;
    }
    const invoice = await tx.findOne(Invoice, { id: input.invoiceId, subscription: s.id });
    if (s.status !== 'past_due' || !invoice || invoice.status !== 'open' || invoice.attempts !== input.attempt) return;
    out.email('card_required', suffix, {
      invoice,
      cardUpdateUrl: input.withLink ? s.redirectUrl : null,
      cancelAt: input.cancelAt,
    });
  });
}

/**
 * Cancels: immediate and irreversible. The current period stays as it is; open invoices are
 * voided (never charged afterwards); a cancelled subscription is left unchanged.
 */
export async function cancelSubscription(
  em: EntityManager,
  subscriptionId: string,
  reason: string,
  notify: boolean,
  profile: EmailProfile,
): Promise<Outbox | null> {
  return change(em, subscriptionId, profile, (tx, s, out) => applyCancellation(tx, s, out, reason, notify));
}

/** {@link cancelSubscription}'s change, under the subscription's row lock its caller holds. */
async function applyCancellation(
  tx: EntityManager,
  s: Subscription,
  out: OutboxWriter,
  reason: string,
  notify: boolean,
): Promise<void> {
  if (s.status === 'cancelled') {
    out.expect(['email:cancelled'], ['cancelled']);
    return;
  }
  const now = await nowOfRecord(tx, s);
  // An attempt awaiting authentication was cancelled at the processor first (the workflow); one
  // `processing` stays so until the processor decides (a capture then counts).
  await tx.nativeUpdate(
    Invoice,
    { subscription: s.id, status: { $in: ['open', 'requires_action'] } },
    { status: 'void', voidedAt: now, nextAttemptAt: null, updatedAt: now },
  );
  s.status = 'cancelled';
  s.cancelledAt = now;
  s.cancellationReason = reason;
  s.updatedAt = now;
  out.event('subscription.cancelled', 'cancelled');
  if (notify) out.email('cancelled', 'email:cancelled', {});
}

/**
 * The instant a change of the subscription is dated: on a test clock the clock's time (its step's
 * while it advances; decision 0090), else now.
 */
async function nowOfRecord(tx: EntityManager, s: Subscription): Promise<Date> {
  if (!s.testClock) return new Date();
  const clock = await tx.findOne(TestClock, { id: s.testClock.id }, { fields: ['frozenTime'] });
  return clock?.frozenTime ?? new Date();
}

/**
 * A DELETE's intent, recorded before the workflow is asked (decision 0076): from then on no
 * invoice is opened and no charge is sent (both check it under this row's lock), and the
 * cancellation is applied by whichever comes first: the workflow's Update, or the next invoice
 * step. Idempotent: the first request's reason and notify are kept. False: nothing to record
 * (cancelled already, or no such subscription).
 */
export async function recordCancelIntent(
  em: EntityManager,
  subscriptionId: string,
  req: { reason: string; notify: boolean },
): Promise<boolean> {
  const rows: unknown[] = await em.getConnection().execute(
    `update subscriptions
        set cancel_requested_at = coalesce(cancel_requested_at, now()),
            cancel_request_reason = coalesce(cancel_request_reason, ?),
            cancel_request_notify = coalesce(cancel_request_notify, ?)
      where id = ? and status <> 'cancelled'
      returning id`,
    [req.reason, req.notify, subscriptionId],
  );
  return rows.length > 0;
}

/**
 * Marks an invoice's charge sent, unless a DELETE was recorded first (decision 0076): the
 * subscription's row is locked, its intent read and the mark written in one statement, so a
 * concurrent DELETE lands either before the mark (no charge) or after it (the charge is made and
 * recorded, then the cancellation). An attempt whose call was sent before is never refused: it is
 * asked again under its key. `sentBefore`: as for any provider call mark.
 */
export async function markInvoiceChargeSent(
  em: EntityManager,
  invoiceId: string,
): Promise<{ kind: 'marked'; sentBefore: boolean } | { kind: 'cancel_requested' }> {
  const [row] = await parameterisedRows(
    em,
    `with sub as (
       select s.cancel_requested_at from subscriptions s
        where s.id = (select subscription_id from invoices where id = ?) for update
     ), prior as (
       select id, provider_call_sent_at as sent_at from invoices where id = ? for update
     ), marked as (
       update invoices set provider_call_sent_at = coalesce(prior.sent_at, now())
         from prior left join sub on true
        where invoices.id = prior.id and (sub.cancel_requested_at is null or prior.sent_at is not null)
       returning invoices.id
     )
     select prior.sent_at, exists (select 1 from marked) as marked from prior`,
    [invoiceId, invoiceId],
  );
  if (row && !row.marked) return { kind: 'cancel_requested' };
  return { kind: 'marked', sentBefore: row?.sent_at != null };
}

/** The cancellation a recorded DELETE asks for (decision 0076), applied where no workflow took it. */
export async function cancelAsRequested(
  em: EntityManager,
  subscriptionId: string,
  profile: EmailProfile,
): Promise<Outbox | null> {
  return change(em, subscriptionId, profile, async (tx, s, out) => {
    if (!s.cancelRequestedAt && s.status !== 'cancelled') return;
    await applyCancellation(tx, s, out, s.cancelRequestReason ?? 'merchant_request', s.cancelRequestNotify ?? true);
  });
}

/** The first charge was refused outright (e.g. an unknown card token): nothing is kept. */
export async function discardSubscription(em: EntityManager, subscriptionId: string): Promise<void> {
  await em.fork().nativeDelete(Subscription, { id: subscriptionId, status: 'created' });
}

/** The statuses whose card a merchant may replace (PRODUCT.md "Subscription card update"). */
export const CARD_UPDATABLE_STATUSES: readonly SubscriptionStatus[] = ['active', 'past_due'];

export type CardReplacement =
  { kind: 'replaced' | 'unchanged' | 'not_updatable'; status: SubscriptionStatus } | { kind: 'missing' };

/**
 * A subscription's new card (a token the provider verified, or one the customer authorized on a
 * hosted page): charged from the next attempt on. Only while `active` or `past_due`; the same
 * card again changes nothing. Under the row lock, so a cancellation and a card change never
 * interleave, and a charge reads either card, never half of a change.
 */
export async function replaceSubscriptionCard(
  em: EntityManager,
  subscriptionId: string,
  cardToken: string,
): Promise<CardReplacement> {
  let kind: 'replaced' | 'unchanged' | 'not_updatable' = 'not_updatable';
  const outbox = await change(em, subscriptionId, null, async (_tx, s) => {
    if (!CARD_UPDATABLE_STATUSES.includes(s.status)) return;
    if (s.cardToken === cardToken) {
      kind = 'unchanged';
      return;
    }
    s.cardToken = cardToken;
    s.paymentMethodId = null; // a card of its own, no longer a customer's payment method
    s.updatedAt = new Date();
    kind = 'replaced';
  });
  return outbox ? { kind, status: outbox.status } : { kind: 'missing' };
}

/**
 * A hosted card update's page was created at the provider: the subscription shows it as its
 * `redirectUrl` (the old card is charged until the customer completes it).
 */
export async function markCardUpdatePage(
  em: EntityManager,
  subscriptionId: string,
  setup: { transactionId: string; redirectUrl: string | null },
): Promise<CardReplacement> {
  let kind: 'replaced' | 'not_updatable' = 'not_updatable';
  const outbox = await change(em, subscriptionId, null, async (_tx, s) => {
    if (!CARD_UPDATABLE_STATUSES.includes(s.status)) return;
    kind = 'replaced';
    if (s.setupTransactionId === setup.transactionId) return;
    s.setupTransactionId = setup.transactionId;
    s.redirectUrl = setup.redirectUrl;
    s.updatedAt = new Date();
  });
  return outbox ? { kind, status: outbox.status } : { kind: 'missing' };
}
