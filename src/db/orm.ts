import {
  MikroORM,
  PostgreSqlDriver,
  PostgreSqlKnexDialect,
  type DriverException,
  type EntityManager,
  type Options,
} from '@mikro-orm/postgresql';
import { Migrator } from '@mikro-orm/migrations';
import type { Client as PgClient } from 'pg';
import { isDatabaseUnavailable, markConnectionFailure } from './dbErrors';
import { entities } from './entities';
import { migrationsList } from './migrations';

export type Orm = MikroORM;

export interface OrmOptions {
  databaseUrl: string;
  poolMax?: number;
  debug?: boolean;
}

/**
 * MikroORM's PostgreSQL driver, keeping the driver's error as the `cause` of the DriverException
 * it converts it to: MikroORM copies the fields but drops the object, and with it its type (a
 * knex pool timeout would otherwise be an anonymous DriverException).
 */
class PostgreSqlDriverKeepingCause extends PostgreSqlDriver {
  override convertException(exception: Error): DriverException {
    const converted = super.convertException(exception);
    if (converted !== exception && converted.cause === undefined) converted.cause = exception;
    return converted;
  }
}

/** pg clients whose connection failed or ended: whatever a query on them fails with is that. */
const failedClients = new WeakSet<object>();

/** A pg client's own 'error' event is its connection failing (see dbErrors.ts). */
function watchClient(client: PgClient, done: (err: Error | null, client: PgClient) => void): void {
  client.on('error', (err) => {
    failedClients.add(client);
    markConnectionFailure(err);
  });
  client.on('end', () => failedClients.add(client));
  done(null, client);
}

function markIfClientFailed(client: unknown, err: unknown): void {
  if (typeof client === 'object' && client !== null && failedClients.has(client)) markConnectionFailure(err);
}

type KnexRunner = { connection?: unknown; query(obj: unknown): Promise<unknown> };

/**
 * The knex dialect MikroORM uses, marking the errors of a query sent on a connection that had
 * already failed. pg and knex give those neither type nor code: pg's "not queryable" (a query
 * on a client that lost its connection) and knex's "transaction query already complete" (a
 * query in a transaction whose BEGIN failed that way).
 */
class PostgreSqlDialectMarkingLostConnections extends PostgreSqlKnexDialect {
  query(connection: unknown, obj: unknown): Promise<unknown> {
    return (super.query(connection, obj) as Promise<unknown>).catch((err: unknown) => {
      // A 57P01 answer to BEGIN arrives before the socket closes: the client is failed already.
      if (typeof connection === 'object' && connection !== null && isDatabaseUnavailable(err))
        failedClients.add(connection);
      markIfClientFailed(connection, err);
      throw err;
    });
  }

  runner(builder: unknown): KnexRunner {
    const runner = super.runner(builder) as KnexRunner;
    const query = runner.query.bind(runner);
    runner.query = (obj: unknown) =>
      query(obj).catch((err: unknown) => {
        markIfClientFailed(runner.connection, err);
        throw err;
      });
    return runner;
  }
}

/**
 * Knex prints to console.log unless told otherwise. Its debug output is the SQL with its
 * bindings (values): dropped. Its warnings (pool and connection trouble, deprecations) carry
 * no SQL: kept, on stderr.
 */
const KNEX_LOG = {
  debug: () => undefined,
  warn: (message: unknown) => process.stderr.write(`knex warning: ${String(message)}\n`),
  error: (message: unknown) => process.stderr.write(`knex error: ${String(message)}\n`),
  deprecate: (message: unknown) => process.stderr.write(`knex deprecation: ${String(message)}\n`),
};

export function ormOptions({ databaseUrl, poolMax = 10, debug = false }: OrmOptions): Options {
  return {
    clientUrl: databaseUrl,
    entities,
    extensions: [Migrator],
    // Migrations are listed in code, so the same list works under tsx, jest and compiled JS.
    migrations: { migrationsList, transactional: true, allOrNothing: true, snapshot: false, silent: true },
    driver: PostgreSqlDriverKeepingCause,
    pool: { min: 0, max: poolMax, afterCreate: watchClient },
    // Fail fast when PostgreSQL is unreachable instead of hanging a request.
    driverOptions: {
      client: PostgreSqlDialectMarkingLostConnections,
      connection: { connectionTimeoutMillis: 3000 },
      log: KNEX_LOG,
    },
    discovery: { warnWhenNoEntities: true },
    allowGlobalContext: false,
    debug,
  };
}

