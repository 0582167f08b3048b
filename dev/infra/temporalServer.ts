import { execFile, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { promisify } from 'node:util';
import { Connection, isGrpcServiceError } from '@temporalio/client';
import { msToTs } from '@temporalio/common/lib/time';
import { temporal } from '@temporalio/proto';
import pg from 'pg';
import { customSearchAttributes } from '../../workflows/searchAttributes';
import { ownChild } from './processes';
import { goInstall, goModuleDir, hasGo, isExecutable, toolCacheDir } from './goTools';
import {
  DYNAMIC_CONFIG,
  renderDynamicConfig,
  renderServerConfig,
  renderUiConfig,
  TEMPORAL_SERVICES,
  temporalServerPorts,
  type TemporalServerPorts,
  type TemporalServiceName,
} from './temporalServerConfig';

/**
 * The real Temporal server (not the dev server) for `npm run cluster`: persistence and
 * visibility in PostgreSQL, and frontend, history, matching and the internal worker service
 * (Schedules run there) each as a separate OS process, plus the Temporal UI server.
 *
 *   locateTemporalServer(log)    -> { server, sqlTool, schemaDir }  (built with Go once, cached)
 *   locateTemporalUiServer(log)  -> path of the UI server, or undefined (then: no UI)
 *   prepareTemporalServer(opts)  -> databases + schemas + config files, and a plan whose
 *                                   services[i].start() spawns a NEW child each call, for a supervisor
 *   registerNamespace(opts)      -> namespace and custom search attributes, once the services run
 *
 * Ports: see `temporalServerPorts` (frontend P; history, matching, worker P+1..P+3; membership
 * the same minus 300; frontend HTTP P+10). numHistoryShards is fixed at the first start: after
 * that it is read back from the database, so changing the option later has no effect.
 */
export const TEMPORAL_SERVER_VERSION = 'v1.29.1';
/** github.com/temporalio/ui-server/v2: the version the Temporal CLI v1.5.1 embeds. */
export const TEMPORAL_UI_SERVER_VERSION = 'v2.42.1';
export const DEFAULT_NUM_HISTORY_SHARDS = 4;
const NAMESPACE_RETENTION_SECONDS = 3 * 24 * 3600;

const SERVER_MODULE = 'go.temporal.io/server';
const run = promisify(execFile);
const UI_SERVER_MODULE = 'github.com/temporalio/ui-server/v2';
// Config layout the server and UI server load: <root>/<config dir>/<env>.yaml.
const SERVER_CONFIG_DIR = 'server';
const SERVER_CONFIG_ENV = 'temporal';
const UI_CONFIG_DIR = 'ui';
const UI_CONFIG_ENV = 'ui';

export function temporalServerCacheDir(): string {
  return toolCacheDir(`temporal-server-${TEMPORAL_SERVER_VERSION}`);
}

/** Its own dir: the UI server's binary is also called `server`. */
export function temporalUiServerCacheDir(): string {
  return toolCacheDir(`temporal-ui-server-${TEMPORAL_UI_SERVER_VERSION}`);
}

export interface TemporalServerBinaries {
  server: string;
  sqlTool: string;
  /** `schema/postgresql/v12` of the server module: `temporal/versioned` and `visibility/versioned`. */
  schemaDir: string;
}

/**
 * The server and its SQL schema tool: TEMPORAL_SERVER_PATH / TEMPORAL_SQL_TOOL_PATH /
 * TEMPORAL_SCHEMA_DIR when set, else the per-user cache (XDG_CACHE_HOME respected), else built
 * there with Go (once; several minutes). The schema dir comes from the Go module cache.
 */
export async function locateTemporalServer(log: (m: string) => void): Promise<TemporalServerBinaries> {
  const cacheDir = temporalServerCacheDir();
  const explicit = (name: string) => {
    const value = process.env[name];
    if (value && !isExecutable(value)) throw new Error(`${name}=${value} is not an executable file`);
    return value;
  };
  let server = explicit('TEMPORAL_SERVER_PATH') ?? path.join(cacheDir, 'server');
  let sqlTool = explicit('TEMPORAL_SQL_TOOL_PATH') ?? path.join(cacheDir, 'sql');
  let schemaDir = process.env.TEMPORAL_SCHEMA_DIR;

  const missing = !isExecutable(server) || !isExecutable(sqlTool);
  if ((missing || !schemaDir) && !hasGo()) {
    throw new Error(
      missing
        ? `The Temporal server ${TEMPORAL_SERVER_VERSION} is not built and Go is not installed. Install Go ` +
            `(https://go.dev/dl/) so it is built once into ${cacheDir}, or set TEMPORAL_SERVER_PATH, ` +
            'TEMPORAL_SQL_TOOL_PATH and TEMPORAL_SCHEMA_DIR.'
        : `The Temporal server's SQL schema (schema/postgresql/v12 of ${SERVER_MODULE}@${TEMPORAL_SERVER_VERSION}) ` +
            'comes from the Go module cache and Go is not installed: install Go or set TEMPORAL_SCHEMA_DIR.',
    );
  }
  if (missing) {
    log(`Building the Temporal server ${TEMPORAL_SERVER_VERSION} with Go into ${cacheDir} (once; several minutes)...`);
    await goInstall(
      cacheDir,
      [
        `${SERVER_MODULE}/cmd/server@${TEMPORAL_SERVER_VERSION}`,
        `${SERVER_MODULE}/cmd/tools/sql@${TEMPORAL_SERVER_VERSION}`,
      ],
      { server: 'server', sql: 'sql' },
    );
    server = path.join(cacheDir, 'server');
    sqlTool = path.join(cacheDir, 'sql');
    log('Temporal server built.');
  }
  schemaDir ??= path.join(await goModuleDir(SERVER_MODULE, TEMPORAL_SERVER_VERSION), 'schema', 'postgresql', 'v12');
  for (const sub of ['temporal/versioned', 'visibility/versioned']) {
    if (!fs.existsSync(path.join(schemaDir, sub))) throw new Error(`No ${sub} in the schema dir ${schemaDir}`);
  }
  return { server, sqlTool, schemaDir };
}

/**
 * The Temporal UI server: TEMPORAL_UI_SERVER_PATH, else cached, else built with Go. Undefined
 * when it cannot be had (no Go, a failed build): the cluster then runs without a UI.
 */
export async function locateTemporalUiServer(log: (m: string) => void): Promise<string | undefined> {
  const explicit = process.env.TEMPORAL_UI_SERVER_PATH;
  if (explicit) {
    if (!isExecutable(explicit)) throw new Error(`TEMPORAL_UI_SERVER_PATH=${explicit} is not an executable file`);
    return explicit;
  }
  const cacheDir = temporalUiServerCacheDir();
  const cached = path.join(cacheDir, 'ui-server');
  if (isExecutable(cached)) return cached;
  if (!hasGo()) {
    log('No Temporal UI server and no Go toolchain to build one: running without the UI.');
    return undefined;
  }
  log(`Building the Temporal UI server ${TEMPORAL_UI_SERVER_VERSION} with Go into ${cacheDir} (once)...`);
  try {
    await goInstall(cacheDir, [`${UI_SERVER_MODULE}/cmd/server@${TEMPORAL_UI_SERVER_VERSION}`], {
      server: 'ui-server',
    });
  } catch (err) {
    log(`Could not build the Temporal UI server (${(err as Error).message.split('\n')[0]}): running without the UI.`);
    return undefined;
  }
  log('Temporal UI server built.');
  return cached;
}

export interface TemporalServerPlan {
  /** Frontend gRPC, 127.0.0.1:<port>. */
  address: string;
  uiUrl?: string;
  ports: TemporalServerPorts;
  numHistoryShards: number;
  /**
   * One entry per separate process, in start order: frontend, history, matching, worker (+ ui).
   * Each start() spawns a NEW child (stdout/stderr appended to `<logsDir>/temporal-<name>.log`),
   * so a supervisor calls it again after a crash.
   */
  services: Array<{ name: TemporalServiceName | 'ui'; logFile: string; start(): ChildProcess }>;
}

export interface PrepareTemporalServerOptions {
  /** Config files go here (kept across restarts; the server config holds the password: mode 0600). */
  dir: string;
  logsDir: string;
  postgres: { host: string; port: number; user: string; password: string };
  /** Default `temporal` and `temporal_visibility`. */
  databases?: { main?: string; visibility?: string };
  frontendPort: number;
  /** Overrides the derived ports (default `temporalServerPorts(frontendPort)`). */
  ports?: TemporalServerPorts;
  /** Omit for no UI. */
  uiPort?: number;
  /** The UI's remote codec (the API's /codec, decision 0078). */
  uiCodecEndpoint?: string;
  /** Used only when the database has no shards yet (its first start); default 4. */
  numHistoryShards?: number;
  logLevel?: 'debug' | 'info' | 'warn' | 'error';
  /** Dynamic config set over the product's (DYNAMIC_CONFIG), for experiments (the bench's A/B runs). */
  dynamicConfigOverrides?: Readonly<Record<string, unknown>>;
  /** Default: located (or built) with `locateTemporalServer` / `locateTemporalUiServer`. */
  binaries?: TemporalServerBinaries;
  uiServer?: string;
  log: (m: string) => void;
}

/**
 * Creates the two databases if missing, sets up or upgrades both schemas (idempotent across
 * restarts), writes the server, dynamic and UI config files into `dir`, and returns the plan.
 */
export async function prepareTemporalServer(opts: PrepareTemporalServerOptions): Promise<TemporalServerPlan> {
  const binaries = opts.binaries ?? (await locateTemporalServer(opts.log));
  const uiServer = opts.uiPort === undefined ? undefined : (opts.uiServer ?? (await locateTemporalUiServer(opts.log)));
  const ports = opts.ports ?? temporalServerPorts(opts.frontendPort);
  await assertPortsFree([
    ...TEMPORAL_SERVICES.flatMap((name) => [
      { port: ports[name].grpc, what: `${name} gRPC` },
      { port: ports[name].membership, what: `${name} membership` },
    ]),
    { port: ports.frontend.http, what: 'frontend HTTP' },
    ...(opts.uiPort !== undefined ? [{ port: opts.uiPort, what: 'UI' }] : []),
  ]);
  const databases = {
    main: opts.databases?.main ?? 'temporal',
    visibility: opts.databases?.visibility ?? 'temporal_visibility',
  };

  await createDatabases(opts.postgres, [databases.main, databases.visibility]);
  await setUpSchema(
    binaries,
    opts.postgres,
    databases.main,
    path.join(binaries.schemaDir, 'temporal', 'versioned'),
    opts.log,
  );
  await setUpSchema(
    binaries,
    opts.postgres,
    databases.visibility,
    path.join(binaries.schemaDir, 'visibility', 'versioned'),
    opts.log,
  );
  const persistedShards = await historyShardsInUse(opts.postgres, databases.main);
  const numHistoryShards = persistedShards ?? opts.numHistoryShards ?? DEFAULT_NUM_HISTORY_SHARDS;
  if (
    persistedShards !== undefined &&
    opts.numHistoryShards !== undefined &&
    opts.numHistoryShards !== persistedShards
  ) {
    opts.log(
      `The Temporal database has ${persistedShards} history shards; numHistoryShards=${opts.numHistoryShards} ` +
        'is ignored (it can never change after the first start).',
    );
  }

  const dir = path.resolve(opts.dir);
  const serverConfigDir = path.join(dir, SERVER_CONFIG_DIR);
  fs.mkdirSync(serverConfigDir, { recursive: true });
  fs.mkdirSync(opts.logsDir, { recursive: true });
  const dynamicConfigFile = path.join(serverConfigDir, 'dynamic-config.yaml');
  fs.writeFileSync(dynamicConfigFile, renderDynamicConfig({ ...DYNAMIC_CONFIG, ...opts.dynamicConfigOverrides }));
  writePrivate(
    path.join(serverConfigDir, `${SERVER_CONFIG_ENV}.yaml`),
    renderServerConfig({
      ports,
      postgres: opts.postgres,
      databases,
      numHistoryShards,
      dynamicConfigFile,
      logLevel: opts.logLevel ?? 'warn',
    }),
  );

  const spawnLogged = (name: string, command: string, args: string[]) => {
    const logFile = path.join(opts.logsDir, `temporal-${name}.log`);
    return {
      logFile,
      start: () => {
        const out = fs.openSync(logFile, 'a');
        try {
          const child = spawn(command, args, { cwd: dir, stdio: ['ignore', out, out] });
          ownChild(child);
          return child;
        } finally {
          fs.closeSync(out);
        }
      },
    };
  };
  const services: TemporalServerPlan['services'] = TEMPORAL_SERVICES.map((name) => ({
    name,
    ...spawnLogged(name, binaries.server, [
      '--root',
      dir,
      '--config',
      SERVER_CONFIG_DIR,
      '--env',
      SERVER_CONFIG_ENV,
      '--allow-no-auth',
      'start',
      '--service',
      name,
    ]),
  }));

  let uiUrl: string | undefined;
  if (opts.uiPort !== undefined && uiServer) {
    fs.mkdirSync(path.join(dir, UI_CONFIG_DIR), { recursive: true });
    fs.writeFileSync(
      path.join(dir, UI_CONFIG_DIR, `${UI_CONFIG_ENV}.yaml`),
      renderUiConfig({
        frontendGrpcPort: ports.frontend.grpc,
        uiPort: opts.uiPort,
        ...(opts.uiCodecEndpoint ? { codecEndpoint: opts.uiCodecEndpoint } : {}),
      }),
    );
    services.push({
      name: 'ui',
      ...spawnLogged('ui', uiServer, ['--root', dir, '--config', UI_CONFIG_DIR, '--env', UI_CONFIG_ENV, 'start']),
    });
    uiUrl = `http://127.0.0.1:${opts.uiPort}`;
  }

  return { address: `127.0.0.1:${ports.frontend.grpc}`, uiUrl, ports, numHistoryShards, services };
}

/**
 * A taken port would make its service die at every start, which a supervisor only turns into a
 * restart loop: refuse up front, naming the port.
 */
async function assertPortsFree(wanted: Array<{ port: number; what: string }>): Promise<void> {
  const taken: string[] = [];
  for (const { port, what } of wanted) {
    const free = await new Promise<boolean>((resolve) => {
      const probe = net.createServer();
      probe.once('error', () => resolve(false));
      probe.listen(port, '127.0.0.1', () => probe.close(() => resolve(true)));
    });
    if (!free) taken.push(`${port} (${what})`);
  }
  if (taken.length) {
    throw new Error(`Ports the Temporal server needs are in use on 127.0.0.1: ${taken.join(', ')}`);
  }
}

function writePrivate(file: string, content: string): void {
  fs.writeFileSync(file, content, { mode: 0o600 });
  fs.chmodSync(file, 0o600);
}

type PostgresTarget = PrepareTemporalServerOptions['postgres'];

async function withDatabase<T>(target: PostgresTarget, database: string, fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ ...target, database });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

