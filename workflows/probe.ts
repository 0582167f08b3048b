import { proxyActivities, workflowInfo, setWorkflowOptions } from '@temporalio/workflow';
import { pinnedWhenVersioned } from './versioning';
import type { Activities } from '../activities';

const { probeDatabase } = proxyActivities<Activities>({
  startToCloseTimeout: '10 seconds',
  retry: { maximumAttempts: 3 },
});

export interface ProbeResult {
  workflowId: string;
  databaseTime: string;
  echo: string;
}

/**
 * A diagnostic round trip: workflow -> activity -> PostgreSQL -> back. Proves a worker is
 * polling the task queue with working activities. Operators can start it from the UI/CLI.
 */
export async function probeWorkflow(echo: string): Promise<ProbeResult> {
  const databaseTime = await probeDatabase();
  return { workflowId: workflowInfo().workflowId, databaseTime, echo };
}
setWorkflowOptions(pinnedWhenVersioned, probeWorkflow);
