import fs from 'node:fs';
import path from 'node:path';
import { goInstall, hasGo, isExecutable, onPath, toolCacheDir } from './goTools';

/**
 * Finds the Temporal CLI (the dev server) in the order PRODUCT.md fixes: TEMPORAL_CLI_PATH,
 * `temporal` on PATH, a cached build in the per-user cache, else `go install` into that cache.
 * v1.5.1 is pinned: later tags carry a `replace` directive that `go install` rejects.
 * Returns undefined when none can be had, so callers may fall back to the SDK's download.
 */
export const TEMPORAL_CLI_VERSION = 'v1.5.1';

export function temporalCliCacheDir(): string {
  return toolCacheDir(`temporal-cli-${TEMPORAL_CLI_VERSION}`);
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
  if (!hasGo()) return undefined;

  log(`Building the Temporal CLI ${TEMPORAL_CLI_VERSION} with Go into ${cacheDir} (once; a few minutes)...`);
  await goInstall(cacheDir, [`github.com/temporalio/cli/cmd/temporal@${TEMPORAL_CLI_VERSION}`], {
    temporal: 'temporal',
  });
  log('Temporal CLI built.');
  return fs.existsSync(cached) ? cached : undefined;
}
