import { ConnectionException, DriverException, knex } from '@mikro-orm/postgresql';
import { DatabaseError } from 'pg';

/**
 * SQLSTATEs of a server that cannot serve now but will: admin shutdown (57P01, a terminated
 * backend or a fast shutdown), crash shutdown (57P02), cannot connect now (57P03: starting up,
 * shutting down, in recovery).
 */
const UNAVAILABLE_SQLSTATES = new Set(['57P01', '57P02', '57P03']);
/** Whole SQLSTATE classes: 08 connection exception, 53 insufficient resources (53300 too many connections). */
const UNAVAILABLE_SQLSTATE_CLASSES = new Set(['08', '53']);
/** Node system error codes of a socket that could not be opened or was lost. */
const SOCKET_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
]);

/**
 * Errors the PostgreSQL driver reported as a failed or lost connection but gave neither a type
 * nor a code: pg's "Connection terminated unexpectedly" and its connect timeout are bare
 * `Error`s. They are recognised by where they came from, never by their text: the pool marks
 * every error a connection attempt failed with, and every error a pg client emitted as its
 * connection failing (see `watchConnectionFailures` in orm.ts). pg's "not queryable" error for a
 * query sent on a client that already failed is neither, and stays unrecognised (a 500): it
 * needs a connection held across the failure, which only an open transaction does.
 */
const connectionFailures = new WeakSet<object>();

export function markConnectionFailure(err: unknown): void {
  if (typeof err === 'object' && err !== null) connectionFailures.add(err);
}

/** What may be logged about the failure: its class and code, never its message (knex puts the SQL and its parameters there). */
export interface DatabaseUnavailability {
  errorClass: string;
  code?: string;
}

function codeOf(err: object): string | undefined {
  const code = (err as { code?: unknown }).code;
  return typeof code === 'string' ? code : undefined;
}

function isUnavailableSqlState(code: string | undefined): boolean {
  return code !== undefined && (UNAVAILABLE_SQLSTATES.has(code) || UNAVAILABLE_SQLSTATE_CLASSES.has(code.slice(0, 2)));
}

function classify(err: object): boolean {
  if (connectionFailures.has(err)) return true;
  // Knex's pool gave up waiting for a connection (acquireConnectionTimeout).
  if (err instanceof knex.KnexTimeoutError) return true;
  if (err instanceof ConnectionException) return true;
  const code = codeOf(err);
  // A server error (pg's DatabaseError, or MikroORM's DriverException, which copies its fields).
  if ((err instanceof DatabaseError || err instanceof DriverException) && isUnavailableSqlState(code)) return true;
  // A socket error the driver passed on, wrapped by MikroORM (raw ones are marked by the pool).
  return err instanceof DriverException && code !== undefined && SOCKET_CODES.has(code);
}

/** The errors behind `err`: its `cause` chain and an AggregateError's `errors`, bounded. */
function* chain(err: unknown): Generator<object> {
  const seen = new Set<object>();
  const queue: unknown[] = [err];
  while (queue.length > 0 && seen.size < 16) {
    const next = queue.shift();
    if (typeof next !== 'object' || next === null || seen.has(next)) continue;
    seen.add(next);
    yield next;
    queue.push((next as { cause?: unknown }).cause);
    if (next instanceof AggregateError) queue.push(...(next.errors as unknown[]));
  }
}

/**
 * Is `err` PostgreSQL being unreachable, restarting or out of connections (a dependency outage,
 * answered 503), rather than a fault of ours? Recognised by type and code only; returns what
 * may be logged about it.
 */
export function databaseUnavailability(err: unknown): DatabaseUnavailability | undefined {
  for (const link of chain(err)) {
    if (classify(link)) return { errorClass: link.constructor.name, code: codeOf(link) };
  }
  return undefined;
}

export function isDatabaseUnavailable(err: unknown): boolean {
  return databaseUnavailability(err) !== undefined;
}
