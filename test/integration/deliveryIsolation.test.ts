import { createTestMerchant, startPaymentStack, type PaymentStack, type TestMerchant } from '../helpers/stack';
import { call, eventually } from '../helpers/http';
import { startCallbackReceiver } from '../helpers/callbackReceiver';
import { startHangingEndpoint } from '../../dev/chaos/endpoints';
import { recordEvent } from '../../src/domain/events';
import { Merchant } from '../../src/db/entities';
import { DEFAULT_DELIVERY_CONCURRENCY_PER_MERCHANT, HOST_PAUSE_AFTER_FAILURES } from '../../src/rules/deliverySchedule';

/**
 * Issue 43: one merchant's hanging endpoint never slows another merchant down (decision 0069).
 * Merchant A has 200 deliveries to an endpoint that accepts and never answers; meanwhile merchant
 * B's token payments are answered and its events delivered as usual. What A's deliveries may take
 * is bounded: at most EVENT_DELIVERY_CONCURRENCY_PER_MERCHANT at once, each 10 s, then its host is
 * paused. (Speed itself is the bench's: `npm run bench:isolation`, bench/RESULTS.md.)
 */
describe('a merchant whose endpoint hangs delays only its own deliveries', () => {
  let stack: PaymentStack;
  let a: TestMerchant;
  let b: TestMerchant;
  let hanging: Awaited<ReturnType<typeof startHangingEndpoint>>;
  let receiver: Awaited<ReturnType<typeof startCallbackReceiver>>;
  const api = <T = Record<string, unknown>>(m: TestMerchant, method: string, path: string, body?: unknown) =>
    call<T>(stack.api.baseUrl, method, path, m.auth, body);

  beforeAll(async () => {
    stack = await startPaymentStack('isolation');
    a = await createTestMerchant(stack.orm, 'Merchant with a hanging endpoint');
    b = await createTestMerchant(stack.orm, 'Merchant next door');
    hanging = await startHangingEndpoint();
    receiver = await startCallbackReceiver();
  });
  afterAll(async () => {
    await hanging.close();
    await receiver.close();
    await stack.close();
  });

  it("200 deliveries to A's hanging endpoint: B's payments and deliveries go on; A holds at most its concurrency, then its host pauses", async () => {
    expect((await api(a, 'POST', '/webhook-endpoints', { url: hanging.url, enabledEvents: ['*'] })).status).toBe(200);
    expect(
      (await api(b, 'POST', '/webhook-endpoints', { url: receiver.url, enabledEvents: ['payment.succeeded'] })).status,
    ).toBe(200);
    // A's 200 events, as its records would write them (each with its delivery job to the endpoint).
    const em = stack.orm.em.fork();
    for (let i = 0; i < 200; i++) {
      recordEvent(em, {
        merchant: em.getReference(Merchant, a.merchantId),
        type: 'payment.succeeded',
        resourceId: `pay_isolation_${i}`,
        dedupeKey: `isolation:${a.merchantId}:${i}`,
        callbackUrl: null,
        environment: 'test',
        data: { id: `pay_isolation_${i}` },
      });
    }
    await em.flush();
    await eventually(
      async () => hanging.state.open,
      (n) => n >= 1,
      10_000,
    );

    // B, while A's deliveries hang: each payment answered at once, each event delivered soon after.
    const answeredAt = new Map<string, number>();
    for (let i = 0; i < 20; i++) {
      const res = await api<{ id: string; status: string }>(b, 'POST', '/payments', {
        amount: 10,
        currency: 'USD',
        externalId: `isolation-b-${i}-${Date.now()}`,
        customer: { email: 'b@example.com' },
        cardToken: 'tok_success',
      });
      expect(res.status).toBe(200);
      expect(res.body.status).toBe('succeeded');
      answeredAt.set(res.body.id, Date.now());
      expect(hanging.state.open).toBeLessThanOrEqual(DEFAULT_DELIVERY_CONCURRENCY_PER_MERCHANT);
    }
    await eventually(
      async () => receiver.received.length,
      (n) => n >= 20,
      10_000,
    );
    for (const c of receiver.received) {
      // Delivered within a few seconds of the answer, while A's 10 s attempts hang.
      expect(c.receivedAt - answeredAt.get(c.json.objectId)!).toBeLessThan(5_000);
    }

    // A's first attempts time out after 10 s; after HOST_PAUSE_AFTER_FAILURES its host is paused,
    // and the rest of its deliveries wait without an attempt spent.
    const rowsOf = async () => {
      const [row]: Array<{ attempted: number; waiting: number; timeouts: number }> = await stack.orm.em
        .getConnection()
        .execute(
          `select (select count(*)::int from delivery_jobs where merchant_id = ? and attempts > 0) as attempted,
                  (select count(*)::int from delivery_jobs where merchant_id = ? and attempts = 0
                      and status = 'pending' and next_attempt_at > now()) as waiting,
                  (select count(*)::int from event_deliveries d join merchant_events e on e.id = d.event_id
                    where e.merchant_id = ? and d.error = 'timeout') as timeouts`,
          [a.merchantId, a.merchantId, a.merchantId],
        );
      return row!;
    };
    const paused = await eventually(rowsOf, (r) => r.waiting >= 200 - 2 * HOST_PAUSE_AFTER_FAILURES, 40_000, 500);
    expect(paused.timeouts).toBeGreaterThanOrEqual(HOST_PAUSE_AFTER_FAILURES);
    expect(paused.attempted).toBeLessThan(2 * HOST_PAUSE_AFTER_FAILURES);
    expect(hanging.state.maxOpen).toBeLessThanOrEqual(DEFAULT_DELIVERY_CONCURRENCY_PER_MERCHANT);
  }, 90_000);
});
