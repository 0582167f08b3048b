import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { testStack } from '../setup/stackInfo';
import { TEST_PAYLOAD_KEYS, TEST_PROVIDER_SECRETS_KEY } from './stack';

const ROOT = path.resolve(__dirname, '../..');

export interface CliResult {
  code: number;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- CLI output is checked field by field
  json: Record<string, any>;
  stdout: string;
  stderr: string;
}

/**
 * Runs the real operator CLI (`--json`) as a separate process against the run's PostgreSQL, as
 * an operator would. `env` adds or (with undefined) removes variables.
 */
export async function runCli(
  args: string[],
  env: Record<string, string | undefined> = {},
  /** Written to the CLI's standard input (then closed). */
  stdin?: string,
): Promise<CliResult> {
  const merged: NodeJS.ProcessEnv = {
    ...process.env,
    DATABASE_URL: testStack().databaseUrl,
    LOG_LEVEL: 'silent',
    PROVIDER_SECRETS_KEY: TEST_PROVIDER_SECRETS_KEY,
    // The key ring of this test file's stacks: the CLI reads their workflows' memos and results.
    TEMPORAL_PAYLOAD_KEYS: TEST_PAYLOAD_KEYS,
  };
  for (const [name, value] of Object.entries(env)) {
    if (value === undefined) delete merged[name];
    else merged[name] = value;
  }
  try {
    const running = promisify(execFile)(process.execPath, ['--import', 'tsx', 'src/cli/index.ts', ...args, '--json'], {
      cwd: ROOT,
      env: merged,
    });
    if (stdin !== undefined) running.child.stdin!.end(stdin);
    const { stdout, stderr } = await running;
    return { code: 0, json: JSON.parse(stdout), stdout, stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, json: JSON.parse(e.stdout), stdout: e.stdout, stderr: e.stderr };
  }
}
