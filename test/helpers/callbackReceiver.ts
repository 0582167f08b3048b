import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ReceivedCallback {
  body: string;
  json: {
    id: string;
    type: string;
    createdAt: string;
    environment: 'test' | 'live';
    objectId: string;
    sequence: number;
    data: Record<string, unknown>;
  };
  signature: string | undefined;
  /** `X-Event-Id`. */
  eventId: string | undefined;
  receivedAt: number;
}

export interface CallbackReceiverOptions {
  /** How long it holds each request before it answers (default: answers at once). */
  delayMs?: number;
  /** The loopback address it listens on (default 127.0.0.1; 127.0.0.2 is another host). */
  host?: string;
}

/**
 * A merchant's callback endpoint: a real HTTP server on loopback that records every POST and
 * answers with the next scripted status (then `respondWith`'s, 200 unless changed), after
 * `delayMs`. It counts the requests it holds at once (`maxInFlight`).
 */
export async function startCallbackReceiver(script: number[] = [], opts: CallbackReceiverOptions = {}) {
  const received: ReceivedCallback[] = [];
  const statuses = [...script];
  let otherwise = 200;
  const load = { inFlight: 0, maxInFlight: 0 };
  const server = http.createServer((req, res) => {
    load.inFlight++;
    load.maxInFlight = Math.max(load.maxInFlight, load.inFlight);
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      received.push({
        body,
        json: JSON.parse(body) as ReceivedCallback['json'],
        signature: req.headers['x-signature'] as string | undefined,
        eventId: req.headers['x-event-id'] as string | undefined,
        receivedAt: Date.now(),
      });
      const answer = () => {
        load.inFlight--;
        res.statusCode = statuses.shift() ?? otherwise;
        res.end();
      };
      if (opts.delayMs) setTimeout(answer, opts.delayMs);
      else answer();
    });
  });
  const host = opts.host ?? '127.0.0.1';
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://${host}:${port}/callbacks`,
    received,
    /** The status answered once the script has run out (default 200). */
    respondWith: (status: number) => {
      otherwise = status;
    },
    /** The most requests it held at once so far. */
    get maxInFlight() {
      return load.maxInFlight;
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
