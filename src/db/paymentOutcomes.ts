import type { MikroORM } from '@mikro-orm/postgresql';
import pg from 'pg';
import type { Logger } from '../logger';
import type { SubmitOutcome } from '../../workflows/paymentApi';

/**
 * A hint from the worker to the API that a payment attempt's outcome is in PostgreSQL
 * (LISTEN/NOTIFY), so the API answers the merchant without waiting for the workflow task that
 * completes its Update: one Temporal dispatch less on the way back (issue 12).
 *
 * Only a hint: the API still reads the row, and the Update's own result stays the answer when no
 * hint comes (listener down, a repeat of a finished attempt, anything but a settled outcome).
 * Sent only after the attempt's own transaction committed, so the row is there to read.
 */
export const PAYMENT_OUTCOME_CHANNEL = 'payment_outcomes';

/** What a hint says: only outcomes the row already shows (never an ambiguous one). */
export type PaymentOutcomeHint = Extract<SubmitOutcome, { kind: 'settled' | 'created' | 'rejected' }>;

interface HintMessage {
  paymentId: string;
  outcome: PaymentOutcomeHint;
}

/** Best effort: a lost hint costs the API one workflow task of waiting, nothing else. */
export async function publishPaymentOutcome(
  orm: MikroORM,
  paymentId: string,
  outcome: PaymentOutcomeHint,
  logger: Logger,
): Promise<void> {
  const message: HintMessage = { paymentId, outcome };
  try {
    await orm.em.getConnection().execute('select pg_notify(?, ?)', [PAYMENT_OUTCOME_CHANNEL, JSON.stringify(message)]);
  } catch (err) {
    logger.warn({ paymentId, err }, 'payment outcome hint not sent');
  }
}

/** Parses a hint; anything else on the channel is ignored. */
export function parseHint(payload: string | undefined): HintMessage | null {
  if (!payload) return null;
  try {
    const m = JSON.parse(payload) as Partial<HintMessage>;
    const kind = m.outcome?.kind;
    if (typeof m.paymentId !== 'string' || (kind !== 'settled' && kind !== 'created' && kind !== 'rejected')) {
      return null;
    }
    return m as HintMessage;
  } catch {
    return null;
  }
}

export interface OutcomeWait {
  /** Resolves with the first hint for the payment; never rejects. */
  readonly outcome: Promise<PaymentOutcomeHint>;
  /** Stops waiting (always call it: the waiter is removed). */
  cancel(): void;
}

/**
 * One LISTEN connection per API process. A waiter registers before its Update is sent, so a
 * hint cannot arrive in between unseen. The connection reconnects on its own; while it is down,
 * waits simply get no hint.
 */
export class PaymentOutcomeListener {
  private readonly waiters = new Map<string, Set<(o: PaymentOutcomeHint) => void>>();
  private client: pg.Client | null = null;
  private closed = false;
  private retry: NodeJS.Timeout | null = null;

  private constructor(
    private readonly databaseUrl: string,
    private readonly logger: Logger,
    private readonly applicationName: string,
  ) {}

  /** Starts listening in the background (the first connection is not awaited). */
  static start(databaseUrl: string, logger: Logger, applicationName = 'payment-outcomes'): PaymentOutcomeListener {
    const listener = new PaymentOutcomeListener(databaseUrl, logger, applicationName);
    void listener.connect();
    return listener;
  }

  /** Whether hints arrive now (for tests and the bench). */
  get listening(): boolean {
    return this.client !== null;
  }

  waitFor(paymentId: string): OutcomeWait {
    let resolveHint!: (o: PaymentOutcomeHint) => void;
    const outcome = new Promise<PaymentOutcomeHint>((resolve) => (resolveHint = resolve));
    let set = this.waiters.get(paymentId);
    if (!set) this.waiters.set(paymentId, (set = new Set()));
    set.add(resolveHint);
    return {
      outcome,
      cancel: () => {
        const current = this.waiters.get(paymentId);
        current?.delete(resolveHint);
        if (current?.size === 0) this.waiters.delete(paymentId);
      },
    };
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
      if (err) this.logger.warn({ err: err.message }, 'payment outcome listener lost; reconnecting');
      this.retry = setTimeout(() => void this.connect(), 1000);
      this.retry.unref();
    };
    client.on('error', lost);
    client.on('end', () => lost());
    client.on('notification', (msg) => {
      if (msg.channel !== PAYMENT_OUTCOME_CHANNEL) return;
      const hint = parseHint(msg.payload);
      if (!hint) return;
      for (const resolve of this.waiters.get(hint.paymentId) ?? []) resolve(hint.outcome);
    });
    try {
      await client.connect();
      await client.query(`listen ${PAYMENT_OUTCOME_CHANNEL}`);
      if (this.closed) {
        await client.end();
        return;
      }
      this.client = client;
    } catch (err) {
      lost(err as Error);
    }
  }
}
