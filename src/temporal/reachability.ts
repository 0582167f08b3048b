import type { Client } from '@temporalio/client';

/**
 * Tells "Temporal is unreachable" apart from "a worker or the provider is slow" after a bounded
 * wait ran out: one cheap RPC that needs no worker.
 */
export async function temporalReachable(client: Client): Promise<boolean> {
  try {
    await client.withDeadline(Date.now() + 1000, () => client.workflowService.getSystemInfo({}));
    return true;
  } catch {
    return false;
  }
}
