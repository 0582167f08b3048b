import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { startCallbackReceiver } from '../helpers/callbackReceiver';
import { startDeliveryFixture } from '../helpers/merchantEventDelivery';
import type { KeyEnvironment } from '../../src/db/entities';

/**
 * PRODUCT.md, "Production profile": callback URLs are checked when delivered, after DNS. The
 * delivery step (activities/eventDeliveries.ts) delivers the jobs the events' trigger wrote to
 * real HTTP servers on loopback, as a development worker (test callbacks may reach private
 * addresses) and as a production one (ALLOW_PRIVATE_CALLBACKS unset) does.
 */
describe('callback targets, checked at delivery', () => {
  let fixture: Awaited<ReturnType<typeof startDeliveryFixture>>;
  let receiver: Awaited<ReturnType<typeof startCallbackReceiver>>;

  /** One delivery step of a development or a production worker. */
  const step = (mode: 'development' | 'production') =>
    fixture.deliverer({ privateTestCallbacks: mode === 'development' }).deliverDueEvents();
  const eventFor = (environment: KeyEnvironment, callbackUrl: string) => fixture.eventFor(callbackUrl, environment);

  beforeAll(async () => {
    fixture = await startDeliveryFixture('Callback targets merchant');
    receiver = await startCallbackReceiver();
  });
  afterEach(() => fixture.reset());
  afterAll(async () => {
    await receiver.close();
    await fixture.close();
  });

  it('delivers a test-environment callback to loopback outside production', async () => {
    const eventId = await eventFor('test', receiver.url);
    expect(await step('development')).toMatchObject({ attempted: 1, nextDueAt: null });
    expect(await fixture.jobOf(eventId)).toMatchObject({ status: 'succeeded', attempts: 1, lastError: null });
    expect(receiver.received.map((r) => r.json.id)).toEqual([eventId]);
    expect(await fixture.attemptsOf(eventId)).toEqual([
      { attempt: 1, url: receiver.url, status: 'succeeded', httpStatus: 200, error: null },
    ]);
  });

  it.each([
    ['a live callback to 127.0.0.1', 'live', 'development', (port: number) => `http://127.0.0.1:${port}/cb`],
    [
      'a live callback to a name resolving to loopback',
      'live',
      'development',
      (port: number) => `http://localhost:${port}/cb`,
    ],
    [
      'a live callback to an IPv4-mapped IPv6 address',
      'live',
      'development',
      (port: number) => `http://[::ffff:127.0.0.1]:${port}/cb`,
    ],
    ['a live callback to the metadata address', 'live', 'development', () => 'http://169.254.169.254/latest/meta-data'],
    [
      'a test callback to loopback in production',
      'test',
      'production',
      (port: number) => `http://127.0.0.1:${port}/cb`,
    ],
  ] as const)('refuses %s: recorded, never sent, not retried', async (_name, environment, mode, url) => {
    const port = Number(new URL(receiver.url).port);
    const before = receiver.received.length;
    const eventId = await eventFor(environment, url(port));
    const started = Date.now();
    // Ended at once (`failed`, nothing left pending), not retried for three days.
    expect(await step(mode)).toMatchObject({ attempted: 1, nextDueAt: null });
    expect(Date.now() - started).toBeLessThan(15_000);
    const job = await fixture.jobOf(eventId);
    expect(job).toMatchObject({ status: 'failed', attempts: 1 });
    expect(job.lastError).toMatch(/^refused: .* \((loopback|ipv4_mapped|link_local)\)$/);
    // The attempt GET /events/{id} shows: failed, with why, and no HTTP status (nothing sent).
    expect(await fixture.attemptsOf(eventId)).toEqual([
      { attempt: 1, url: url(port), status: 'failed', httpStatus: null, error: job.lastError },
    ]);
    expect(receiver.received.length).toBe(before);
    // A later step has nothing of it to try.
    expect(await step(mode)).toMatchObject({ attempted: 0, nextDueAt: null });
    expect(await fixture.attemptsOf(eventId)).toHaveLength(1);
  });

  it('never reads the response body: an endless answer does not hold the delivery', async () => {
    const endless = http.createServer((req, res) => {
      req.resume();
      res.writeHead(200, { 'content-type': 'application/octet-stream' });
      const chunk = Buffer.alloc(64 * 1024);
      const pump = () => {
        while (res.write(chunk)) {
          /* keep the pipe full */
        }
      };
      res.on('drain', pump);
      pump();
    });
    await new Promise<void>((resolve) => endless.listen(0, '127.0.0.1', resolve));
    try {
      const port = (endless.address() as AddressInfo).port;
      const eventId = await eventFor('test', `http://127.0.0.1:${port}/cb`);
      const started = Date.now();
      // The production attempt timeout (10 s): reading the body would end there, as a failure or late.
      const answer = await fixture.deliverer({ callbackTimeoutMs: 10_000 }).deliverDueEvents();
      expect(answer).toMatchObject({ attempted: 1, nextDueAt: null });
      expect(Date.now() - started).toBeLessThan(5_000);
      expect(await fixture.jobOf(eventId)).toMatchObject({ status: 'succeeded', attempts: 1, lastError: null });
      expect(await fixture.attemptsOf(eventId)).toEqual([
        expect.objectContaining({ status: 'succeeded', httpStatus: 200, error: null }),
      ]);
    } finally {
      endless.closeAllConnections();
      await new Promise((resolve) => endless.close(resolve));
    }
  });
});