async function createDatabases(target: PostgresTarget, names: string[]): Promise<void> {
  await withDatabase(target, 'postgres', async (client) => {
    for (const name of names) {
      const exists = await client.query('select 1 from pg_database where datname = $1', [name]);
      if (exists.rowCount) continue;
      try {
        await client.query(`create database ${client.escapeIdentifier(name)}`);
      } catch (err) {
        // Another process created it between our check and our create.
        if ((err as { code?: string }).code !== '42P04') throw err;
      }
    }
  });
}

/**
 * `setup-schema -v 0.0` (the version table only) on a database that has none yet, then
 * `update-schema` to the newest version in `versionedDir`; a no-op on an up-to-date database.
 * The password goes through the environment, not the command line.
 */
async function setUpSchema(
  binaries: TemporalServerBinaries,
  target: PostgresTarget,
  database: string,
  versionedDir: string,
  log: (m: string) => void,
): Promise<void> {
  const env = {
    ...process.env,
    SQL_PLUGIN: 'postgres12',
    SQL_HOST: target.host,
    SQL_PORT: String(target.port),
    SQL_USER: target.user,
    SQL_PASSWORD: target.password,
    SQL_DATABASE: database,
  };
  const sql = async (args: string[]) => {
    try {
      await run(binaries.sqlTool, args, { env, maxBuffer: 16 * 1024 * 1024 });
    } catch (err) {
      const { stderr, stdout } = err as { stderr?: string; stdout?: string };
      throw new Error(
        `temporal sql tool ${args[0]} on ${database} failed: ${(stderr || stdout || String(err)).trim()}`,
      );
    }
  };
  const fresh = await withDatabase(target, database, async (client) => {
    const res = await client.query<{ t: string | null }>(`select to_regclass('public.schema_version')::text as t`);
    return res.rows[0]?.t == null;
  });
  if (fresh) {
    log(`Setting up the Temporal schema in ${database}...`);
    await sql(['setup-schema', '-v', '0.0']);
  }
  await sql(['update-schema', '-d', versionedDir]);
}

