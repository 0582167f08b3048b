import { Resolver } from 'node:dns/promises';
import { isIP } from 'node:net';
import type { ResolvedAddress, ResolveHost } from './pinnedPost';

/**
 * A host resolver that gives up by a deadline (issue 43: a delivery attempt is bounded to 10 s
 * including name resolution). `dns.lookup` runs getaddrinfo on libuv's thread pool (4 threads):
 * a few names whose DNS never answers hold every thread, so every other lookup, file read and
 * TLS key derivation in the process waits behind them, and no timeout of ours reaches the wait.
 * This one asks the DNS servers itself through c-ares (`Resolver`, sockets on the event loop):
 * a hanging server costs one pending query, and `cancel()` ends it.
 *
 * Differences from `dns.lookup` (the system resolver): /etc/hosts, nsswitch and search domains
 * are not consulted; `localhost` and `*.localhost` (RFC 6761) answer loopback here instead.
 */

/** A deadline-bound attempt's default budget for resolution, as the callback timeout. */
export const DEFAULT_RESOLVE_TIMEOUT_MS = 10_000;

/**
 * Once one family answered, how long the other may still take. A server that drops AAAA
 * queries (they exist) would otherwise spend the attempt's whole budget on an answer the
 * connection does not need: the caller connects to the first address, IPv4 first.
 */
export const DEFAULT_FAMILY_GRACE_MS = 1_000;

const TRIES = 3;

/**
 * The addresses a host answers without asking DNS: an IP literal is its own, `localhost` and
 * its subdomains are loopback (RFC 6761; c-ares does not read /etc/hosts). Otherwise undefined.
 */
export function addressesWithoutDns(host: string): ResolvedAddress[] | undefined {
  const family = isIP(host);
  if (family !== 0) return [{ address: host, family }];
  const name = host.toLowerCase().replace(/\.$/, '');
  if (name === 'localhost' || name.endsWith('.localhost')) {
    return [
      { address: '127.0.0.1', family: 4 },
      { address: '::1', family: 6 },
    ];
  }
  return undefined;
}

/** An error shaped like node:dns's own, so callers read `code` the same way. */
function dnsError(code: string, host: string, detail: string): NodeJS.ErrnoException {
  return Object.assign(new Error(`resolve ${code} ${host} (${detail})`), { code, syscall: 'resolve', hostname: host });
}

/**
 * When both families failed, the more telling error: ENODATA only says "no record of this
 * family", so the other family's error (ENOTFOUND, ETIMEOUT, ...) wins over it.
 */
function bothFailed(v4: NodeJS.ErrnoException, v6: NodeJS.ErrnoException): NodeJS.ErrnoException {
  return v4.code === 'ENODATA' ? v6 : v4;
}

type Answer = ResolvedAddress[] | NodeJS.ErrnoException;

export function createDeadlineResolver(opts: { servers?: string[]; familyGraceMs?: number } = {}): ResolveHost {
  const familyGraceMs = opts.familyGraceMs ?? DEFAULT_FAMILY_GRACE_MS;
  return async (host, { timeoutMs = DEFAULT_RESOLVE_TIMEOUT_MS } = {}) => {
    const known = addressesWithoutDns(host);
    if (known) return known;
    // A Resolver per call: cancel() ends every query of its resolver, so only this call's.
    // c-ares' own tries share the budget (it backs off and jitters, hence the timer too).
    const perTry = Math.max(1, Math.ceil(timeoutMs / TRIES));
    const resolver = new Resolver({ timeout: perTry, maxTimeout: perTry, tries: TRIES });
    if (opts.servers) resolver.setServers(opts.servers);

    return new Promise<ResolvedAddress[]>((resolve, reject) => {
      const answers: [Answer | undefined, Answer | undefined] = [undefined, undefined];
      let grace: NodeJS.Timeout | undefined;
      let settled = false;
      const finish = (timedOut: boolean) => {
        if (settled) return;
        settled = true;
        clearTimeout(deadline);
        clearTimeout(grace);
        resolver.cancel(); // a query still pending ends now (ECANCELLED, ignored below)
        const [v4, v6] = answers;
        if (Array.isArray(v4) || Array.isArray(v6)) {
          resolve([...(Array.isArray(v4) ? v4 : []), ...(Array.isArray(v6) ? v6 : [])]);
        } else if (timedOut || !v4 || !v6) {
          reject(dnsError('ETIMEOUT', host, `no answer within ${timeoutMs} ms`));
        } else {
          reject(bothFailed(v4, v6));
        }
      };
      const deadline = setTimeout(() => finish(true), timeoutMs);
      const answered = (index: 0 | 1, answer: Answer) => {
        if (settled) return;
        answers[index] = answer;
        if (answers[0] && answers[1]) finish(false);
        else if (Array.isArray(answer)) grace = setTimeout(() => finish(false), familyGraceMs);
      };
      const of = (family: 4 | 6) => (list: string[]) => list.map((address) => ({ address, family }));
      resolver.resolve4(host).then(
        (list) => answered(0, of(4)(list)),
        (err: NodeJS.ErrnoException) => answered(0, err),
      );
      resolver.resolve6(host).then(
        (list) => answered(1, of(6)(list)),
        (err: NodeJS.ErrnoException) => answered(1, err),
      );
    });
  };
}
