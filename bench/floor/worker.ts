import os from 'node:os';
import { DefaultLogger, NativeConnection, Runtime, Worker } from '@temporalio/worker';
import { Pool } from 'pg';
import { WORKFLOW_TASK_POLLING } from '../../src/temporal/workflowTaskPolling';
import { createFloorActivities } from './activities';

/**
 * The floor's worker process (bench/floor/stack.ts spawns it as bench/run.ts spawns the product
 * worker): the SDK's default worker options but the product's workflow-task polling, on its own
 * task queue, the bundle built once by the bench, one no-op activity. No logger beyond the SDK's
 * warnings. The work floor's `charge` has a pool of 10 (the product worker's DATABASE_POOL_MAX in
 * the bench) when FLOOR_DATABASE_URL and FLOOR_SANDBOX_URL are set.
 *
 * Env: TEMPORAL_ADDRESS, FLOOR_TASK_QUEUE, FLOOR_BUNDLE_PATH; FLOOR_DATABASE_URL, FLOOR_SANDBOX_URL,
 * FLOOR_SANDBOX_API_KEY (optional); NODE_OPTIONS as the bench sets it.
 */
const address = process.env.TEMPORAL_ADDRESS;
const taskQueue = process.env.FLOOR_TASK_QUEUE;
const codePath = process.env.FLOOR_BUNDLE_PATH;
if (!address || !taskQueue || !codePath) {
  process.stderr.write('floor worker: TEMPORAL_ADDRESS, FLOOR_TASK_QUEUE and FLOOR_BUNDLE_PATH are required\n');
  process.exit(78);
}

async function main(): Promise<void> {
  Runtime.install({ logger: new DefaultLogger('WARN'), shutdownSignals: ['SIGINT', 'SIGTERM'] });
  const connection = await NativeConnection.connect({ address });
  const databaseUrl = process.env.FLOOR_DATABASE_URL;
  const sandboxUrl = process.env.FLOOR_SANDBOX_URL;
  const pool = databaseUrl ? new Pool({ connectionString: databaseUrl, max: 10 }) : undefined;
  const work =
    pool && sandboxUrl ? { pool, sandboxUrl, sandboxApiKey: process.env.FLOOR_SANDBOX_API_KEY ?? '' } : undefined;
  const worker = await Worker.create({
    connection,
    taskQueue: taskQueue!,
    workflowBundle: { codePath: codePath! },
    activities: createFloorActivities(work),
    // The product worker's workflow-task polling (pollers for every task-queue partition).
    ...WORKFLOW_TASK_POLLING,
    identity: `floor-worker-${process.pid}@${os.hostname()}`,
  });
  process.stdout.write(`floor worker polling ${taskQueue}\n`);
  await worker.run();
  await pool?.end();
  await connection.close();
}

main().catch((err: unknown) => {
  process.stderr.write(`floor worker failed: ${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
