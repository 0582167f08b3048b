import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { WORKER_NODE_ARGS } from '../../dev/stack/stackParts';
import { testStack } from '../setup/stackInfo';
import {
  SANDBOX_API_KEY,
  SANDBOX_WEBHOOK_SECRET,
  TEST_PROVIDER_SECRETS_KEY,
  TEST_PAYLOAD_KEYS,
  testMerchants,
  type PaymentStack,
} from './stack';

const ROOT = path.resolve(__dirname, '../..');

/**
 * The product's worker (`src/main/worker.ts`) as a child process on the stack's task queue, with
 * the product's Node flags, so a test can kill it with SIGKILL mid-work, as a crash would.
 */
export function startWorkerProcess(
  stack: PaymentStack,
  dataDir: string,
  extraEnv: NodeJS.ProcessEnv = {},
): ChildProcess {
  return spawn(process.execPath, [...WORKER_NODE_ARGS, '--import', 'tsx', 'src/main/worker.ts'], {
    cwd: ROOT,
    stdio: 'ignore',
    env: {
      ...process.env,
      DATA_DIR: dataDir,
      DATABASE_URL: testStack().databaseUrl,
      TEMPORAL_ADDRESS: testStack().temporalAddress,
      TEMPORAL_TASK_QUEUE: stack.taskQueue,
      SANDBOX_URL: stack.sandboxUrl,
      SANDBOX_API_KEY,
      SANDBOX_WEBHOOK_SECRET,
      // The test file's key, as its in-process workers have: signing secrets they sealed open here.
      PROVIDER_SECRETS_KEY: TEST_PROVIDER_SECRETS_KEY,
      TEMPORAL_PAYLOAD_KEYS: TEST_PAYLOAD_KEYS,
      PUBLIC_BASE_URL: stack.api.baseUrl,
      PROVIDER_TIMEOUT_MS: '8000',
      LOG_LEVEL: 'silent',
      // Unversioned, like the in-process test workers it takes over from on the same task
      // queue (versioned workers: test/integration/deployVersioning.test.ts).
      WORKER_VERSIONING: 'false',
      // Test files run side by side: no fixed metrics port (test/integration/metrics.test.ts sets one).
      WORKER_METRICS_PORT: '0',
      // Test files share one database: this process wakes only this file's merchants' deliveries.
      EVENT_DELIVERY_MERCHANTS: testMerchants().join(','),
      ...extraEnv,
    },
  });
}
