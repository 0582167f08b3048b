import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createTestMerchant, startPaymentStack, type PaymentStack, type TestMerchant } from '../helpers/stack';
import { call, eventually } from '../helpers/http';
import { startCallbackReceiver } from '../helpers/callbackReceiver';

interface Delivery {
  endpointId: string | null;
  url: string;
  attempt: number;
  status: string;
  httpStatus: number | null;
  error: string | null;
  durationMs: number | null;
}

/**
 * Issue 43, "Bad input and faults": an endpoint that redirects, or speaks plain HTTP on an https
 * URL (a TLS error), is a recorded failed attempt, retried; never a 500, never a stalled worker.
 * (Hanging endpoints: deliveryIsolation.test.ts; endless answers and private addresses:
 * callbackTargets.test.ts; unknown filters and production URL rules: webhookEndpoints.test.ts.)
 */
describe('deliveries to endpoints that misbehave', () => {
  let stack: PaymentStack;
  let merchant: TestMerchant;
  const servers: http.Server[] = [];
  const listen = async (handler: http.RequestListener): Promise<number> => {
    const server = http.createServer(handler);
    servers.push(server);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return (server.address() as AddressInfo).port;
  };
  const api = <T = Record<string, unknown>>(method: string, path: string, body?: unknown) =>
    call<T>(stack.api.baseUrl, method, path, merchant.auth, body);

  beforeAll(async () => {
    stack = await startPaymentStack('delivery-faults');
    merchant = await createTestMerchant(stack.orm, 'Misbehaving endpoints merchant');
  });
  afterAll(async () => {
    for (const s of servers) {
      s.closeAllConnections();
      await new Promise((r) => s.close(r));
    }
    await stack.close();
  });

  /** A payment's payment.succeeded event, delivered (or not) to the one endpoint at `url`. */
  const deliveriesTo = async (url: string, attempts: number) => {
    const created = await api<{ id: string }>('POST', '/webhook-endpoints', {
      url,
      enabledEvents: ['payment.succeeded'],
    });
    expect(created.status).toBe(200);
    const payment = await api<{ id: string; status: string }>('POST', '/payments', {
      amount: 5,
      currency: 'USD',
      externalId: `faults-${Date.now()}-${Math.random()}`,
      customer: { email: 'c@example.com' },
      cardToken: 'tok_success',
    });
    expect(payment.body.status).toBe('succeeded');
    const events = await api<{ events: Array<{ id: string; type: string }> }>(
      'GET',
      `/events?objectId=${payment.body.id}&type=payment.succeeded`,
    );
    const eventId = events.body.events[0]!.id;
    const shown = await eventually(
      async () => {
        const res = await api<{ deliveries: Delivery[] }>('GET', `/events/${eventId}`);
        expect(res.status).toBe(200);
        return res.body.deliveries.filter((d) => d.endpointId === created.body.id && d.status !== 'pending');
      },
      (ds) => ds.length >= attempts,
      20_000,
    );
    return shown;
  };

  it('a redirect is a failed attempt (HTTP 302), not followed, retried', async () => {
    const target = await startCallbackReceiver();
    try {
      const port = await listen((req, res) => {
        req.resume();
        res.writeHead(302, { location: target.url }).end();
      });
      const attempts = await deliveriesTo(`http://127.0.0.1:${port}/hooks`, 2);
      expect(attempts.slice(0, 2)).toEqual([
        expect.objectContaining({ attempt: 1, status: 'failed', httpStatus: 302, error: 'HTTP 302' }),
        expect.objectContaining({ attempt: 2, status: 'failed', httpStatus: 302, error: 'HTTP 302' }),
      ]);
      expect(target.received).toEqual([]);
    } finally {
      await target.close();
    }
  });

  it('a TLS error (plain HTTP behind an https URL) is a failed attempt with a network error, retried', async () => {
    const port = await listen((req, res) => {
      req.resume();
      res.end('plain');
    });
    const attempts = await deliveriesTo(`https://127.0.0.1:${port}/hooks`, 2);
    for (const a of attempts.slice(0, 2)) {
      expect(a).toMatchObject({ status: 'failed', httpStatus: null });
      expect(a.error).toMatch(/^network error: /);
      expect(a.durationMs).toBeLessThan(10_000);
    }
  });
});
