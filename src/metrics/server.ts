import http from 'node:http';
import { bindAddress } from './address';

export interface MetricsServer {
  close(): Promise<void>;
}

/**
 * `GET /metrics` on a port of its own (never the API's, never behind merchant auth): the text
 * `render` answers. Anything else is 404. A port that cannot be bound is logged and the process
 * goes on without metrics (the scraper's `up` reports it); resolves null then.
 */
export async function startMetricsServer(opts: {
  host: string;
  port: number;
  /** Where a failed render or bind is reported (a line for operators; no secrets in it). */
  report: (message: string) => void;
  render: () => Promise<{ contentType: string; body: string }>;
}): Promise<MetricsServer | null> {
  const server = http.createServer((req, res) => {
    const path = (req.url ?? '').split('?')[0];
    if (req.method !== 'GET' || path !== '/metrics') {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found\n');
      return;
    }
    opts.render().then(
      ({ contentType, body }) => res.writeHead(200, { 'content-type': contentType }).end(body),
      (err: unknown) => {
        opts.report(`metrics: render failed (${err instanceof Error ? err.message : typeof err})`);
        res.writeHead(500, { 'content-type': 'text/plain' }).end('metrics unavailable\n');
      },
    );
  });
  const listening = await new Promise<boolean>((resolve) => {
    server.once('error', (err) => {
      opts.report(
        `metrics endpoint not started on ${bindAddress(opts.host, opts.port)} (${err.message}); running without it`,
      );
      resolve(false);
    });
    server.listen(opts.port, opts.host, () => resolve(true));
  });
  if (!listening) return null;
  // Scrapes must never keep a stopping process alive.
  server.unref();
  return {
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
