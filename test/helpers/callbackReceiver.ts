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

/**
 * A merchant's callback endpoint: a real HTTP server on loopback that records every POST and
 * answers with the next scripted status (then `respondWith`'s, 200 unless changed).
 */
export async function startCallbackReceiver(script: number[] = []) {
  const received: ReceivedCallback[] = [];
  const statuses = [...script];
  let otherwise = 200;
  const server = http.createServer((req, res) => {
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
      res.statusCode = statuses.shift() ?? otherwise;
      res.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/callbacks`,
    received,
    /** The status answered once the script has run out (default 200). */
    respondWith: (status: number) => {
      otherwise = status;
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
