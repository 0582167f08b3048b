import { lookup as dnsLookup } from 'node:dns/promises';
import http from 'node:http';
import https from 'node:https';
import { isIP, type LookupFunction } from 'node:net';

export interface ResolvedAddress {
  address: string;
  /** 4 or 6. */
  family: number;
}

/**
 * Every address a host name has (the system resolver by default; tests inject their own).
 * `timeoutMs` is the time the caller can wait; a resolver may ignore it (the system one does).
 */
export type ResolveHost = (host: string, opts?: { timeoutMs?: number }) => Promise<ResolvedAddress[]>;

/**
 * getaddrinfo on libuv's thread pool: honours /etc/hosts, but not `timeoutMs` (see
 * src/net/deadlineResolver.ts for one that does).
 */
export const systemResolveHost: ResolveHost = (host) => dnsLookup(host, { all: true, verbatim: true });

/** The host of a URL as a resolver or isIP takes it: IPv6 literals without their brackets. */
export function urlHost(url: URL): string {
  return url.hostname.replace(/^\[|\]$/g, '');
}

/** The addresses of a URL's host: an IP literal is its own, a name is resolved once. */
export async function resolveUrlHost(
  url: URL,
  resolveHost: ResolveHost,
  opts?: { timeoutMs?: number },
): Promise<ResolvedAddress[]> {
  const host = urlHost(url);
  const family = isIP(host);
  return family !== 0 ? [{ address: host, family }] : resolveHost(host, opts);
}

export class PostTimeoutError extends Error {
  override name = 'TimeoutError';
}

/**
 * POSTs to `url` over a connection to exactly `pinned`, the address the caller vetted: the
 * socket's lookup answers that address instead of asking DNS again, so a rebinding resolver
 * cannot swap in another target between the check and the connection. The Host header and the
 * TLS server name stay the URL's host name. Redirects are not followed. The response body is
 * never read: the socket is destroyed as soon as the status line and headers arrived.
 * Answers the HTTP status.
 */
export function postPinned(opts: {
  url: URL;
  pinned: ResolvedAddress;
  headers: Record<string, string>;
  body: string;
  timeoutMs: number;
}): Promise<number> {
  const { url, pinned, headers, body, timeoutMs } = opts;
  const lookup: LookupFunction = (_hostname, options, callback) => {
    // Node asks for every address when it races address families (autoSelectFamily).
    if (options.all) callback(null, [{ address: pinned.address, family: pinned.family }]);
    else callback(null, pinned.address, pinned.family);
  };
  const request = url.protocol === 'https:' ? https.request : http.request;
  return new Promise<number>((resolve, reject) => {
    const req = request(url, {
      method: 'POST',
      headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) },
      lookup,
      // A pooled socket may have been opened to another address: a fresh connection each time.
      agent: false,
    });
    const timer = setTimeout(() => req.destroy(new PostTimeoutError(`no answer within ${timeoutMs} ms`)), timeoutMs);
    req.on('response', (res) => {
      clearTimeout(timer);
      const status = res.statusCode ?? 0;
      res.destroy();
      req.destroy();
      resolve(status);
    });
    req.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    req.end(body);
  });
}
