import { proxyActivities } from '@temporalio/workflow';
import type { Activities } from '../activities';

const visibility = proxyActivities<Activities>({
  startToCloseTimeout: '90 seconds',
  heartbeatTimeout: '10 seconds',
  // A database outage is waited out, however long: giving up would strand the record.
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute' },
});

/**
 * Waits until the row this workflow works on is visible. The API starts workflows after its
 * commit, so the row is there at once; workflows started by an older API inside its transaction
 * may look before the commit. One activity polls for up to a minute (one history entry however
 * long it looks); false means the transaction rolled back and there is nothing to do.
 */
export async function awaitRecordVisible(kind: 'subscription' | 'refund', id: string): Promise<boolean> {
  return visibility.awaitRecordVisible({ kind, id, waitMs: 60_000 });
}
