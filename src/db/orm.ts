import {
  MikroORM,
  PostgreSqlDriver,
  type DriverException,
  type EntityManager,
  type Options,
} from '@mikro-orm/postgresql';
import { Migrator } from '@mikro-orm/migrations';
import { Client, type ClientConfig, type Pool } from 'pg';
import { isConnectionFailure, isDatabaseUnavailable, markConnectionFailure, markPoolWaitFailure } from './dbErrors';
import { entities } from './entities';
import { migrationsList } from './migrations';

export type Orm = MikroORM;

export interface OrmOptions {
  databaseUrl: string;
  poolMax?: number;
  debug?: boolean;
}

/** A new connection that PostgreSQL has not accepted within this has failed: fail fast when it is unreachable. */
const CONNECT_TIMEOUT_MS = 3000;
/**
 * How long a caller waits for a pooled connection while all are busy: what knex's pool waited
 * under MikroORM 6. pg-pool applies its one `connectionTimeoutMillis` to both waits, so the
 * connect wait is set on the client instead (decision 0054).
 */
const POOL_WAIT_MS = 60_000;

/**
 * MikroORM's PostgreSQL driver, keeping the driver's error as the `cause` of the DriverException
 * it converts it to: MikroORM copies the fields but drops the object, and with it its marks
 * (dbErrors.ts recognises pg's untyped connection errors by where they came from).
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

type Callback = (err: Error | null) => void;
const isPromise = (value: unknown): value is Promise<unknown> =>
  typeof (value as { then?: unknown } | null)?.then === 'function';

/**
 * The pg client the ORM's pool connects with. pg gives its connection failures neither type nor
 * code ("Connection terminated unexpectedly", its connect timeout, "not queryable" for a query
 * on a client that already failed), so they are marked by where they come from: every error a
 * connection attempt fails with, every error the client emits as its connection failing, and
 * every error of a query on a client that has failed. A 57P01 answer arrives before the socket
 * closes: the client has failed already.
 */
class ClientMarkingConnectionFailures extends Client {
  constructor(config: ClientConfig) {
    // pg-pool hides the password from spreading (not enumerable): it is carried over by name.
    super({ ...config, password: config.password, connectionTimeoutMillis: CONNECT_TIMEOUT_MS });
    this.on('error', (err) => {
      failedClients.add(this);
      markConnectionFailure(err);
    });
    this.on('end', () => failedClients.add(this));
    const connect = this.connect.bind(this) as (callback?: Callback) => Promise<void> | void;
    this.connect = ((callback?: Callback) => {
      if (callback)
        return connect((err) => {
          if (err) markConnectionFailure(err);
          callback(err);
        });
      return (connect() as Promise<void>).catch((err: unknown) => {
        markConnectionFailure(err);
        throw err;
      });
    }) as Client['connect'];
    const query = this.query.bind(this) as (...args: unknown[]) => unknown;
    this.query = ((...args: unknown[]) => {
      const result = query(...args);
      if (!isPromise(result)) return result; // a callback or a cursor: not used here
      return result.catch((err: unknown) => {
        if (isDatabaseUnavailable(err)) failedClients.add(this);
        if (failedClients.has(this)) markConnectionFailure(err);
        throw err;
      });
    }) as Client['query'];
  }
}

/**
 * Marks what the pool's `connect()` fails with when it is not a connection failure: the pool
 * gave up waiting for a free connection (pg-pool's error has no type either).
 */
function watchPool(pool: Pool): void {
  const connect = pool.connect.bind(pool) as () => Promise<unknown>;
  pool.connect = (() =>
    connect().catch((err: unknown) => {
      if (!isConnectionFailure(err)) markPoolWaitFailure(err);
      throw err;
    })) as Pool['connect'];
}

export function ormOptions({ databaseUrl, poolMax = 10, debug = false }: OrmOptions): Options {
  return {
    clientUrl: databaseUrl,
    entities,
    extensions: [Migrator],
    // Migrations are listed in code, so the same list works under tsx, jest and compiled JS.
    migrations: { migrationsList, transactional: true, allOrNothing: true, snapshot: false, silent: true },
    driver: PostgreSqlDriverKeepingCause,
    pool: { min: 0, max: poolMax },
    // Given to pg's Pool as they are (MikroORM 7 has no knex between them).
    driverOptions: {
      Client: ClientMarkingConnectionFailures,
      connectionTimeoutMillis: POOL_WAIT_MS,
      onPoolCreated: watchPool,
    },
    discovery: { warnWhenNoEntities: true },
    allowGlobalContext: false,
    debug,
  };
}

export async function openOrm(options: OrmOptions): Promise<Orm> {
  return MikroORM.init(ormOptions(options));
}

/** A statement PostgreSQL parses once per connection: a named prepared statement (`$1`-style parameters). */
export interface PreparedStatement {
  /** Unique per text across the process: pg keeps one parsed statement per name and connection. */
  name: string;
  text: string;
}

/**
 * The rows of a prepared statement (a read, or a write's RETURNING), on a connection of the ORM's
 * own pool, without the ORM or its query building: for the hottest statements (GET
 * /payments/{id}, a payment's and a refund's reads, a refund's creation), where those took ~15 %
 * of the API's CPU per GET and PostgreSQL parsed and planned the same text every time. The
 * connection is taken from and given back to pg's pool as the ORM's own queries are, and its
 * failures are marked by the same client (ClientMarkingConnectionFailures), so dbErrors.ts
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
 * The rows of one statement written with `?` placeholders (as in MikroORM's `execute`), sent as a parameterised query
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
 * `?` placeholders as PostgreSQL's `$1, $2, ...`, in order. A `?` inside a quoted literal,
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

/** The pg pool behind each ORM connection, asked for once (MikroORM 7 connects lazily, asynchronously). */
const pools = new WeakMap<object, Pool>();

async function poolOf(em: EntityManager): Promise<Pool> {
  const connection = em.getConnection();
  const known = pools.get(connection);
  if (known && !known.ending) return known;
  const pool = (await connection.getNativeClient()) as Pool;
  pools.set(connection, pool);
  return pool;
}

async function poolQuery(
  em: EntityManager,
  query: { name?: string; text: string; values: unknown[] },
): Promise<Record<string, unknown>[]> {
  const pool = await poolOf(em);
  const client = await pool.connect();
  try {
    const result = await client.query<Record<string, unknown>>(query);
    return result.rows;
  } finally {
    // A client whose connection failed is destroyed rather than given back.
    client.release(failedClients.has(client));
  }
}

export async function migrate(orm: Orm): Promise<string[]> {
  const done = await orm.migrator.up();
  return done.map((m) => m.name);
}
