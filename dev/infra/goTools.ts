import { execFile, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

/**
 * The Go programs the project builds for itself (Temporal CLI, server, UI server, stripe-mock):
 * pinned module versions, `go install`ed once into the per-user cache, never into the checkout.
 */
const run = promisify(execFile);

/** ~/.cache/payment-platform (or $XDG_CACHE_HOME/payment-platform), plus `name` when given. */
export function toolCacheDir(name = ''): string {
  return path.join(process.env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache'), 'payment-platform', name);
}

export function hasGo(): boolean {
  return spawnSync('go', ['version'], { stdio: 'ignore' }).status === 0;
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

/**
 * `go install` into a staging dir, then rename into `cacheDir`, so an interrupted build never
 * leaves a broken binary behind. `binaries` maps what Go names a binary to its cached name.
 */
export async function goInstall(cacheDir: string, packages: string[], binaries: Record<string, string>): Promise<void> {
  fs.mkdirSync(cacheDir, { recursive: true });
  const staging = fs.mkdtempSync(path.join(cacheDir, 'build-'));
  try {
    await run('go', ['install', ...packages], {
      env: { ...process.env, GOBIN: staging, CGO_ENABLED: '0' },
      maxBuffer: 64 * 1024 * 1024,
    });
    for (const [built, cached] of Object.entries(binaries)) {
      fs.renameSync(path.join(staging, built), path.join(cacheDir, cached));
    }
  } finally {
    fs.rmSync(staging, { recursive: true, force: true });
  }
}

/** A module's source dir (files it ships beside its code): Go's module cache, downloading it if needed. */
export async function goModuleDir(module: string, version: string): Promise<string> {
  const { stdout: modCache } = await run('go', ['env', 'GOMODCACHE']);
  const cached = path.join(modCache.trim(), `${module}@${version}`);
  if (fs.existsSync(cached)) return cached;
  const { stdout } = await run('go', ['mod', 'download', '-json', `${module}@${version}`], {
    cwd: os.tmpdir(),
    maxBuffer: 16 * 1024 * 1024,
  });
  const downloaded = (JSON.parse(stdout) as { Dir?: string }).Dir;
  if (!downloaded) throw new Error(`go mod download ${module}@${version} gave no directory`);
  return downloaded;
}
