import { execFile, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { Connection } from '@temporalio/client';
import { freeLoopbackPort } from './ports';
import { ownChild, stopProcess } from './processes';

/**
 * The Java time-skipping test server (`io.temporal:temporal-test-server` on Maven Central), found
 * in the order the Temporal CLI is: TEMPORAL_TEST_SERVER_CLASSPATH, a copy in the per-user cache,
 * else resolved with Maven (the artifact and its dependencies) into that cache. The SDK's own
 * download of a native test server needs GitHub, which CI may not reach; Maven Central it does.
 * Returns undefined when neither a cached copy nor Java and Maven can be had.
 */
export const TEMPORAL_TEST_SERVER_VERSION = '1.38.0';
const TEST_SERVER_MAIN_CLASS = 'io.temporal.testserver.TestServer';
// Pinned so the resolution is the same on every machine, whatever Maven's default binding is.
const COPY_DEPENDENCIES_GOAL = 'org.apache.maven.plugins:maven-dependency-plugin:3.8.1:copy-dependencies';
// Fast start over peak speed: the server does little work per test. Must be the same when the
// class-data archive is written and when it is used, or the JVM ignores the archive.
const JVM_ARGS = ['-XX:+UseSerialGC', '-XX:TieredStopAtLevel=1', '-Xmx512m'];

export interface LocatedTestServer {
  java: string;
  classpath: string;
  /** A class-data-sharing archive of the server's start-up classes: ~3x faster start. */
  classDataArchive?: string;
}

export function temporalTestServerCacheDir(): string {
  const base = process.env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache');
  return path.join(base, 'payment-platform', `temporal-test-server-${TEMPORAL_TEST_SERVER_VERSION}`);
}

function javaExecutable(): string {
  return process.env.JAVA_HOME ? path.join(process.env.JAVA_HOME, 'bin', 'java') : 'java';
}

function runs(command: string, args: string[]): boolean {
  return spawnSync(command, args, { stdio: 'ignore' }).status === 0;
}

function jarClasspath(libDir: string): string {
  const jars = fs
    .readdirSync(libDir)
    .filter((f) => f.endsWith('.jar'))
    .sort();
  return jars.map((jar) => path.join(libDir, jar)).join(path.delimiter);
}

/** The cached copy, complete or absent: it is renamed into place only once fully written. */
function cachedCopy(java: string): LocatedTestServer | undefined {
  const dist = path.join(temporalTestServerCacheDir(), 'dist');
  if (!fs.existsSync(path.join(dist, 'lib'))) return undefined;
  const archive = path.join(dist, 'classes.jsa');
  return {
    java,
    classpath: jarClasspath(path.join(dist, 'lib')),
    classDataArchive: fs.existsSync(archive) ? archive : undefined,
  };
}

function minimalPom(): string {
  return `<?xml version="1.0" encoding="UTF-8"?>
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>local.payment-platform</groupId>
  <artifactId>temporal-test-server-classpath</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency>
      <groupId>io.temporal</groupId>
      <artifactId>temporal-test-server</artifactId>
      <version>${TEMPORAL_TEST_SERVER_VERSION}</version>
    </dependency>
  </dependencies>
</project>
`;
}

export async function locateTemporalTestServer(
  log: (msg: string) => void = () => {},
): Promise<LocatedTestServer | undefined> {
  const java = javaExecutable();
  const explicit = process.env.TEMPORAL_TEST_SERVER_CLASSPATH;
  if (explicit) return { java, classpath: explicit };
  const cached = cachedCopy(java);
  if (cached) return cached;
  if (!runs(java, ['-version']) || !runs('mvn', ['-v'])) return undefined;

  const cacheDir = temporalTestServerCacheDir();
  const dist = path.join(cacheDir, 'dist');
  log(`Fetching the Temporal test server ${TEMPORAL_TEST_SERVER_VERSION} with Maven into ${cacheDir} (once)...`);
  fs.mkdirSync(cacheDir, { recursive: true });
  // Staged and renamed, so an interrupted fetch never leaves a half copy; two test files fetching
  // at once both succeed and one copy wins.
  const staging = fs.mkdtempSync(path.join(cacheDir, 'fetch-'));
  let won = false;
  try {
    fs.writeFileSync(path.join(staging, 'pom.xml'), minimalPom());
    await promisify(execFile)(
      'mvn',
      [
        '-B',
        '-q',
        '-f',
        path.join(staging, 'pom.xml'),
        COPY_DEPENDENCIES_GOAL,
        '-DincludeScope=runtime',
        '-DoutputDirectory=lib',
      ],
      { cwd: staging, maxBuffer: 64 * 1024 * 1024 },
    );
    try {
      fs.renameSync(staging, dist);
      won = true;
    } catch (err) {
      if (!cachedCopy(java)) throw err;
    }
  } finally {
    if (!won) fs.rmSync(staging, { recursive: true, force: true });
  }
  if (won) await writeClassDataArchive(java, jarClasspath(path.join(dist, 'lib')), path.join(dist, 'classes.jsa'), log);
  log('Temporal test server fetched.');
  return cachedCopy(java);
}

/**
 * Runs the server once with -XX:ArchiveClassesAtExit so later starts map its classes instead of
 * loading them (measured on a loaded 2-core machine: 4-6 s -> 1.3-2 s). Written beside the jars it
 * was made from (the JVM checks their paths and sizes) and renamed into place when complete.
 * Best effort: without it the server only starts slower.
 */
async function writeClassDataArchive(
  java: string,
  classpath: string,
  archive: string,
  log: (msg: string) => void,
): Promise<void> {
  const partial = `${archive}.${process.pid}.partial`;
  try {
    const server = await startTemporalTestServer({
      located: { java, classpath },
      port: await freeLoopbackPort(),
      extraJvmArgs: [`-XX:ArchiveClassesAtExit=${partial}`],
    });
    await server.stop();
    fs.renameSync(partial, archive);
  } catch (err) {
    fs.rmSync(partial, { force: true });
    log(`No class-data archive for the test server (it will start slower): ${(err as Error).message}`);
  }
}

let pdeathsig: boolean | undefined;
function parentDeathSignalSupported(): boolean {
  pdeathsig ??= process.platform === 'linux' && runs('setpriv', ['--pdeathsig', 'TERM', 'true']);
  return pdeathsig;
}

export interface TestServerOptions {
  located: LocatedTestServer;
  port: number;
  logFile?: string;
  extraJvmArgs?: string[];
  readyTimeoutMs?: number;
}

export interface RunningTestServer {
  address: string;
  process: ChildProcess;
  stop(): Promise<void>;
}

/**
 * Starts the test server (time skipping locked until a client unlocks it, as the SDK expects)
 * and resolves once it answers gRPC. The server binds every interface: the Java main takes only
 * a port.
 */
export async function startTemporalTestServer(opts: TestServerOptions): Promise<RunningTestServer> {
  const address = `127.0.0.1:${opts.port}`;
  const { located } = opts;
  const jvmArgs = [...JVM_ARGS, ...(opts.extraJvmArgs ?? [])];
  // An archive that no longer matches the JVM (e.g. after a JDK upgrade) is ignored with a warning:
  // the server then only starts slower.
  if (located.classDataArchive) jvmArgs.push(`-XX:SharedArchiveFile=${located.classDataArchive}`);
  const out = opts.logFile ? fs.openSync(opts.logFile, 'a') : 'ignore';
  const javaCommand = [located.java, ...jvmArgs, '-cp', located.classpath, TEST_SERVER_MAIN_CLASS, String(opts.port)];
  // Where Linux allows, the kernel stops the server when its parent dies by any means (even
  // SIGKILL, which skips the exit hook below).
  const command = parentDeathSignalSupported() ? ['setpriv', '--pdeathsig', 'TERM', ...javaCommand] : javaCommand;
  const child = spawn(command[0]!, command.slice(1), { stdio: ['ignore', out, out] });
  if (typeof out === 'number') fs.closeSync(out);
  const owned = ownChild(child);
  // SIGTERM runs the server's shutdown hook (and writes a class-data archive when asked to).
  const stop = () => stopProcess(child, 15_000);

  const deadline = Date.now() + (opts.readyTimeoutMs ?? 60_000);
  for (;;) {
    const exited = owned.exited();
    if (exited) throw new Error(`Temporal test server ${exited}${opts.logFile ? `; see ${opts.logFile}` : ''}`);
    try {
      const connection = await Connection.connect({ address, connectTimeout: 1000 });
      try {
        await connection.withDeadline(Date.now() + 2000, () => connection.workflowService.getSystemInfo({}));
        return { address, process: child, stop };
      } finally {
        await connection.close();
      }
    } catch (err) {
      if (Date.now() > deadline) {
        await stop();
        throw new Error(`Temporal test server not ready at ${address}: ${(err as Error).message}`);
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}
