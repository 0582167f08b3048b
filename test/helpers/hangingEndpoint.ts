import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

/**
 * A merchant endpoint that accepts every connection and request and never answers: what issue 43
 * calls a hanging endpoint. Counts the requests it holds now, the most it held at once, and all.
 */
export async function startHangingEndpoint() {
  const sockets = new Set<Socket>();
  let open = 0;
  let maxOpen = 0;
  let total = 0;
  const server = http.createServer((req) => {
    open++;
    total++;
    maxOpen = Math.max(maxOpen, open);
    req.resume();
    req.socket.once('close', () => open--);
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hangs`,
    get open() {
      return open;
    },
    get maxOpen() {
      return maxOpen;
    },
    get total() {
      return total;
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
