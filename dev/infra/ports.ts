import net from 'node:net';

/** A TCP port on the loopback interface that is free right now (for servers started by tests and tools). */
export async function freeLoopbackPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

/** Whether a TCP port on the loopback interface can be bound right now. */
export function loopbackPortIsFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.unref();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/** The first of `count` consecutive loopback ports that are all free right now. */
export async function freeLoopbackPortRange(count: number): Promise<number> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const base = await freeLoopbackPort();
    if (base + count - 1 > 65535) continue;
    const rest = await Promise.all(Array.from({ length: count - 1 }, (_, i) => loopbackPortIsFree(base + i + 1)));
    if (rest.every(Boolean)) return base;
  }
  throw new Error(`no ${count} consecutive free ports`);
}
