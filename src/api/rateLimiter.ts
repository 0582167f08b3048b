import type { EntityManager } from '@mikro-orm/postgresql';
import type { Logger } from '../logger';

/**
 * Rate limits shared by every API process (PRODUCT.md, "Rate limits"; docs/decisions.md,
 * "Lists and rate limits").
 *
 * One token bucket per key (an API key, or a client address with failed authentications) lives
 * in PostgreSQL (`rate_limit_buckets`): `burst` tokens at most, refilled at `ratePerSecond`. A
 * request spends one token. So that a request does not cost a database round trip, a process
 * takes tokens from the shared bucket in small leases (one atomic upsert each) and spends them
 * locally; a lease it has not spent within a second lapses. The shared bucket is never
 * overdrawn: every token a process spends was taken from it first. What leases cost is the
 * other way round: tokens a process holds are not available to the others for up to a second
 * (at most `leaseSize` per process and key, about 1/20 of a second's rate).
 *
 * An empty bucket is remembered locally until its next token is due, so a client hammering
 * past its limit costs no database round trip either.
 */

export interface RateRule {
  /** Sustained rate, tokens per second (> 0). */
  ratePerSecond: number;
  /** Bucket size: the most requests at once (>= 1). */
  burst: number;
}

/** The outcome of one request against its bucket, and what its RateLimit-* headers say. */
export interface RateDecision {
  allowed: boolean;
  /** The bucket's size (RateLimit-Limit). */
  limit: number;
  /** Tokens left after this request, as this process sees them (RateLimit-Remaining). */
  remaining: number;
  /** Whole seconds until the bucket is full again (RateLimit-Reset). */
  resetSeconds: number;
  /** When refused: whole seconds until a token is due (Retry-After), at least 1. */
  retryAfterSeconds: number;
}

/** Buckets a process keeps (its local view, and the memory store's); the oldest go first. */
const MAX_LOCAL_KEYS = 10_000;

/** Where the shared buckets live. */
export interface BucketStore {
  /** Takes up to `want` whole tokens from bucket `key` at once; answers how many, and how many are left. */
  take(key: string, want: number, rule: RateRule): Promise<{ granted: number; tokens: number }>;
}

/** A number as an SQL literal: only finite numbers from the configuration reach the statement. */
function literal(n: number): string {
  if (!Number.isFinite(n)) throw new Error(`not a finite number: ${n}`);
  return String(n);
}

/**
 * Buckets in this process's memory: for what must not cost a database round trip (the
 * unauthenticated routes' per-address limit, decision 0081). Each API process counts alone, so
 * behind N processes an address has N budgets. At most MAX_LOCAL_KEYS buckets, oldest dropped.
 */
export class MemoryBucketStore implements BucketStore {
  private readonly buckets = new Map<string, { tokens: number; at: number }>();

  take(key: string, want: number, rule: RateRule): Promise<{ granted: number; tokens: number }> {
    const now = Date.now();
    const found = this.buckets.get(key);
    const available = found
      ? Math.min(rule.burst, found.tokens + ((now - found.at) / 1000) * rule.ratePerSecond)
      : rule.burst;
    const granted = Math.max(0, Math.min(want, Math.floor(available)));
    this.buckets.delete(key); // re-inserted last: the Map's order is the eviction order
    if (this.buckets.size >= MAX_LOCAL_KEYS) this.buckets.delete(this.buckets.keys().next().value!);
    this.buckets.set(key, { tokens: available - granted, at: now });
    return Promise.resolve({ granted, tokens: available - granted });
  }
}

/** How often a process deletes the full buckets (rows as good as absent), at most. */
const CLEANUP_INTERVAL_MS = 60_000;

/**
 * The buckets in PostgreSQL: one upsert refills a bucket for the time since its last use
 * (database clock: processes' clocks do not matter) and takes what it can, under the row's lock.
 */
export class PostgresBucketStore implements BucketStore {
  private lastCleanup = Date.now();

  constructor(
    private readonly em: EntityManager,
    private readonly log: Logger,
  ) {}

  async take(key: string, want: number, rule: RateRule): Promise<{ granted: number; tokens: number }> {
    const burst = literal(rule.burst);
    const rate = literal(rule.ratePerSecond);
    const first = literal(Math.min(want, rule.burst));
    const available = `least(${burst}, b.tokens + greatest(0, extract(epoch from now() - b.refreshed_at)) * ${rate})`;
    const granted = `least(${literal(want)}, floor(${available}))`;
    const rows: Array<{ tokens: number | string; granted: number | string }> = await this.em.getConnection().execute(
      `insert into rate_limit_buckets as b (key, tokens, granted, refreshed_at, full_at)
       values (?, ${burst} - ${first}, ${first}, now(), now() + make_interval(secs => ${first} / ${rate}))
       on conflict (key) do update set
         tokens = ${available} - ${granted},
         granted = ${granted},
         refreshed_at = now(),
         full_at = now() + make_interval(secs => (${burst} - (${available} - ${granted})) / ${rate})
       returning tokens, granted`,
      [key],
    );
    this.cleanupNowAndThen();
    const row = rows[0]!;
    return { granted: Number(row.granted), tokens: Number(row.tokens) };
  }

