import { spawn } from 'node:child_process';
import path from 'node:path';
import type { EmbeddedPostgresOptions, RunningPostgres } from '../../dev/infra/embeddedPostgres';

const CHILD = path.join(__dirname, 'postgresProcessChild.ts');

/**
 * `startEmbeddedPostgres` in a child process: the package is ESM-only, which jest's module
 * runtime cannot import inside a test file (globalSetup runs outside it). `stop()` stops the
 * server for real (SIGINT, fast shutdown) and waits for the child to exit; closing the test
 * process closes the child's stdin, which stops it too.
 */
export async function startPostgresProcess(opts: Omit<EmbeddedPostgresOptions, 'onLog'>): Promise<RunningPostgres> {
  const child = spawn(process.execPath, ['--import', 'tsx', CHILD, JSON.stringify(opts)], {
    cwd: path.join(__dirname, '..', '..'),
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  const databaseUrl = await new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString('utf8');
      const ready = /^ready (\S+)$/m.exec(out);
      if (ready) resolve(ready[1]!);
    });
    void exited.then((code) => reject(new Error(`PostgreSQL child exited (code ${code}) before it was ready`)));
  });
  return {
    databaseUrl,
    stop: async () => {
      child.stdin.end();
      await exited;
    },
  };
}
