import type { MikroORM } from '@mikro-orm/postgresql';
import pg from 'pg';
import type { Logger } from '../logger';
import type { PaymentHintMessage, PaymentOutcomeHint } from '../domain/payments';
import type { RefundHintMessage, RefundOutcomeHint } from '../domain/refunds';
import type { KeyEnvironment } from './entities';
import { PAYMENT_OUTCOME_CHANNEL, PROVIDER_CHANGE_CHANNEL, REFUND_OUTCOME_CHANNEL } from './hintChannels';

export { PAYMENT_OUTCOME_CHANNEL, REFUND_OUTCOME_CHANNEL };
export type { PaymentOutcomeHint, RefundOutcomeHint };

/**
 * A hint from the worker to the API that a payment attempt's or a refund's outcome is in
 * PostgreSQL (LISTEN/NOTIFY), so the API answers the merchant without waiting for the workflow
 * task that completes its Update: one Temporal dispatch less on the way back (issue 12).
 *
 * Only a hint: the Update's own result stays the answer when no hint comes (listener down, a
 * repeat of a finished attempt, anything but a settled outcome). Sent only once the outcome is
 * committed: after the payment attempt's transaction, and by the refund settlement's own
 * statement (delivered at its commit, with the refund as written, which the API answers with);
 * otherwise the API reads the row.
 *
 * The channels (src/db/hintChannels.ts) and the payloads the domain's statements send
 * (paymentOutcomeHint, refundSettledHint in src/domain/) live beside those statements; this module
 * sends the general path's hints and listens.
 */

/** Best effort: a lost hint costs the API one workflow task of waiting, nothing else. */
async function notify(orm: MikroORM, channel: string, message: object, logger: Logger): Promise<void> {
  try {
    await orm.em.getConnection().execute('select pg_notify(?, ?)', [channel, JSON.stringify(message)]);
  } catch (err) {
    logger.warn({ channel, message, err }, 'outcome hint not sent');
  }
}

export async function publishPaymentOutcome(
  orm: MikroORM,
  paymentId: string,
  outcome: PaymentOutcomeHint,
  logger: Logger,
): Promise<void> {
  const message: PaymentHintMessage = { paymentId, outcome };
  await notify(orm, PAYMENT_OUTCOME_CHANNEL, message, logger);
}

/** A refund settled by the general path: the API reads it. */
export async function publishRefundSettled(orm: MikroORM, refundId: string, logger: Logger): Promise<void> {
  const message: RefundHintMessage = { refundId, outcome: { kind: 'settled' } };
  await notify(orm, REFUND_OUTCOME_CHANNEL, message, logger);
}

/** Parses a payment hint; anything else on the channel is ignored. */
export function parseHint(payload: string | undefined): PaymentHintMessage | null {
  const m = parseJson(payload) as Partial<PaymentHintMessage> | null;
  const kind = m?.outcome?.kind;
  if (typeof m?.paymentId !== 'string' || (kind !== 'settled' && kind !== 'created' && kind !== 'rejected')) {
    return null;
  }
  const { payment, ...outcome } = m.outcome!;
  // A view that is not this payment's, in the state the kind says, is dropped: the API reads the row.
  const awaiting = payment?.status === 'created' || payment?.status === 'requires_action';
  const usable = payment?.id === m.paymentId && (kind === 'settled' ? !awaiting : kind === 'created' && awaiting);
  return { paymentId: m.paymentId, outcome: (usable ? { ...outcome, payment } : outcome) as PaymentOutcomeHint };
}

/** Parses a refund hint; anything else on the channel is ignored. */
export function parseRefundHint(payload: string | undefined): RefundHintMessage | null {
  const m = parseJson(payload) as Partial<RefundHintMessage> | null;
  if (typeof m?.refundId !== 'string' || m.outcome?.kind !== 'settled') return null;
  const refund = m.outcome.refund;
  // A view that is not this refund's settled one is dropped: the API then reads the row.
  const usable = refund?.id === m.refundId && (refund.status === 'succeeded' || refund.status === 'failed');
  return { refundId: m.refundId, outcome: usable ? { kind: 'settled', refund } : { kind: 'settled' } };
}

function parseJson(payload: string | undefined): unknown {
  if (!payload) return null;
  try {
    return JSON.parse(payload) as unknown;
  } catch {
    return null;
  }
}

export interface OutcomeWait<T = PaymentOutcomeHint> {
  /** Resolves with the first hint for the record; never rejects. */
  readonly outcome: Promise<T>;
  /** Stops waiting (always call it: the waiter is removed). */
  cancel(): void;
}

/** Who follows merchants' provider changes (the API's provider registry). */
export interface ProviderChangeFollower {
  /** One configuration changed (committed). */
  changed(merchantId: string, environment: KeyEnvironment): void;
  /** The connection (re)started: changes may have gone unseen meanwhile, forget everything. */
  resync(): void;
}

/** Parses a provider change; anything else on the channel is ignored. */
export function parseProviderChange(
  payload: string | undefined,
): { merchantId: string; environment: KeyEnvironment } | null {
  const m = parseJson(payload) as { merchantId?: unknown; environment?: unknown } | null;
  if (typeof m?.merchantId !== 'string' || (m.environment !== 'test' && m.environment !== 'live')) return null;
  return { merchantId: m.merchantId, environment: m.environment };
}

