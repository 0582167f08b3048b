import { RateLimiter, rateLimitHeaders, type BucketStore, type RateRule } from '../../src/api/rateLimiter';
import { createLogger } from '../../src/logger';

/** The shared bucket's arithmetic in memory, on a clock the test moves (the logic under test is the local part). */
class MemoryStore implements BucketStore {
  calls = 0;
  failing = false;
  private readonly buckets = new Map<string, { tokens: number; at: number }>();
  constructor(private readonly now: () => number) {}

  take(key: string, want: number, rule: RateRule): Promise<{ granted: number; tokens: number }> {
    this.calls++;
    if (this.failing) return Promise.reject(new Error('store down'));
    const b = this.buckets.get(key) ?? { tokens: rule.burst, at: this.now() };
    const available = Math.min(rule.burst, b.tokens + ((this.now() - b.at) / 1000) * rule.ratePerSecond);
    const granted = Math.min(want, Math.floor(available));
    this.buckets.set(key, { tokens: available - granted, at: this.now() });
    return Promise.resolve({ granted, tokens: available - granted });
  }
}

describe('RateLimiter (local leases of a shared bucket)', () => {
  let now = 1_000_000;
  const log = createLogger('silent', 'test');
  beforeEach(() => {
    now = 1_000_000;
    jest.spyOn(Date, 'now').mockImplementation(() => now);
  });
  afterEach(() => jest.restoreAllMocks());

  it('spends leased tokens without asking the store for each request', async () => {
    const store = new MemoryStore(() => now);
    const limiter = new RateLimiter(store, { ratePerSecond: 100, burst: 200 }, log);
    for (let i = 0; i < 50; i++) expect((await limiter.consume('k')).allowed).toBe(true);
    // Leases of 5 (1/20 of the rate): 10 round trips for 50 requests.
    expect(store.calls).toBe(10);
  });

  it('refuses once the burst is spent, without asking the store again until a token is due', async () => {
    const store = new MemoryStore(() => now);
    const limiter = new RateLimiter(store, { ratePerSecond: 2, burst: 3 }, log);
    const decisions = [];
    for (let i = 0; i < 4; i++) decisions.push(await limiter.consume('k'));
    expect(decisions.map((d) => d.allowed)).toEqual([true, true, true, false]);
    expect(rateLimitHeaders(decisions[3]!)).toEqual({
      'RateLimit-Limit': '3',
      'RateLimit-Remaining': '0',
      'RateLimit-Reset': '2',
      'Retry-After': '1',
    });
    const calls = store.calls;
    for (let i = 0; i < 10; i++) expect((await limiter.consume('k')).allowed).toBe(false);
    expect(limiter.blocked('k')).toMatchObject({ allowed: false });
    expect(store.calls).toBe(calls);
    now += 500; // one token at 2/s
    expect(limiter.blocked('k')).toBeUndefined();
    expect((await limiter.consume('k')).allowed).toBe(true);
    expect((await limiter.consume('k')).allowed).toBe(false);
  });

  it('spends and refuses without waiting only while this process can decide alone', async () => {
    const store = new MemoryStore(() => now);
    const limiter = new RateLimiter(store, { ratePerSecond: 2, burst: 3 }, log, { leaseSize: 2 });
    expect(limiter.spend('k')).toBeUndefined(); // no lease yet: only the store can tell
    expect(store.calls).toBe(0);
    expect((await limiter.consume('k')).allowed).toBe(true); // leases 2, spends 1
    expect(limiter.spend('k')).toMatchObject({ allowed: true, remaining: 1 });
    expect(limiter.spend('k')).toBeUndefined(); // the lease is spent
    expect((await limiter.consume('k')).allowed).toBe(true); // the bucket's last token
    expect((await limiter.consume('k')).allowed).toBe(false);
    expect(limiter.spend('k')).toMatchObject({ allowed: false, retryAfterSeconds: 1 });
    expect(store.calls).toBe(3);
  });

  it('lets a lease lapse after its TTL (its tokens are not spent later)', async () => {
    const store = new MemoryStore(() => now);
    const limiter = new RateLimiter(store, { ratePerSecond: 100, burst: 200 }, log, { leaseTtlMs: 1000 });
    await limiter.consume('k');
    expect(store.calls).toBe(1);
    now += 1001;
    await limiter.consume('k');
    expect(store.calls).toBe(2);
  });

  it('shares one lease among concurrent requests of a key', async () => {
    const store = new MemoryStore(() => now);
    const limiter = new RateLimiter(store, { ratePerSecond: 100, burst: 200 }, log);
    const decisions = await Promise.all(Array.from({ length: 5 }, () => limiter.consume('k')));
    expect(decisions.every((d) => d.allowed)).toBe(true);
    expect(store.calls).toBe(1);
  });

  it('lets requests through when the store fails (a database outage answers them anyway)', async () => {
    const store = new MemoryStore(() => now);
    store.failing = true;
    const limiter = new RateLimiter(store, { ratePerSecond: 1, burst: 1 }, log);
    expect((await limiter.consume('k')).allowed).toBe(true);
    expect((await limiter.consume('k')).allowed).toBe(true);
  });

  it('estimates what is left for the headers, and when the bucket is full again', async () => {
    const store = new MemoryStore(() => now);
    const limiter = new RateLimiter(store, { ratePerSecond: 10, burst: 20 }, log, { leaseSize: 1 });
    const first = await limiter.consume('k');
    expect(first).toMatchObject({ allowed: true, limit: 20, remaining: 19, resetSeconds: 1 });
  });
});