/** Shard ids run 1..N and the history service creates all N rows at its first start. */
async function historyShardsInUse(target: PostgresTarget, database: string): Promise<number | undefined> {
  return withDatabase(target, database, async (client) => {
    const res = await client.query<{ n: number | null }>('select max(shard_id) as n from shards');
    const n = res.rows[0]?.n;
    return n ? Number(n) : undefined;
  });
}

// gRPC status codes (google.golang.org/grpc/codes).
const NOT_FOUND = 5;
const ALREADY_EXISTS = 6;

function grpcCode(err: unknown): number | undefined {
  return isGrpcServiceError(err) ? err.code : undefined;
}

/**
 * Once the services run: waits until the frontend answers, registers the namespace if missing
 * (3 days retention), adds the custom search attributes of workflows/searchAttributes.ts that are
 * missing, and waits until all are listed. Retries everything while the cluster comes up.
 */
export async function registerNamespace(opts: {
  address: string;
  namespace: string;
  timeoutMs?: number;
  log: (m: string) => void;
}): Promise<void> {
  const deadline = Date.now() + (opts.timeoutMs ?? 120_000);
  const wanted: Record<string, temporal.api.enums.v1.IndexedValueType> = Object.fromEntries(
    customSearchAttributes.map((key) => [
      key.name,
      temporal.api.enums.v1.IndexedValueType[`INDEXED_VALUE_TYPE_${key.type}`],
    ]),
  );
  let connection: Connection | undefined;
  let registered = false;
  try {
    for (;;) {
      try {
        connection ??= await Connection.connect({ address: opts.address, connectTimeout: 2000 });
        const call = <T>(fn: () => Promise<T>) => connection!.withDeadline(Date.now() + 5000, fn);
        try {
          await call(() => connection!.workflowService.describeNamespace({ namespace: opts.namespace }));
        } catch (err) {
          if (grpcCode(err) !== NOT_FOUND) throw err;
          if (!registered) opts.log(`Registering the Temporal namespace ${opts.namespace}...`);
          await call(() =>
            connection!.workflowService.registerNamespace({
              namespace: opts.namespace,
              workflowExecutionRetentionPeriod: msToTs(NAMESPACE_RETENTION_SECONDS * 1000),
            }),
          ).catch((e: unknown) => {
            if (grpcCode(e) !== ALREADY_EXISTS) throw e;
          });
          registered = true;
          continue; // describe again: it must be readable before search attributes can be added
        }
        const listed = await call(() =>
          connection!.operatorService.listSearchAttributes({ namespace: opts.namespace }),
        );
        const missing = Object.keys(wanted).filter((name) => !(name in (listed.customAttributes ?? {})));
        if (missing.length === 0) return;
        await call(() =>
          connection!.operatorService.addSearchAttributes({
            namespace: opts.namespace,
            searchAttributes: Object.fromEntries(missing.map((name) => [name, wanted[name]!])),
          }),
        ).catch((e: unknown) => {
          if (grpcCode(e) !== ALREADY_EXISTS) throw e;
        });
      } catch (err) {
        if (Date.now() > deadline) {
          throw new Error(
            `Temporal at ${opts.address} did not accept namespace ${opts.namespace} and its search attributes ` +
              `in time: ${(err as Error).message}`,
          );
        }
        await new Promise((r) => setTimeout(r, 500));
      }
    }
  } finally {
    await connection?.close();
  }
}
