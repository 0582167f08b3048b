import type { Client } from '@temporalio/client';

/**
 * Tells "Temporal is unreachable" apart from "a worker or the provider is slow" after a bounded
 * wait ran out: one cheap RPC that needs no worker. It names our namespace, so a frontend that
 * does not know it (just restarted, registry not loaded) counts as unreachable too.
 */
export async function temporalReachable(client: Client): Promise<boolean> {
  try {
    await client.withDeadline(Date.now() + 1000, () =>
      client.workflowService.describeNamespace({ namespace: client.options.namespace }),
    );
    return true;
  } catch {
    return false;
  }
}
