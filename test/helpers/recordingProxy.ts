import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface RecordedRequest {
  method: string;
  path: string;
  headers: http.IncomingHttpHeaders;
  /** The form-encoded body, decoded (`metadata[paymentId]` -> value). */
  form: Record<string, string>;
  status: number;
}

/**
 * An HTTP proxy in front of a real server (stripe-mock) that keeps every request and the status
 * it was answered with: what the adapter really sent, for assertions on idempotency keys and
 * metadata. Nothing is changed on the way, except the bearer keys listed in `keys` (a live key
 * the product must be configured with, to the test key stripe-mock takes: stripe-mock refuses
 * live keys, as Stripe itself refuses a revoked one). The recorded headers are what was sent.
 */
export async function startRecordingProxy(target: string, keys: Record<string, string> = {}) {
  const requests: RecordedRequest[] = [];
  /** Requests matching one of these are forwarded (performed) but never answered: a lost answer. */
  const swallow: Array<(req: { method: string; path: string }) => boolean> = [];
  /** Requests matching one of these are not forwarded: answered with the given status and JSON body. */
  const canned: Array<{ match: (req: { method: string; path: string }) => boolean; status: number; body: unknown }> =
    [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const answer = canned.findIndex((c) => c.match({ method: req.method ?? '', path: req.url ?? '' }));
      if (answer >= 0) {
        const [{ status, body: json }] = canned.splice(answer, 1) as [(typeof canned)[number]];
        requests.push({
          method: req.method ?? '',
          path: req.url ?? '',
          headers: req.headers,
          form: Object.fromEntries(new URLSearchParams(body.toString())),
          status,
        });
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(JSON.stringify(json));
        return;
      }
      const headers = Object.fromEntries(
        Object.entries(req.headers).filter(([k]) => !['host', 'connection', 'content-length'].includes(k)),
      ) as Record<string, string>;
      const bearer = /^Bearer (.+)$/.exec(headers.authorization ?? '')?.[1];
      if (bearer && keys[bearer]) headers.authorization = `Bearer ${keys[bearer]}`;
      fetch(`${target}${req.url}`, {
        method: req.method,
        headers,
        body: body.length > 0 ? body : undefined,
      }).then(
        async (answer) => {
          const text = await answer.text();
          requests.push({
            method: req.method ?? '',
            path: req.url ?? '',
            headers: req.headers,
            form: Object.fromEntries(new URLSearchParams(body.toString())),
            status: answer.status,
          });
          const lost = swallow.findIndex((f) => f({ method: req.method ?? '', path: req.url ?? '' }));
          if (lost >= 0) {
            swallow.splice(lost, 1);
            return; // the caller times out; the socket closes with the server
          }
          res.writeHead(answer.status, { 'content-type': answer.headers.get('content-type') ?? 'application/json' });
          res.end(text);
        },
        () => {
          res.writeHead(502);
          res.end();
        },
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    /** The next request matching `match` is performed but its answer is lost. */
    loseNextAnswer: (match: (req: { method: string; path: string }) => boolean) => swallow.push(match),
    /** The next request matching `match` is not performed: answered `status` with `body` (JSON). */
    answerNext: (match: (req: { method: string; path: string }) => boolean, status: number, body: unknown) =>
      canned.push({ match, status, body }),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
