import fs from 'node:fs';
import path from 'node:path';
import { Worker } from '@temporalio/worker';
import { historyFromJSON } from '@temporalio/common/lib/proto-utils';
import { testStack } from '../setup/stackInfo';
import '../helpers/stack'; // installs the quiet SDK logger

/**
 * Replays recorded histories (test/replay/histories, made by scripts/record-histories.ts)
 * against today's workflow code. A change that would break workflows already running in
 * production fails here: version it with `patched()` instead of re-recording.
 */
const DIR = path.resolve(__dirname, '../replay/histories');
const files = fs.readdirSync(DIR).filter((f) => f.endsWith('.json'));

describe('workflow replay', () => {
  it('has recorded histories for every workflow type', () => {
    const types = new Set(files.map((f) => f.split('-')[0]));
    expect([...types].sort()).toEqual(expect.arrayContaining(['payment', 'refund']));
    expect(files.length).toBeGreaterThanOrEqual(11);
  });

  it.each(files)('replays %s deterministically', async (file) => {
    const history = historyFromJSON(JSON.parse(fs.readFileSync(path.join(DIR, file), 'utf8')));
    await Worker.runReplayHistory({ workflowBundle: { codePath: testStack().workflowBundlePath } }, history, file);
  });
});
