import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';

const ROOT = path.resolve(__dirname, '../..');

/** Starts a real entry point as a separate process, as an operator would, and waits for its exit. */
async function runEntryPoint(entry: string, env: NodeJS.ProcessEnv): Promise<{ code: number; stderr: string }> {
  try {
    const { stderr } = await promisify(execFile)(process.execPath, ['--import', 'tsx', entry], {
      cwd: ROOT,
      env,
      timeout: 30_000,
    });
    return { code: 0, stderr };
  } catch (err) {
    const e = err as { code: number; stderr: string };
    return { code: e.code, stderr: e.stderr };
  }
}

describe('production profile (PRODUCT.md)', () => {
  // Only what a bare shell has: none of the test stack's variables leak in.
  const bareEnv = { PATH: process.env.PATH, HOME: process.env.HOME, NODE_ENV: 'production', DATA_DIR: '/tmp/nowhere' };

  it.each(['src/main/api.ts', 'src/main/worker.ts'])(
    '%s refuses to start on development defaults: exit 78, each variable named',
    async (entry) => {
      const { code, stderr } = await runEntryPoint(entry, bareEnv);
      expect(code).toBe(78);
      for (const name of [
        'SANDBOX_API_KEY',
        'SANDBOX_WEBHOOK_SECRET',
        'SANDBOX_ADMIN_TOKEN',
        'DATABASE_URL',
        'TEMPORAL_ADDRESS',
        'PUBLIC_BASE_URL',
        'CURSOR_SECRET',
        'PROVIDER_SECRETS_KEY',
        'TEMPORAL_PAYLOAD_KEYS',
      ]) {
        expect(stderr).toContain(`  ${name}: `);
      }
      expect(stderr).not.toMatch(/\n\s+at /); // a reason, not a stack trace
    },
  );

  it('dev/sandbox/main.ts refuses its own development defaults, and knows nothing of the product (decision 0086)', async () => {
    const { code, stderr } = await runEntryPoint('dev/sandbox/main.ts', bareEnv);
    expect(code).toBe(78);
    for (const name of ['SANDBOX_API_KEY', 'SANDBOX_WEBHOOK_SECRET', 'SANDBOX_ADMIN_TOKEN']) {
      expect(stderr).toContain(`  ${name}: `);
    }
    // The stand-in processor never reads the product's database or keys.
    for (const name of ['DATABASE_URL', 'TEMPORAL_ADDRESS', 'PROVIDER_SECRETS_KEY', 'CURSOR_SECRET']) {
      expect(stderr).not.toContain(name);
    }
    expect(stderr).not.toMatch(/\n\s+at /);
  });
});