/**
 * One LISTEN connection per API process. It also carries merchants' provider changes
 * (PROVIDER_CHANGE_CHANNEL) to the followers registered with `followProviderChanges`. A waiter registers before its Update is sent, so a
 * hint cannot arrive in between unseen. The connection reconnects on its own; while it is down,
 * waits simply get no hint.
 */
export class OutcomeHintListener {
  /** By `<channel>:<record id>`. */
  private readonly waiters = new Map<string, Set<(o: unknown) => void>>();
  private readonly providerFollowers = new Set<ProviderChangeFollower>();
  private client: pg.Client | null = null;
  private closed = false;
  private retry: NodeJS.Timeout | null = null;

  private constructor(
    private readonly databaseUrl: string,
    private readonly logger: Logger,
    private readonly applicationName: string,
    private readonly channels: readonly string[],
  ) {}

  /** Starts listening in the background (the first connection is not awaited). */
  static start(databaseUrl: string, logger: Logger, applicationName = 'outcome-hints'): OutcomeHintListener {
    const listener = new OutcomeHintListener(databaseUrl, logger, applicationName, [
      PAYMENT_OUTCOME_CHANNEL,
      REFUND_OUTCOME_CHANNEL,
      PROVIDER_CHANGE_CHANNEL,
    ]);
    void listener.connect();
    return listener;
  }

  /**
   * Provider changes only (a worker: it waits for no outcome hint, and would only parse and drop
   * every one of them).
   */
  static startProviderChanges(databaseUrl: string, logger: Logger, follower: ProviderChangeFollower) {
    const listener = new OutcomeHintListener(databaseUrl, logger, 'provider-changes', [PROVIDER_CHANGE_CHANNEL]);
    listener.followProviderChanges(follower);
    void listener.connect();
    return listener;
  }

  /** Whether hints arrive now (for tests and the bench). */
  get listening(): boolean {
    return this.client !== null;
  }

  /** Calls `follower` on each provider change, and on each (re)connection. */
  followProviderChanges(follower: ProviderChangeFollower): void {
    this.providerFollowers.add(follower);
  }

  waitFor(paymentId: string): OutcomeWait {
    return this.wait<PaymentOutcomeHint>(`${PAYMENT_OUTCOME_CHANNEL}:${paymentId}`);
  }

  waitForRefund(refundId: string): OutcomeWait<RefundOutcomeHint> {
    return this.wait<RefundOutcomeHint>(`${REFUND_OUTCOME_CHANNEL}:${refundId}`);
  }

  private wait<T>(key: string): OutcomeWait<T> {
    let resolveHint!: (o: T) => void;
    const outcome = new Promise<T>((resolve) => (resolveHint = resolve));
    const waiter = resolveHint as (o: unknown) => void;
    let set = this.waiters.get(key);
    if (!set) this.waiters.set(key, (set = new Set()));
    set.add(waiter);
    return {
      outcome,
      cancel: () => {
        const current = this.waiters.get(key);
        current?.delete(waiter);
        if (current?.size === 0) this.waiters.delete(key);
      },
    };
  }

  private deliver(key: string, outcome: unknown): void {
    for (const resolve of this.waiters.get(key) ?? []) resolve(outcome);
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.retry) clearTimeout(this.retry);
    const client = this.client;
    this.client = null;
    await client?.end().catch(() => undefined);
  }

  private async connect(): Promise<void> {
    if (this.closed) return;
    const client = new pg.Client({ connectionString: this.databaseUrl, application_name: this.applicationName });
    let gone = false;
    const lost = (err?: Error) => {
      if (gone) return;
      gone = true;
      if (this.client === client) this.client = null;
      client.removeAllListeners();
      client.on('error', () => undefined);
      void client.end().catch(() => undefined);
      if (this.closed) return;
      if (err)
        this.logger.warn({ err: err.message, listener: this.applicationName }, 'hint listener lost; reconnecting');
      this.retry = setTimeout(() => void this.connect(), 1000);
      this.retry.unref();
    };
    client.on('error', lost);
    client.on('end', () => lost());
    client.on('notification', (msg) => {
      if (msg.channel === PAYMENT_OUTCOME_CHANNEL) {
        const hint = parseHint(msg.payload);
        if (hint) this.deliver(`${msg.channel}:${hint.paymentId}`, hint.outcome);
      } else if (msg.channel === REFUND_OUTCOME_CHANNEL) {
        const hint = parseRefundHint(msg.payload);
        if (hint) this.deliver(`${msg.channel}:${hint.refundId}`, hint.outcome);
      } else if (msg.channel === PROVIDER_CHANGE_CHANNEL) {
        const change = parseProviderChange(msg.payload);
        if (change) for (const f of this.providerFollowers) f.changed(change.merchantId, change.environment);
      }
    });
    try {
      await client.connect();
      await client.query(this.channels.map((channel) => `listen ${channel}`).join('; '));
      if (this.closed) {
        await client.end();
        return;
      }
      this.client = client;
      // Changes made while no connection listened were not seen: everything cached is forgotten.
      for (const f of this.providerFollowers) f.resync();
    } catch (err) {
      lost(err as Error);
    }
  }
}
