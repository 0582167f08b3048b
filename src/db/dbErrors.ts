import { ConnectionException, DriverException } from '@mikro-orm/postgresql';
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
 * nor a code: pg's "Connection terminated unexpectedly", its connect timeout and its "not
 * queryable" (a query on a client that already failed) are bare `Error`s. They are recognised by
 * where they came from, never by their text: the ORM's pg client marks every error a connection
 * attempt failed with, every error it emitted as its connection failing, and every error of a
 * query sent on it after that (ClientMarkingConnectionFailures in orm.ts).
 */
const connectionFailures = new WeakSet<object>();
/** The pool gave up waiting for a free connection (pg-pool's error is a bare `Error` too): marked by orm.ts. */
const poolWaitFailures = new WeakSet<object>();

export function markConnectionFailure(err: unknown): void {
  if (typeof err === 'object' && err !== null) connectionFailures.add(err);
}

export function markPoolWaitFailure(err: unknown): void {
  if (typeof err === 'object' && err !== null) poolWaitFailures.add(err);
}

/** Was `err`, or an error behind it, marked as a failed or lost connection? */
export function isConnectionFailure(err: unknown): boolean {
  for (const link of chain(err)) if (connectionFailures.has(link)) return true;
  return false;
}

/** What may be logged about the failure: its class and code, never its message (MikroORM puts the SQL and its parameters there). */
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
  // The pool gave up waiting for a free connection: the database is saturated (a 503 too).
  if (poolWaitFailures.has(err)) return true;
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

/** PostgreSQL's SQLSTATE classes (the first two characters of a code), by the manual's names. */
const SQLSTATE_CLASSES: Record<string, string> = {
  '00': 'successful_completion',
  '01': 'warning',
  '02': 'no_data',
  '03': 'sql_statement_not_yet_complete',
  '08': 'connection_exception',
  '09': 'triggered_action_exception',
  '0A': 'feature_not_supported',
  '0B': 'invalid_transaction_initiation',
  '0F': 'locator_exception',
  '0L': 'invalid_grantor',
  '0P': 'invalid_role_specification',
  '0Z': 'diagnostics_exception',
  '20': 'case_not_found',
  '21': 'cardinality_violation',
  '22': 'data_exception',
  '23': 'integrity_constraint_violation',
  '24': 'invalid_cursor_state',
  '25': 'invalid_transaction_state',
  '26': 'invalid_sql_statement_name',
  '27': 'triggered_data_change_violation',
  '28': 'invalid_authorization_specification',
  '2B': 'dependent_privilege_descriptors_still_exist',
  '2D': 'invalid_transaction_termination',
  '2F': 'sql_routine_exception',
  '34': 'invalid_cursor_name',
  '38': 'external_routine_exception',
  '39': 'external_routine_invocation_exception',
  '3B': 'savepoint_exception',
  '3D': 'invalid_catalog_name',
  '3F': 'invalid_schema_name',
  '40': 'transaction_rollback',
  '42': 'syntax_error_or_access_rule_violation',
  '44': 'with_check_option_violation',
  '53': 'insufficient_resources',
  '54': 'program_limit_exceeded',
  '55': 'object_not_in_prerequisite_state',
  '57': 'operator_intervention',
  '58': 'system_error',
  '72': 'snapshot_failure',
  F0: 'config_file_error',
  HV: 'fdw_error',
  P0: 'plpgsql_error',
  XX: 'internal_error',
};

const SQLSTATE = /^[0-9A-Z]{5}$/;

/**
 * What may be logged about a database error: the SQLSTATE class and code, and the names of the
 * constraint and table involved. Never its message, `sql`, `parameters`, `detail`, `where` or
 * `hint`: MikroORM writes the SQL and its values into the message, and PostgreSQL's detail quotes
 * the values (`Key (email)=(x@y.z) already exists`).
 */
export interface DatabaseErrorSummary {
  /** The SQLSTATE class name, or how the connection failed when there is no SQLSTATE. */
  class: string;
  /** The SQLSTATE, or the socket error code. */
  code?: string;
  constraint?: string;
  table?: string;
  /** The error's type (e.g. UniqueConstraintViolationException), for searching logs. */
  errorType: string;
}

function isDatabaseError(err: object): boolean {
  return (
    err instanceof DatabaseError ||
    err instanceof DriverException ||
    poolWaitFailures.has(err) ||
    connectionFailures.has(err)
  );
}

function stringField(err: object, name: string): string | undefined {
  const value = (err as Record<string, unknown>)[name];
  return typeof value === 'string' && value !== '' ? value : undefined;
}

function summarise(err: object): DatabaseErrorSummary {
  const code = codeOf(err);
  const summary: DatabaseErrorSummary = {
    class:
      code !== undefined && SQLSTATE.test(code)
        ? (SQLSTATE_CLASSES[code.slice(0, 2)] ?? `class_${code.slice(0, 2)}`)
        : poolWaitFailures.has(err)
          ? 'pool_timeout'
          : 'connection_failure',
    errorType: err.constructor.name,
  };
  if (code !== undefined) summary.code = code;
  const constraint = stringField(err, 'constraint');
  if (constraint !== undefined) summary.constraint = constraint;
  const table = stringField(err, 'table');
  if (table !== undefined) summary.table = table;
  return summary;
}

/**
 * The loggable summary of `err` when it is, or was caused by, a database error (undefined
 * otherwise). The error that carries a code is preferred: MikroORM's wrapper copies the
 * driver's fields, the pool's timeout has none.
 */
export function databaseErrorSummary(err: unknown): DatabaseErrorSummary | undefined {
  let found: object | undefined;
  for (const link of chain(err)) {
    if (!isDatabaseError(link)) continue;
    if (codeOf(link) !== undefined) return summarise(link);
    found ??= link;
  }
  return found === undefined ? undefined : summarise(found);
}

/** One line for a person (CLI, start-up failures): the summary, never the message. */
export function describeDatabaseError(summary: DatabaseErrorSummary): string {
  const parts = [`database error ${summary.class}`];
  if (summary.code !== undefined) parts.push(`(${summary.code})`);
  if (summary.constraint !== undefined) parts.push(`constraint ${summary.constraint}`);
  if (summary.table !== undefined) parts.push(`table ${summary.table}`);
  return parts.join(' ');
}

/** An error as text for a person: a database error by its summary, any other by `render`. */
export function errorText(err: unknown, render: (err: Error) => string = (e) => e.message): string {
  const summary = databaseErrorSummary(err);
  if (summary) return describeDatabaseError(summary);
  return err instanceof Error ? render(err) : String(err);
}
