/**
 * `npm run build` step: bundles workflows/index.ts once into dist/workflow-bundle.js with its
 * manifest (dist/workflow-bundle.json: build id, SHA-256). The worker loads this file in
 * production; the replay test replays a bundle made by the same function.
 *   node --import tsx scripts/build-workflow-bundle.ts [outPath]
 * Build id: WORKER_BUILD_ID when set (e.g. a release tag), else the bundle's content hash.
 */
import { buildWorkflowBundle, DEFAULT_WORKFLOW_BUNDLE_PATH } from '../src/workflowBundle';

async function main(): Promise<void> {
  const outPath = process.argv[2] ?? process.env.WORKFLOW_BUNDLE_PATH ?? DEFAULT_WORKFLOW_BUNDLE_PATH;
  const started = Date.now();
  const built = await buildWorkflowBundle({ outPath, buildId: process.env.WORKER_BUILD_ID || undefined });
  process.stdout.write(
    `Workflow bundle ${built.codePath} (build id ${built.manifest.buildId}) in ${((Date.now() - started) / 1000).toFixed(1)} s\n`,
  );
}

main().catch((err: unknown) => {
  process.stderr.write(`workflow bundle failed: ${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
