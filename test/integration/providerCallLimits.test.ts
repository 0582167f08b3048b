import { createTestMerchant, startPaymentStack, type PaymentStack, type TestMerchant } from '../helpers/stack';
import { call } from '../helpers/http';
import { providerCallLimiter } from '../../src/temporal/providerCallLimits';
import { compiledSlots } from '../../src/temporal/activitySlots';
import type { ProviderCallLimits } from '../../src/providers/callLimits';
import type { ProviderRequestLog } from '../../dev/sandbox/state';

/**
 * Issue 44, item 8 (decision 0085): one merchant's burst of provider-bound operations is held to
 * its limits (a rate and a number in flight, per worker process), out of the worker's slots, while
 * another merchant's operation goes through at once; every one of the burst still ends, each money
 * movement sent and recorded exactly once. The worker's slots are sized to its database pool.
 */
const LIMITS: ProviderCallLimits = { perSecond: 5, burst: 2, concurrency: 2 };
/** Each sandbox answer takes this long, so that calls would overlap if nothing held them. */
const LATENCY_MS = 150;
const BURST = 10;

describe("a merchant's burst of provider calls is limited to its own rate, never the others'", () => {
  let stack: PaymentStack;
  let a: TestMerchant;
  let b: TestMerchant;
  let seq = 0;
  const ext = (p: string) => `${p}-${Date.now()}-${++seq}`;
  const pay = (m: TestMerchant) =>
    call<{ id: string; status: string }>(stack.api.baseUrl, 'POST', '/payments', m.auth, {
      amount: 10,
      currency: 'USD',
      externalId: ext('limits'),
      customer: { email: 'c@example.com' },
      cardToken: 'tok_success',
    });
  const refund = (m: TestMerchant, paymentId: string) =>
    call<{ id: string; status: string }>(stack.api.baseUrl, 'POST', `/payments/${paymentId}/refund`, m.auth, {
      externalId: ext('limits-refund'),
    });
  const timed = async <T>(run: () => Promise<T>) => {
    const started = Date.now();
    const result = await run();
    return { result, ms: Date.now() - started, at: Date.now() };
  };
  const sandboxRequests = async (keys: Set<string>) => {
    const { requests } = (await stack.sandbox('/_admin/requests')) as { requests: ProviderRequestLog[] };
    return requests.filter((r) => r.method === 'POST' && r.idempotencyKey !== null && keys.has(r.idempotencyKey));
  };

  /** The sandbox saw at most the burst plus the rate in any second, and at most `concurrency` at once. */
  const expectWithinLimits = (requests: ProviderRequestLog[]) => {
    const at = requests.map((r) => Date.parse(r.receivedAt)).sort((x, y) => x - y);
    for (let i = 0; i < at.length; i++) {
      const inSecond = at.filter((t) => t >= at[i]! && t < at[i]! + 1000).length;
      // Slack of one for the network's jitter between the limiter's admission and the sandbox.
      expect(inSecond).toBeLessThanOrEqual(LIMITS.burst + LIMITS.perSecond + 1);
      // Each request holds the sandbox at least LATENCY_MS: those received within it overlap.
      const overlapping = at.filter((t) => t >= at[i]! && t < at[i]! + LATENCY_MS).length;
      expect(overlapping).toBeLessThanOrEqual(LIMITS.concurrency);
    }
  };

  beforeAll(async () => {
    stack = await startPaymentStack('calllimits', {}, 1500, { callLimiter: providerCallLimiter(LIMITS) });
    a = await createTestMerchant(stack.orm, 'Bursting merchant');
    b = await createTestMerchant(stack.orm, 'Merchant next door');
  });
  afterAll(async () => {
    await stack.sandbox('/_admin/faults', {});
    await stack.close();
  });

  it("the worker's activity and local activity slots are sized to its pool of 10 connections", () => {
    // The test worker polls the main, subscription and delivery queues on one ORM pool of 10.
    const money = stack.worker.workers.filter((w) => !w.options.taskQueue.endsWith('-deliveries'));
    expect(money).toHaveLength(2);
    for (const worker of money) {
      expect(compiledSlots(worker.options.tuner)).toEqual({ activities: 10, localActivities: 10 });
    }
  });

  it("A's burst of payments then refunds: held to its limits, all settled, each sent once; B's payment goes through at once", async () => {
    await stack.sandbox('/_admin/faults', { latencyMs: LATENCY_MS });
    // Warm: each merchant's key verified, the workers' caches filled. B's answer alone is the baseline.
    expect((await pay(a)).body.status).toBe('succeeded');
    const alone = await timed(() => pay(b));
    expect(alone.result.body.status).toBe('succeeded');
    await new Promise((r) => setTimeout(r, 1000)); // A's bucket full again

    // A's burst of token payments, all at once; B's one payment right behind them.
    const burst = Array.from({ length: BURST }, () => timed(() => pay(a)));
    await new Promise((r) => setTimeout(r, 50));
    const bPayment = await timed(() => pay(b));
    const payments = await Promise.all(burst);

    for (const { result } of payments) {
      expect(result.status).toBe(200);
      expect(result.body.status).toBe('succeeded');
    }
    expect(bPayment.result.body.status).toBe('succeeded');
    // B waited for no one: answered about as fast as alone (within a second, for the stack's load),
    // and before A's burst was through (its 10 calls at 5/s after a burst of 2 take 1.6 s at least).
    expect(bPayment.ms).toBeLessThan(alone.ms + 1000);
    expect(bPayment.at).toBeLessThan(Math.max(...payments.map((p) => p.at)));

    const paymentIds = payments.map((p) => p.result.body.id);
    const paymentCalls = await sandboxRequests(new Set(paymentIds));
    // Each payment was sent once (never a second money movement), and the burst within A's limits.
    expect(paymentCalls.map((r) => r.idempotencyKey).sort()).toEqual([...paymentIds].sort());
    expectWithinLimits(paymentCalls);
    for (const id of paymentIds) expect(await stack.ledger('capture', id)).toHaveLength(1);

    // A refunds every one of them at once.
    const refunds = await Promise.all(paymentIds.map((id) => refund(a, id)));
    for (const r of refunds) {
      expect(r.status).toBe(200);
      expect(r.body.status).toBe('succeeded');
    }
    const refundIds = refunds.map((r) => r.body.id);
    const refundCalls = await sandboxRequests(new Set(refundIds));
    expect(refundCalls.map((r) => r.idempotencyKey).sort()).toEqual([...refundIds].sort());
    expectWithinLimits(refundCalls);
    for (const id of paymentIds) {
      const entries = await stack.ledger('refund', id);
      expect(entries).toHaveLength(1);
      expect(entries[0]).toMatchObject({ status: 'succeeded', amount: 10 });
    }
  });
});
