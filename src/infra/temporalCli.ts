import { execFile, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

/**
 * Finds the Temporal CLI (the dev server) in the order PRODUCT.md fixes: TEMPORAL_CLI_PATH,
 * `temporal` on PATH, a cached build in the per-user cache, else `go install` into that cache.
 * v1.5.1 is pinned: later tags carry a `replace` directive that `go install` rejects.
 * Returns undefined when none can be had, so callers may fall back to the SDK's download.
 */
export const TEMPORAL_CLI_VERSION = 'v1.5.1';

export function temporalCliCacheDir(): string {
  const base = process.env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache');
  return path.join(base, 'payment-platform', `temporal-cli-${TEMPORAL_CLI_VERSION}`);
}

export function isExecutable(file: string): boolean {
  try {
    fs.accessSync(file, fs.constants.X_OK);
    return fs.statSync(file).isFile();
  } catch {
    return false;
  }
}

export function onPath(name: string): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
    if (dir && isExecutable(path.join(dir, name))) return path.join(dir, name);
  }
  return undefined;
}

export async function locateTemporalCli(log: (msg: string) => void = () => {}): Promise<string | undefined> {
  const explicit = process.env.TEMPORAL_CLI_PATH;
  if (explicit) {
    if (!isExecutable(explicit)) throw new Error(`TEMPORAL_CLI_PATH=${explicit} is not an executable file`);
    return explicit;
  }
  const fromPath = onPath('temporal');
  if (fromPath) return fromPath;
  const cacheDir = temporalCliCacheDir();
  const cached = path.join(cacheDir, 'temporal');
  if (isExecutable(cached)) return cached;
  if (spawnSync('go', ['version'], { stdio: 'ignore' }).status !== 0) return undefined;

  log(`Building the Temporal CLI ${TEMPORAL_CLI_VERSION} with Go into ${cacheDir} (once; a few minutes)...`);
  fs.mkdirSync(cacheDir, { recursive: true });
  // Build into a temp dir and rename, so an interrupted build never leaves a broken binary.
  const staging = fs.mkdtempSync(path.join(cacheDir, 'build-'));
  try {
    await promisify(execFile)('go', ['install', `github.com/temporalio/cli/cmd/temporal@${TEMPORAL_CLI_VERSION}`], {
      env: { ...process.env, GOBIN: staging, CGO_ENABLED: '0' },
      maxBuffer: 64 * 1024 * 1024,
    });
    fs.renameSync(path.join(staging, 'temporal'), cached);
  } finally {
    fs.rmSync(staging, { recursive: true, force: true });
  }
  log('Temporal CLI built.');
  return cached;
}
