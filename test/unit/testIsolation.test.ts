import path from 'node:path';
import { loadConfig } from '../../src/config';
import { testStack } from '../setup/stackInfo';

const ROOT = path.resolve(__dirname, '../..');

/**
 * `npm start` leaves its stack file and a development PROVIDER_SECRETS_KEY in the checkout's
 * `.data/`; a test process (and every CLI, API or worker it spawns) must read neither.
 */
describe('tests and the user data directory', () => {
  it('every process of the run resolves DATA_DIR to the run temp directory, never the checkout .data', () => {
    const config = loadConfig(process.env);
    expect(config.dataDir).not.toBe(path.join(ROOT, '.data'));
    expect(config.dataDir.startsWith(testStack().dir + path.sep)).toBe(true);
  });
});
