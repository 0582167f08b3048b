import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

/**
 * Merchant webhook endpoints run by a chaos run (and `npm run bench:isolation`), on loopback: one
 * that accepts every request and never answers (issue 43's hanging endpoint), and one that answers
 * 200 at once. Each keeps what it saw, for the delivery-isolation check (invariants.ts).
 */

/** A span of time (epoch ms) during which the hanging endpoint held at least one request open. */
export interface HeldSpan {
  from: number;
  to: number | null;
}

/**
 * Accepts every connection and request, never answers. Counts the requests it holds now, the most
 * it held at once, all it got, and the spans during which it held any.
 */
export async function startHangingEndpoint() {
  const sockets = new Set<Socket>();
  const state = { open: 0, maxOpen: 0, total: 0 };
  const held: HeldSpan[] = [];
  const server = http.createServer((req) => {
    if (state.open === 0) held.push({ from: Date.now(), to: null });
    state.open++;
    state.total++;
    state.maxOpen = Math.max(state.maxOpen, state.open);
    req.resume();
    req.socket.once('close', () => {
      state.open--;
      if (state.open === 0) held[held.length - 1]!.to = Date.now();
    });
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hangs`,
    state,
    held,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

/** One delivery the answering endpoint received: its path, event id, and when (epoch ms and monotonic ms). */
export interface Received {
  path: string;
  eventId: string;
  /** The id of the event's object (a payment's events: the payment id). */
  objectId: string;
  /** The event's `createdAt` (epoch ms), from the body. */
  createdAt: number;
  at: number;
  atMonotonic: number;
}

/** Answers 200 to every POST at once; records each delivery. */
export async function startAnsweringEndpoint() {
  const received: Received[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const atMonotonic = performance.now();
      let body: { id?: unknown; objectId?: unknown; createdAt?: unknown } = {};
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as typeof body;
      } catch {
        // counted all the same
      }
      received.push({
        path: req.url ?? '',
        eventId: String(req.headers['x-event-id'] ?? body.id ?? ''),
        objectId: String(body.objectId ?? ''),
        createdAt: typeof body.createdAt === 'string' ? Date.parse(body.createdAt) : NaN,
        at: Date.now(),
        atMonotonic,
      });
      res.statusCode = 200;
      res.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    base: `http://127.0.0.1:${port}`,
    received,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
