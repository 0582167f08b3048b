import net from 'node:net';

/**
 * A TCP proxy in front of a real server, to make that server unreachable on demand
 * (close every connection and refuse new ones) without stopping it for other tests.
 */
export interface TcpProxy {
  port: number;
  cut(): Promise<void>;
  /** After a cut: accepts connections again, on the same port (the server is back). */
  reopen(): Promise<void>;
  close(): Promise<void>;
}

export async function startTcpProxy(targetHost: string, targetPort: number): Promise<TcpProxy> {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect(targetPort, targetHost);
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
      s.on('error', () => s.destroy());
    }
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as net.AddressInfo).port;
  const cut = async () => {
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    for (const s of sockets) s.destroy();
    await closed;
  };
  const reopen = () => new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return { port, cut, reopen, close: async () => (server.listening ? cut() : undefined) };
}
