import fs from 'node:fs';
import path from 'node:path';
import { Worker } from '@temporalio/worker';
import { historyFromJSON } from '@temporalio/common/lib/proto-utils';
import { testStack } from '../setup/stackInfo';
import { loadWorkflowBundle } from '../../src/workflowBundle';
import '../helpers/stack'; // installs the quiet SDK logger

/**
 * Replays recorded histories (test/replay/histories, made by scripts/record-histories.ts)
 * against the built workflow bundle: the artifact `npm run build` ships, made by the same
 * function (test/setup/globalSetup.ts; WORKFLOW_BUNDLE_PATH=dist/workflow-bundle.js replays
 * the built file itself). A change that would break workflows already running in production
 * fails here: version it with `patched()` instead of re-recording.
 */
const DIR = path.resolve(__dirname, '../replay/histories');
const files = fs.readdirSync(DIR).filter((f) => f.endsWith('.json'));

describe('workflow replay', () => {
  // Checked against its manifest: the file replayed is the one the build id names.
  const bundle = loadWorkflowBundle(testStack().workflowBundlePath);

  it('has recorded histories for every workflow type', () => {
    const types = new Set(files.map((f) => f.split('-')[0]));
    expect([...types].sort()).toEqual(expect.arrayContaining(['payment', 'refund', 'subscription']));
    expect(files.length).toBeGreaterThanOrEqual(31);
    // A subscription chain that crossed a continue-as-new: its first run ends in one.
    const firstRun = fs.readFileSync(path.join(DIR, 'subscription-continued-as-new-first-run.json'), 'utf8');
    expect(firstRun).toContain('EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW');
  });

  it.each(files)('replays %s deterministically', async (file) => {
    const history = historyFromJSON(JSON.parse(fs.readFileSync(path.join(DIR, file), 'utf8')));
    await Worker.runReplayHistory({ workflowBundle: { codePath: bundle.codePath } }, history, file);
  });
});