  private cleanupNowAndThen(): void {
    const now = Date.now();
    if (now - this.lastCleanup < CLEANUP_INTERVAL_MS) return;
    this.lastCleanup = now;
    this.em
      .getConnection()
      .execute('delete from rate_limit_buckets where full_at < now()')
      .catch((err: unknown) => this.log.warn({ err }, 'could not delete full rate-limit buckets'));
  }
}

interface LocalBucket {
  /** Tokens of the current lease not spent yet. */
  allowance: number;
  /** When the current lease lapses (ms). */
  leaseUntil: number;
  /** The shared bucket was empty: refused locally until then (ms). */
  blockedUntil: number;
  /** The shared bucket's tokens after the last lease, and when (ms): the headers' estimate. */
  sharedTokens: number;
  sharedAt: number;
  leasing?: Promise<void>;
}

export interface RateLimiterOptions {
  /** Tokens taken per lease (default: about 1/20 of a second's rate, at most a tenth of the burst; 1 is exact). */
  leaseSize?: number;
  /** How long a lease's tokens may be spent (default 1000 ms). */
  leaseTtlMs?: number;
}

const STORE_FAILURE_LOG_INTERVAL_MS = 10_000;

export class RateLimiter {
  private readonly local = new Map<string, LocalBucket>();
  private readonly leaseSize: number;
  private readonly leaseTtlMs: number;
  private lastFailureLog = 0;

  constructor(
    private readonly store: BucketStore,
    readonly rule: RateRule,
    private readonly log: Logger,
    options: RateLimiterOptions = {},
  ) {
    if (!(rule.ratePerSecond > 0) || !(rule.burst >= 1))
      throw new Error('a rate limit needs a rate > 0 and a burst >= 1');
    this.leaseSize =
      options.leaseSize ?? Math.max(1, Math.min(Math.floor(rule.burst / 10), Math.ceil(rule.ratePerSecond / 20)));
    this.leaseTtlMs = options.leaseTtlMs ?? 1000;
  }

  /**
   * Spends one token of `key`'s bucket from this process's lease, or refuses while the bucket is
   * known empty, without waiting; undefined when only a new lease can tell (then `consume`).
   */
  spend(key: string): RateDecision | undefined {
    return this.decideLocally(this.bucket(key), Date.now());
  }

  /** Spends one token of `key`'s bucket, or refuses. */
  async consume(key: string): Promise<RateDecision> {
    const bucket = this.bucket(key);
    // Each round either spends, refuses, or waits for a lease that took at least one token (which
    // a concurrent request may spend first): a few rounds are plenty.
    for (let round = 0; round < 5; round++) {
      const decided = this.decideLocally(bucket, Date.now());
      if (decided) return decided;
      bucket.leasing ??= this.lease(key, bucket).finally(() => {
        bucket.leasing = undefined;
      });
      const leased = await bucket.leasing.then(
        () => true,
        () => false,
      );
      if (!leased) return this.allowed(bucket, Date.now()); // the store failed: fail open (logged)
    }
    return this.refused(bucket, Date.now());
  }

  /** Refused without asking the store: `key`'s bucket was found empty and no token is due yet. */
  blocked(key: string): RateDecision | undefined {
    const bucket = this.local.get(key);
    const now = Date.now();
    return bucket && bucket.blockedUntil > now ? this.refused(bucket, now) : undefined;
  }

  private decideLocally(bucket: LocalBucket, now: number): RateDecision | undefined {
    if (bucket.blockedUntil > now) return this.refused(bucket, now);
    if (bucket.allowance > 0 && bucket.leaseUntil > now) {
      bucket.allowance--;
      return this.allowed(bucket, now);
    }
    return undefined;
  }

  private bucket(key: string): LocalBucket {
    let bucket = this.local.get(key);
    if (!bucket) {
      // Oldest first (insertion order): a flood of keys costs memory no more.
      if (this.local.size >= MAX_LOCAL_KEYS) this.local.delete(this.local.keys().next().value!);
      bucket = { allowance: 0, leaseUntil: 0, blockedUntil: 0, sharedTokens: this.rule.burst, sharedAt: 0 };
      this.local.set(key, bucket);
    }
    return bucket;
  }

