import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startEmbeddedPostgres } from '../../dev/infra/embeddedPostgres';
import { startTemporal } from '../../dev/infra/temporal';
import { openOrm, migrate } from '../../src/db/orm';
import { buildWorkflowBundle, loadWorkflowBundle } from '../../src/workflowBundle';
import { TEST_STACK_ENV, type TestStack } from './stackInfo';
import { freeLoopbackPort } from '../../dev/infra/ports';
import { locateStripeMock, startStripeMock, writeSettledFixtures } from '../../dev/infra/stripeMock';

/**
 * Once per jest run: a real PostgreSQL (throw-away cluster), a real Temporal dev server
 * (in memory, headless), stripe-mock (Stripe's mock server, built with Go on first use),
 * migrations, and the workflow bundle, built by the same function as `npm run build`
 * (src/workflowBundle.ts). Test files share them and isolate themselves by
 * task queue and by the merchants they create.
 */
export default async function globalSetup(): Promise<void> {
  const log = (msg: string) => process.stderr.write(`[test stack] ${msg}\n`);
  const started = Date.now();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'payments-test-'));
  fs.chmodSync(dir, 0o755);

  const [pgPort, temporalPort] = [await freeLoopbackPort(), await freeLoopbackPort()];
  const [pg, temporal, [stripeMock, settledStripeMock], bundle] = await Promise.all([
    startEmbeddedPostgres({ dir: path.join(dir, 'pg'), port: pgPort, database: 'payments_test', ephemeral: true }),
    startTemporal({ port: temporalPort, log }),
    // Two: its bundled fixtures, and fixtures edited so that what is created comes back settled.
    locateStripeMock(log).then(async (binPath) =>
      Promise.all([
        startStripeMock({ binPath, dir: path.join(dir, 'stripe-mock') }),
        startStripeMock({
          binPath,
          dir: path.join(dir, 'stripe-mock-settled'),
          fixturesPath: await writeSettledFixtures(path.join(dir, 'stripe-mock-settled')),
        }),
      ]),
    ),
    // WORKFLOW_BUNDLE_PATH (e.g. dist/workflow-bundle.js after `npm run build`): test that artifact.
    process.env.WORKFLOW_BUNDLE_PATH
      ? loadWorkflowBundle(process.env.WORKFLOW_BUNDLE_PATH)
      : buildWorkflowBundle({ outPath: path.join(dir, 'workflow-bundle.js'), onError: log }),
  ]);
  const orm = await openOrm({ databaseUrl: pg.databaseUrl, poolMax: 2 });
  await migrate(orm);
  await orm.close();

  const stack: TestStack = {
    dir,
    databaseUrl: pg.databaseUrl,
    temporalAddress: temporal.address,
    stripeApiBase: stripeMock.apiBase,
    settledStripeApiBase: settledStripeMock.apiBase,
    workflowBundlePath: bundle.codePath,
  };
  // Test workers are forked after this, so they inherit it.
  process.env[TEST_STACK_ENV] = JSON.stringify(stack);
  // Never the user's data directory: a `npm start` in the same checkout leaves its stack file and
  // development PROVIDER_SECRETS_KEY in .data/, which every process of the tests would otherwise read.
  process.env.DATA_DIR = path.join(dir, 'data');
  fs.mkdirSync(process.env.DATA_DIR);
  (globalThis as Record<string, unknown>).__testStackStop = async () => {
    await Promise.all([stripeMock.stop(), settledStripeMock.stop()]);
    await temporal.stop();
    await pg.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  };
  log(
    `ready in ${((Date.now() - started) / 1000).toFixed(1)} s (PostgreSQL :${pgPort}, Temporal ${temporal.address}, stripe-mock ${stripeMock.apiBase})`,
  );
}
