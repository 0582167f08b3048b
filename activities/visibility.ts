import { heartbeat, sleep } from '@temporalio/activity';
import type { ActivityDeps } from './deps';

const TABLES = { subscription: 'subscriptions', refund: 'refunds' } as const;

/**
 * "Is my row there yet?" for workflows that may have been started before the API's commit
 * (older API versions started them inside the transaction). Polls for up to `waitMs`; a database
 * error fails the attempt and the retry policy waits the outage out.
 */
export function createVisibilityActivities({ orm }: ActivityDeps) {
  return {
    async awaitRecordVisible(input: { kind: keyof typeof TABLES; id: string; waitMs: number }): Promise<boolean> {
      const deadline = Date.now() + input.waitMs;
      for (;;) {
        const rows: unknown[] = await orm.em
          .getConnection()
          .execute(`select 1 from ${TABLES[input.kind]} where id = ?`, [input.id]);
        if (rows.length > 0) return true;
        if (Date.now() >= deadline) return false;
        heartbeat();
        await sleep(250);
      }
    },
  };
}
