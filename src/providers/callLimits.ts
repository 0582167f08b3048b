import type { PaymentProvider } from './types';

/**
 * Per-merchant limits on the calls a worker process makes to payment providers (issue 44, item 8;
 * decision 0085): one merchant's burst takes neither every activity slot nor the processor's rate
 * limit from the others. Each worker process keeps its own (in memory, no database round trip on
 * the path of a payment): a cluster's limit is the sum over its worker processes.
 */
export interface ProviderCallLimits {
  /** Calls per second per merchant, sustained (PROVIDER_CALLS_PER_SECOND_PER_MERCHANT; 0: none). */
  perSecond: number;
  /** Calls per merchant at once above the sustained rate (PROVIDER_CALL_BURST_PER_MERCHANT). */
  burst: number;
  /** Calls per merchant in flight at once (PROVIDER_CALL_CONCURRENCY_PER_MERCHANT; 0: none). */
  concurrency: number;
}

/**
 * A provider call refused before it was made, over its merchant's limit: nothing was sent. The
 * activity fails retryably, asked to come back after `retryAfterMs` (src/temporal/providerCallLimits.ts),
 * without holding its slot meanwhile.
 */
export class ProviderCallsLimitedError extends Error {
  constructor(
    readonly merchantId: string,
    readonly limit: 'rate' | 'concurrency',
    readonly retryAfterMs: number,
  ) {
    super(
      `provider calls of ${merchantId} over their ${limit} limit; nothing was sent; try again in ${retryAfterMs} ms`,
    );
    this.name = 'ProviderCallsLimitedError';
  }
}

interface MerchantCalls {
  /** Tokens left at `refilledAt` (negative: promised to reserved callers). */
  tokens: number;
  refilledAt: number;
  /** The calls in flight, by when each started. */
  inFlight: Set<{ startedAt: number }>;
  /** Callers told to come back at a time: their token is theirs then (caller key -> time). */
  reservations: Map<string, number>;
  /** A moving average of this merchant's call durations: how long a concurrency refusal waits. */
  averageMs: number;
}

/** How far ahead a caller may be given its turn; past it, refused without a reservation. */
const MAX_RESERVATION_MS = 60_000;
/** A reservation whose caller did not come back (retried in another process, or ended) is dropped after this. */
const RESERVATION_GRACE_MS = 30_000;
/** Merchants tracked at once; idle ones are forgotten beyond it. */
const MAX_MERCHANTS = 10_000;
/** Within this of its reserved time a caller is let through (timers fire a little early or late). */
const EARLY_MS = 5;
/** A merchant's call duration before any was measured. */
const INITIAL_CALL_MS = 250;
const MIN_CONCURRENCY_WAIT_MS = 50;
const MAX_CONCURRENCY_WAIT_MS = 2000;

/**
 * A token bucket per merchant (`perSecond`, `burst`) and a count of calls in flight
 * (`concurrency`). A refused call waits out of its slot (its activity retried later), so a caller
 * refused for the rate is given its turn: a token is promised to it (the bucket goes into debt) and
 * it is told when to come back; recognised then by `callerKey` (its workflow's activity), it goes
 * through on that token, ahead of newcomers. Without a key, it is told when a token is due and
 * competes again.
 */
export class ProviderCallLimiter {
  private readonly merchants = new Map<string, MerchantCalls>();

  constructor(
    readonly limits: ProviderCallLimits,
    private readonly options: { callerKey?: () => string | undefined; now?: () => number; random?: () => number } = {},
  ) {}

  /** Whether any limit applies. */
  get enabled(): boolean {
    return this.limits.perSecond > 0 || this.limits.concurrency > 0;
  }