  private async lease(key: string, bucket: LocalBucket): Promise<void> {
    try {
      const { granted, tokens } = await this.store.take(key, this.leaseSize, this.rule);
      const now = Date.now();
      bucket.allowance = granted;
      bucket.leaseUntil = now + this.leaseTtlMs;
      bucket.sharedTokens = tokens;
      bucket.sharedAt = now;
      if (granted === 0) bucket.blockedUntil = now + Math.max(1, ((1 - tokens) / this.rule.ratePerSecond) * 1000);
    } catch (err) {
      const now = Date.now();
      if (now - this.lastFailureLog >= STORE_FAILURE_LOG_INTERVAL_MS) {
        this.lastFailureLog = now;
        this.log.warn({ err }, 'rate limit store unavailable: requests are let through unlimited');
      }
      throw err;
    }
  }

  /** The shared bucket's tokens now, as this process last saw them, refilled since. */
  private sharedNow(bucket: LocalBucket, now: number): number {
    return Math.min(this.rule.burst, bucket.sharedTokens + ((now - bucket.sharedAt) / 1000) * this.rule.ratePerSecond);
  }

  private allowed(bucket: LocalBucket, now: number): RateDecision {
    const remaining = Math.max(
      0,
      Math.min(this.rule.burst, Math.floor(this.sharedNow(bucket, now) + bucket.allowance)),
    );
    return {
      allowed: true,
      limit: this.rule.burst,
      remaining,
      resetSeconds: Math.ceil((this.rule.burst - remaining) / this.rule.ratePerSecond),
      retryAfterSeconds: 0,
    };
  }

  private refused(bucket: LocalBucket, now: number): RateDecision {
    const tokens = Math.max(0, this.sharedNow(bucket, now));
    return {
      allowed: false,
      limit: this.rule.burst,
      remaining: 0,
      resetSeconds: Math.max(1, Math.ceil((this.rule.burst - tokens) / this.rule.ratePerSecond)),
      retryAfterSeconds: Math.max(1, Math.ceil((bucket.blockedUntil - now) / 1000)),
    };
  }
}

/** The RateLimit-* headers of a decision (and Retry-After when refused). */
export function rateLimitHeaders(decision: RateDecision): Record<string, string> {
  return {
    'RateLimit-Limit': String(decision.limit),
    'RateLimit-Remaining': String(decision.remaining),
    'RateLimit-Reset': String(decision.resetSeconds),
    ...(decision.allowed ? {} : { 'Retry-After': String(decision.retryAfterSeconds) }),
  };
}

/** PRODUCT.md, "Rate limits": RATE_LIMIT_* of src/config.ts. A 0 turns that limit off. */
export interface RateLimitSettings {
  perSecond: number;
  burst: number;
  authFailuresPerMinute: number;
  authFailuresBurst: number;
  /**
   * Per client address and API process, on the routes without authentication (decision 0081):
   * every `GET /readyz`, and every refused provider webhook (bad id, unknown processor, bad
   * signature). Absent or 0: off.
   */
  unauthenticatedPerSecond?: number;
  unauthenticatedBurst?: number;
}

/** The limiters of one API process (absent settings: none). */
export function rateLimiters(
  em: EntityManager,
  settings: RateLimitSettings | undefined,
  log: Logger,
): { perKey?: RateLimiter; authFailures?: RateLimiter; unauthenticated?: RateLimiter } {
  if (!settings) return {};
  const store = new PostgresBucketStore(em, log);
  const unauthenticatedPerSecond = settings.unauthenticatedPerSecond ?? 0;
  const unauthenticatedBurst = settings.unauthenticatedBurst ?? 0;
  return {
    // In memory, token by token: counting must not touch the database these routes spare.
    ...(unauthenticatedPerSecond > 0 && unauthenticatedBurst > 0
      ? {
          unauthenticated: new RateLimiter(
            new MemoryBucketStore(),
            { ratePerSecond: unauthenticatedPerSecond, burst: unauthenticatedBurst },
            log,
            { leaseSize: 1 },
          ),
        }
      : {}),
    ...(settings.perSecond > 0 && settings.burst > 0
      ? { perKey: new RateLimiter(store, { ratePerSecond: settings.perSecond, burst: settings.burst }, log) }
      : {}),
    // Failures are few and each counts: leases of one token, so every process sees the same budget.
    ...(settings.authFailuresPerMinute > 0 && settings.authFailuresBurst > 0
      ? {
          authFailures: new RateLimiter(
            store,
            { ratePerSecond: settings.authFailuresPerMinute / 60, burst: settings.authFailuresBurst },
            log,
            { leaseSize: 1 },
          ),
        }
      : {}),
  };
}
