import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { startDeliveryFixture } from '../helpers/merchantEventDelivery';
import { MerchantEvent } from '../../src/db/entities';

/**
 * Two deliveries of one merchant event at the same moment (the outbox relay's and a late original
 * one, or a retry after a lost worker): the event is claimed first, so the merchant gets one POST,
 * and the other delivery fails `callback_busy` and later finds it delivered. A real HTTP endpoint,
 * the real database and the real deliverer.
 */
describe('merchant event deliveries claim their event', () => {
  let fixture: Awaited<ReturnType<typeof startDeliveryFixture>>;

  /** A merchant endpoint that answers `status` after `delayMs`, recording each event id it gets. */
  async function startEndpoint(delayMs: number, status = 200) {
    const received: string[] = [];
    const server = http.createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        received.push(String(req.headers['x-event-id']));
        setTimeout(() => {
          res.statusCode = status;
          res.end();
        }, delayMs);
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return {
      url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/cb`,
      received,
      close: () => new Promise<void>((resolve) => server.close(() => resolve())),
    };
  }

  const eventFor = (callbackUrl: string) => fixture.eventFor(callbackUrl);
  const deliverer = () => fixture.deliverer();
  const eventRow = (id: string) => fixture.orm.em.fork().findOneOrFail(MerchantEvent, { id });
  const sql = (text: string, values: unknown[]) => fixture.orm.em.getConnection().execute(text, values);

  beforeAll(async () => {
    fixture = await startDeliveryFixture('Callback claims merchant');
  });
  afterAll(() => fixture.close());

  it('two deliveries at once: one POST; the other fails callback_busy, then finds it delivered', async () => {
    const endpoint = await startEndpoint(800);
    try {
      const eventId = await eventFor(endpoint.url);
      const results = await Promise.allSettled([
        deliverer().deliverMerchantEvent(eventId),
        deliverer().deliverMerchantEvent(eventId),
      ]);
      expect(results.map((r) => r.status).sort()).toEqual(['fulfilled', 'rejected']);
      const busy = results.find((r) => r.status === 'rejected') as PromiseRejectedResult;
      expect(busy.reason).toMatchObject({ type: 'callback_busy', nonRetryable: false });
      expect(endpoint.received).toEqual([eventId]);
      const delivered = await eventRow(eventId);
      expect(delivered).toMatchObject({ attempts: 1, lastError: null, claimedUntil: null });
      expect(delivered.deliveredAt).not.toBeNull();

      // The busy delivery's retry: nothing to do, nothing sent.
      await deliverer().deliverMerchantEvent(eventId);
      expect(endpoint.received).toEqual([eventId]);
      expect((await eventRow(eventId)).attempts).toBe(1);
    } finally {
      await endpoint.close();
    }
  });

  it('a failed delivery releases its claim: the retry POSTs again at once', async () => {
    const endpoint = await startEndpoint(0, 503);
    try {
      const eventId = await eventFor(endpoint.url);
      await expect(deliverer().deliverMerchantEvent(eventId)).rejects.toMatchObject({ type: 'callback_failed' });
      expect(await eventRow(eventId)).toMatchObject({ attempts: 1, lastError: 'HTTP 503', claimedUntil: null });
      await expect(deliverer().deliverMerchantEvent(eventId)).rejects.toMatchObject({ type: 'callback_failed' });
      expect(endpoint.received).toEqual([eventId, eventId]);
      expect((await eventRow(eventId)).attempts).toBe(2);
    } finally {
      await endpoint.close();
    }
  });

  it('a claim left by a lost delivery holds until it lapses, then the event is delivered', async () => {
    const endpoint = await startEndpoint(0);
    try {
      const eventId = await eventFor(endpoint.url);
      // A delivery whose worker died mid-POST: its claim still runs.
      await sql(`update merchant_events set claimed_until = now() + interval '1 hour' where id = ?`, [eventId]);
      await expect(deliverer().deliverMerchantEvent(eventId)).rejects.toMatchObject({ type: 'callback_busy' });
      expect(endpoint.received).toEqual([]);
      // Lapsed.
      await sql(`update merchant_events set claimed_until = now() - interval '1 second' where id = ?`, [eventId]);
      await deliverer().deliverMerchantEvent(eventId);
      expect(endpoint.received).toEqual([eventId]);
      expect((await eventRow(eventId)).deliveredAt).not.toBeNull();
    } finally {
      await endpoint.close();
    }
  });
});
