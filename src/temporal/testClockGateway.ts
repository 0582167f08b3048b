import type { Client } from '@temporalio/client';
import { testClockWorkflow } from '../../workflows/testClock';
import { testClockWorkflowId } from '../../workflows/testClockApi';
import { MerchantIdKey } from '../../workflows/searchAttributes';
import { subscriptionTaskQueue } from './taskQueues';

export interface TestClockGatewaySettings {
  /** The main task queue (TEMPORAL_TASK_QUEUE): the advance runs on the subscription queue. */
  taskQueue: string;
}

/**
 * The API's side of a test clock's advance (workflows/testClock.ts, decision 0090): one run per
 * advance under `test-clock-<id>`. The clock's row (`advancing`) is the lock: a run still closing
 * after marking the clock ready has nothing left to do and gives way to the new one.
 */
export function createTestClockGateway(deps: { client: Client; settings: TestClockGatewaySettings }) {
  const { client, settings } = deps;
  return {
    workflowId: testClockWorkflowId,

    async startAdvance(clockId: string, merchantId: string): Promise<void> {
      await client.workflow.start(testClockWorkflow, {
        workflowId: testClockWorkflowId(clockId),
        taskQueue: subscriptionTaskQueue(settings.taskQueue),
        args: [{ clockId }],
        workflowIdReusePolicy: 'ALLOW_DUPLICATE',
        workflowIdConflictPolicy: 'TERMINATE_EXISTING',
        typedSearchAttributes: [{ key: MerchantIdKey, value: merchantId }],
      });
    },
  };
}

export type TestClockGateway = ReturnType<typeof createTestClockGateway>;
