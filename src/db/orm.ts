import { MikroORM, PostgreSqlDriver, type DriverException, type Options } from '@mikro-orm/postgresql';
import { Migrator } from '@mikro-orm/migrations';
import type { Client as PgClient } from 'pg';
import { markConnectionFailure } from './dbErrors';
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

/** A pg client's own 'error' event is its connection failing (see dbErrors.ts). */
function watchClient(client: PgClient, done: (err: Error | null, client: PgClient) => void): void {
  client.on('error', markConnectionFailure);
  done(null, client);
}

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
    driverOptions: { connection: { connectionTimeoutMillis: 3000 } },
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

export async function migrate(orm: Orm): Promise<string[]> {
  const done = await orm.getMigrator().up();
  return done.map((m) => m.name);
}
