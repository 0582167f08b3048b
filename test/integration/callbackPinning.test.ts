import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { startDeliveryFixture } from '../helpers/merchantEventDelivery';
import type { KeyEnvironment } from '../../src/db/entities';
import type { ResolvedAddress, ResolveHost } from '../../src/net/pinnedPost';

/**
 * PRODUCT.md, "Production profile": a callback goes to the address that was checked. A
 * rebinding DNS answers a public address to the check and loopback to whoever asks next; the
 * delivery must connect to the first answer, never ask again. The resolver is injected (no DNS
 * server here); the HTTP servers, the database rows and the delivery step are the real ones.
 */
describe('callback delivery is pinned to the address it checked (DNS rebinding)', () => {
  let fixture: Awaited<ReturnType<typeof startDeliveryFixture>>;

  /** A merchant endpoint on one loopback address that records the Host header of each request. */
  async function startEndpoint(address: string, port = 0) {
    const hosts: string[] = [];
    const server = http.createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        hosts.push(req.headers.host ?? '');
        res.statusCode = 200;
        res.end();
      });
    });
    await new Promise<void>((resolve) => server.listen(port, address, resolve));
    return {
      port: (server.address() as AddressInfo).port,
      hosts,
      close: () => new Promise<void>((resolve) => server.close(() => resolve())),
    };
  }

  /** Answers `answers[0]` to the first question, `answers[1]` to every later one; counts them. */
  function rebindingResolver(...answers: ResolvedAddress[][]): ResolveHost & { asked: string[] } {
    const asked: string[] = [];
    const resolve = async (host: string) => {
      asked.push(host);
      return answers[Math.min(asked.length - 1, answers.length - 1)]!;
    };
    return Object.assign(resolve, { asked });
  }

  const eventFor = (environment: KeyEnvironment, callbackUrl: string) => fixture.eventFor(callbackUrl, environment);
  const deliverer = (resolveHost: ResolveHost, privateTestCallbacks: boolean) =>
    fixture.deliverer({ resolveHost, privateTestCallbacks });

  beforeAll(async () => {
    fixture = await startDeliveryFixture('Callback pinning merchant');
  });
  afterEach(() => fixture.reset());
  afterAll(() => fixture.close());

  it('never sends a live callback to the loopback address a rebinding resolver answers second', async () => {
    const loopback = await startEndpoint('127.0.0.1');
    try {
      // 203.0.113.0/24 (TEST-NET-3) is public to the check and routes nowhere.
      const resolver = rebindingResolver(
        [{ address: '203.0.113.7', family: 4 }],
        [{ address: '127.0.0.1', family: 4 }],
      );
      const eventId = await eventFor('live', `http://rebind.merchant.example:${loopback.port}/cb`);
      expect(await deliverer(resolver, false).deliverDueEvents()).toMatchObject({ attempted: 1 });
      // Failed (nothing answers at the vetted address), to be retried: never sent elsewhere.
      const job = await fixture.jobOf(eventId);
      expect(job).toMatchObject({ status: 'pending', attempts: 1 });
      expect(job.lastError).toMatch(/^(timeout|network error: .*203\.0\.113\.7)/);
      expect(await fixture.attemptsOf(eventId)).toEqual([
        expect.objectContaining({ attempt: 1, status: 'failed', httpStatus: null, error: job.lastError }),
      ]);
      expect(loopback.hosts).toEqual([]);
      expect(resolver.asked).toEqual(['rebind.merchant.example']);
    } finally {
      await loopback.close();
    }
  });

  it('connects to the first answer, keeping the host name in the Host header', async () => {
    const vetted = await startEndpoint('127.0.0.1');
    const other = await startEndpoint('127.0.0.2', vetted.port);
    try {
      const resolver = rebindingResolver([{ address: '127.0.0.1', family: 4 }], [{ address: '127.0.0.2', family: 4 }]);
      const eventId = await eventFor('test', `http://callbacks.merchant.example:${vetted.port}/cb`);
      expect(await deliverer(resolver, true).deliverDueEvents()).toMatchObject({ attempted: 1, nextDueAt: null });
      expect(await fixture.jobOf(eventId)).toMatchObject({ status: 'succeeded', attempts: 1, lastError: null });
      expect(await fixture.attemptsOf(eventId)).toEqual([
        expect.objectContaining({ attempt: 1, status: 'succeeded', httpStatus: 200, error: null }),
      ]);
      expect(vetted.hosts).toEqual([`callbacks.merchant.example:${vetted.port}`]);
      expect(other.hosts).toEqual([]);
      expect(resolver.asked).toHaveLength(1);
    } finally {
      await other.close();
      await vetted.close();
    }
  });
});