  /**
   * Admits one call of `merchantId` or throws ProviderCallsLimitedError; an admitted call must
   * call the returned release once it ends.
   */
  admit(merchantId: string): () => void {
    const now = (this.options.now ?? Date.now)();
    const m = this.merchant(merchantId, now);
    const caller = this.options.callerKey?.();
    const reservedAt = caller === undefined ? undefined : m.reservations.get(caller);
    const { perSecond, concurrency } = this.limits;
    if (reservedAt !== undefined && now < reservedAt - EARLY_MS) {
      throw new ProviderCallsLimitedError(merchantId, 'rate', Math.ceil(reservedAt - now));
    }
    const full = concurrency > 0 && m.inFlight.size >= concurrency;
    if (perSecond > 0 && reservedAt === undefined && (full || m.tokens < 1)) {
      // Not now: the caller's turn, its token taken now (a debt when there is none yet), at the
      // later of when a token is due and when a call in flight should have ended.
      const rateWait = m.tokens >= 1 ? 0 : Math.ceil(((1 - m.tokens) * 1000) / perSecond);
      const wait = Math.max(rateWait, full ? this.concurrencyWait(m, now) : 0);
      if (caller !== undefined && wait <= MAX_RESERVATION_MS) {
        m.tokens -= 1;
        m.reservations.set(caller, now + wait);
      }
      throw new ProviderCallsLimitedError(merchantId, wait > rateWait ? 'concurrency' : 'rate', wait);
    }
    // At the limit in flight: a reservation is kept (the token is the caller's when it comes back).
    if (full) throw new ProviderCallsLimitedError(merchantId, 'concurrency', this.concurrencyWait(m, now));
    if (reservedAt !== undefined) m.reservations.delete(caller!);
    else if (perSecond > 0) m.tokens -= 1;
    const call = { startedAt: now };
    m.inFlight.add(call);
    return () => {
      if (!m.inFlight.delete(call)) return;
      const took = (this.options.now ?? Date.now)() - call.startedAt;
      m.averageMs = m.averageMs * 0.8 + took * 0.2;
    };
  }

  /** The merchant's state, its bucket refilled to `now` and its stale reservations dropped. */
  private merchant(merchantId: string, now: number): MerchantCalls {
    let m = this.merchants.get(merchantId);
    if (!m) {
      if (this.merchants.size >= MAX_MERCHANTS) this.forgetIdle(now);
      m = {
        tokens: this.limits.burst,
        refilledAt: now,
        inFlight: new Set(),
        reservations: new Map(),
        averageMs: INITIAL_CALL_MS,
      };
      this.merchants.set(merchantId, m);
      return m;
    }
    if (this.limits.perSecond > 0) {
      m.tokens = Math.min(this.limits.burst, m.tokens + ((now - m.refilledAt) * this.limits.perSecond) / 1000);
    }
    m.refilledAt = now;
    for (const [caller, at] of m.reservations) {
      // Not back: its promised token is given up (the debt it took is not repaid).
      if (at + RESERVATION_GRACE_MS < now) m.reservations.delete(caller);
    }
    return m;
  }

  private forgetIdle(now: number): void {
    for (const [id, m] of this.merchants) {
      const full = m.tokens + ((now - m.refilledAt) * this.limits.perSecond) / 1000 >= this.limits.burst;
      if (m.inFlight.size === 0 && m.reservations.size === 0 && (full || this.limits.perSecond === 0)) {
        this.merchants.delete(id);
      }
    }
  }

  /**
   * When a call in flight should have ended (the oldest, by this merchant's average duration), and
   * spread (so that refused callers do not all come back at once).
   */
  private concurrencyWait(m: MerchantCalls, now: number): number {
    let oldest = now;
    for (const call of m.inFlight) oldest = Math.min(oldest, call.startedAt);
    const left = oldest + m.averageMs - now;
    const base = Math.min(MAX_CONCURRENCY_WAIT_MS, Math.max(MIN_CONCURRENCY_WAIT_MS, left));
    return Math.ceil(base * (1 + 0.5 * (this.options.random ?? Math.random)()));
  }
}

/**
 * `provider` with each of its calls admitted by `limiter` for `merchantId` first (parsing a webhook
 * is no call). A refused call throws ProviderCallsLimitedError before anything is sent.
 */
export function limitProvider(
  provider: PaymentProvider,
  merchantId: string,
  limiter: ProviderCallLimiter,
): PaymentProvider {
  const limited =
    <A extends unknown[], R>(call: (...args: A) => Promise<R>) =>
    async (...args: A): Promise<R> => {
      const release = limiter.admit(merchantId);
      try {
        return await call(...args);
      } finally {
        release();
      }
    };
  return {
    name: provider.name,
    createPayment: limited((input) => provider.createPayment(input)),
    findPayment: limited((by) => provider.findPayment(by)),
    cancelPayment: limited((transactionId) => provider.cancelPayment(transactionId)),
    createRefund: limited((input) => provider.createRefund(input)),
    findRefund: limited((by) => provider.findRefund(by)),
    findDispute: limited((id) => provider.findDispute(id)),
    submitDisputeEvidence: limited((id, text) => provider.submitDisputeEvidence(id, text)),
    acceptDispute: limited((id) => provider.acceptDispute(id)),
    attachPaymentMethod: limited((input) => provider.attachPaymentMethod(input)),
    detachPaymentMethod: limited((reference) => provider.detachPaymentMethod(reference)),
    parseWebhook: (rawBody, headers) => provider.parseWebhook(rawBody, headers),
  };
}