export async function openOrm(options: OrmOptions): Promise<Orm> {
  const orm = await MikroORM.init(ormOptions(options));
  watchConnectionFailures(orm);
  return orm;
}

/**
 * Marks every error a new pool connection failed with (refused, timed out, closed during the
 * handshake) so that it is recognised as the database being unavailable (dbErrors.ts).
 */
function watchConnectionFailures(orm: Orm): void {
  orm.em
    .getConnection()
    .getKnex()
    .client.pool?.on('createFail', (_eventId: number, err: unknown) => markConnectionFailure(err));
}

/** A statement PostgreSQL parses once per connection: a named prepared statement (`$1`-style parameters). */
export interface PreparedStatement {
  /** Unique per text across the process: pg keeps one parsed statement per name and connection. */
  name: string;
  text: string;
}

/** The part of knex's client this module uses: its pool of pg clients. */
interface KnexPool {
  acquireConnection(): Promise<PgClient>;
  releaseConnection(client: PgClient): Promise<void>;
}

/**
 * The rows of a prepared statement (a read, or a write's RETURNING), on a connection of the ORM's
 * own pool, without the ORM or knex's query building: for the hottest statements (GET
 * /payments/{id}, a payment's and a refund's reads, a refund's creation), where those took ~15 %
 * of the API's CPU per GET and PostgreSQL parsed and planned the same text every time. The
 * connection is taken and given back as knex does for its own queries (a pool timeout is knex's
 * KnexTimeoutError), and failures are marked as the dialect above marks them, so dbErrors.ts
 * recognises an unavailable database here as on every other path. Needs a session-mode
 * connection (named statements do not survive a transaction-mode pooler), like the API's LISTEN.
 */
export async function preparedRows(
  em: EntityManager,
  statement: PreparedStatement,
  values: unknown[],
): Promise<Record<string, unknown>[]> {
  return poolQuery(em, { name: statement.name, text: statement.text, values });
}

/**
 * The rows of one statement written with knex's `?` placeholders, sent as a parameterised query
 * (unnamed: its text varies) on a connection of the ORM's pool, as preparedRows sends its own:
 * MikroORM's `execute` would inline every value into the text as a literal first, JSON payloads
 * included. For the worker's hot writes (a payment attempt's sent mark and its outcome, a refund's
 * settlement). PostgreSQL types each value from where it stands: one in a select list, or an
 * argument of a function taking anything, needs a cast (`?::jsonb`).
 */
export async function parameterisedRows(
  em: EntityManager,
  sql: string,
  values: unknown[],
): Promise<Record<string, unknown>[]> {
  return poolQuery(em, { text: numberedParameters(sql), values });
}

/**
 * knex's `?` placeholders as PostgreSQL's `$1, $2, ...`, in order. A `?` inside a quoted literal,
 * a quoted identifier or a `--` comment is left alone. (No `??` identifier bindings, and no jsonb
 * `?` operators, in the statements that use it.)
 */
export function numberedParameters(sql: string): string {
  let out = '';
  let n = 0;
  for (let i = 0; i < sql.length; i++) {
    const c = sql[i]!;
    if (c === "'" || c === '"') {
      const end = sql.indexOf(c, i + 1);
      const stop = end === -1 ? sql.length : end + 1;
      out += sql.slice(i, stop);
      i = stop - 1;
    } else if (c === '-' && sql[i + 1] === '-') {
      const end = sql.indexOf('\n', i);
      const stop = end === -1 ? sql.length : end;
      out += sql.slice(i, stop);
      i = stop - 1;
    } else if (c === '?') {
      out += `$${++n}`;
    } else {
      out += c;
    }
  }
  return out;
}

async function poolQuery(
  em: EntityManager,
  query: { name?: string; text: string; values: unknown[] },
): Promise<Record<string, unknown>[]> {
  const pool = em.getConnection().getKnex().client as KnexPool;
  const client = await pool.acquireConnection();
  try {
    const result = await client.query<Record<string, unknown>>(query);
    return result.rows;
  } catch (err) {
    if (isDatabaseUnavailable(err)) failedClients.add(client);
    markIfClientFailed(client, err);
    throw err;
  } finally {
    // Synchronous in knex (it answers a resolved promise): not awaited, one tick less per read.
    void pool.releaseConnection(client);
  }
}

export async function migrate(orm: Orm): Promise<string[]> {
  const done = await orm.getMigrator().up();
  return done.map((m) => m.name);
}
