import { MikroORM, type Options } from '@mikro-orm/postgresql';
import { Migrator } from '@mikro-orm/migrations';
import { entities } from './entities';
import { migrationsList } from './migrations';

export type Orm = MikroORM;

export interface OrmOptions {
  databaseUrl: string;
  poolMax?: number;
  debug?: boolean;
}

export function ormOptions({ databaseUrl, poolMax = 10, debug = false }: OrmOptions): Options {
  return {
    clientUrl: databaseUrl,
    entities,
    extensions: [Migrator],
    // Migrations are listed in code, so the same list works under tsx, jest and compiled JS.
    migrations: { migrationsList, transactional: true, allOrNothing: true, snapshot: false, silent: true },
    pool: { min: 0, max: poolMax },
    // Fail fast when PostgreSQL is unreachable instead of hanging a request.
    driverOptions: { connection: { connectionTimeoutMillis: 3000 } },
    discovery: { warnWhenNoEntities: true },
    allowGlobalContext: false,
    debug,
  };
}

export async function openOrm(options: OrmOptions): Promise<Orm> {
  return MikroORM.init(ormOptions(options));
}

export async function migrate(orm: Orm): Promise<string[]> {
  const done = await orm.getMigrator().up();
  return done.map((m) => m.name);
}
