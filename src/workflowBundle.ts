import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { bundleWorkflowCode, type Logger } from '@temporalio/worker';

/**
 * The workflow bundle is the unit of a deploy: `npm run build` makes it once, the worker
 * loads it, the replay test replays it, and its content hash is the worker's build id
 * (Worker Deployment Versioning). One function builds it for all of them.
 */

/** The sources the worker runs: every workflow exported from workflows/index.ts. */
export const WORKFLOWS_PATH = path.resolve(__dirname, '../workflows');

/**
 * Workflow interceptors bundled with every bundle (request ids: workflows/interceptors.ts). The
 * bundle carries them, so a worker given a bundle needs no `interceptors.workflowModules`.
 */
export const WORKFLOW_INTERCEPTOR_MODULES = [path.resolve(__dirname, '../workflows/interceptors')];

/** Relative to the working directory, like DATA_DIR (the project root, or /app in the image). */
export const DEFAULT_WORKFLOW_BUNDLE_PATH = path.join('dist', 'workflow-bundle.js');

export interface WorkflowBundleManifest {
  /** WORKER_BUILD_ID at build time, else the first 16 hex digits of `sha256`. */
  buildId: string;
  /** SHA-256 of the bundle file. */
  sha256: string;
  builtAt: string;
}

export interface BuiltWorkflowBundle {
  /** Absolute path of the bundle file. */
  codePath: string;
  manifest: WorkflowBundleManifest;
}

/** The manifest sits beside the bundle: dist/workflow-bundle.js -> dist/workflow-bundle.json. */
export function manifestPath(bundlePath: string): string {
  return bundlePath.replace(/\.js$/, '') + '.json';
}

export function contentBuildId(code: string): string {
  return sha256(code).slice(0, 16);
}

function sha256(text: string): string {
  return crypto.createHash('sha256').update(text).digest('hex');
}

/** The bundler's logger, reduced to errors. */
function quietLogger(onError: (msg: string) => void): Logger {
  const nothing = () => {};
  return { log: nothing, trace: nothing, debug: nothing, info: nothing, warn: nothing, error: onError };
}

export interface BuildWorkflowBundleOptions {
  /** Where to write the bundle; its manifest goes beside it. */
  outPath: string;
  /** Defaults to workflows/ (tests bundle their own fixtures through the same function). */
  workflowsPath?: string;
  /** A fixed build id (e.g. a release tag); default: from the bundle's content. */
  buildId?: string;
  onError?: (msg: string) => void;
}

/** Bundles the workflows once and writes the bundle and its manifest (build id). */
export async function buildWorkflowBundle(opts: BuildWorkflowBundleOptions): Promise<BuiltWorkflowBundle> {
  const workflowsPath = opts.workflowsPath ?? WORKFLOWS_PATH;
  const { code } = await bundleWorkflowCode({
    workflowsPath,
    workflowInterceptorModules: WORKFLOW_INTERCEPTOR_MODULES,
    // Evaluated once per V8 context instead of once per workflow run (a run's first task paid for
    // evaluating every module of the bundle). Safe because no module of workflows/ keeps state at
    // module scope: only definitions, activity proxies and constants (docs/decisions.md,
    // "Workflow modules are loaded once"; a lint rule in eslint.config.mjs keeps it so).
    preloadModules: [workflowsPath, ...WORKFLOW_INTERCEPTOR_MODULES],
    logger: quietLogger(opts.onError ?? ((msg) => process.stderr.write(`${msg}\n`))),
  });
  const codePath = path.resolve(opts.outPath);
  const manifest: WorkflowBundleManifest = {
    buildId: opts.buildId ?? contentBuildId(code),
    sha256: sha256(code),
    builtAt: new Date().toISOString(),
  };
  fs.mkdirSync(path.dirname(codePath), { recursive: true });
  // Written beside and renamed, so a worker starting meanwhile never reads half a bundle.
  const tmp = `${codePath}.${process.pid}.tmp`;
  fs.writeFileSync(tmp, code);
  fs.renameSync(tmp, codePath);
  fs.writeFileSync(manifestPath(codePath), `${JSON.stringify(manifest, null, 2)}\n`);
  return { codePath, manifest };
}

export class WorkflowBundleError extends Error {}

/**
 * Reads a built bundle's manifest and checks the bundle is the one it describes
 * (a bundle copied without its manifest, or rebuilt behind it, is refused).
 */
export function loadWorkflowBundle(bundlePath: string): BuiltWorkflowBundle {
  const codePath = path.resolve(bundlePath);
  let code: string;
  let manifest: WorkflowBundleManifest;
  try {
    code = fs.readFileSync(codePath, 'utf8');
    manifest = JSON.parse(fs.readFileSync(manifestPath(codePath), 'utf8')) as WorkflowBundleManifest;
  } catch (err) {
    throw new WorkflowBundleError(
      `No workflow bundle at ${codePath} (${(err as NodeJS.ErrnoException).code ?? (err as Error).message}): run \`npm run build\``,
    );
  }
  if (manifest.sha256 !== sha256(code)) {
    throw new WorkflowBundleError(`${codePath} does not match ${manifestPath(codePath)}: run \`npm run build\` again`);
  }
  return { codePath, manifest };
}
