import { Context } from '@temporalio/activity';
import { Refund } from '../src/db/entities';
import type { ActivityDeps } from './deps';

/** How long a refund row may take to appear before its transaction counts as rolled back. */
const RECORDED_WAIT_MS = 60_000;
const POLL_MS = 250;

export function createRefundRecordActivities({ orm }: ActivityDeps) {
  return {
    /**
     * Waits for a refund row an API of the old code is still committing (it started the workflow
     * inside its transaction): polls PostgreSQL for up to a minute, heartbeating. `missing`
     * after that: the transaction rolled back. A database error fails the attempt, and the
     * workflow's retry policy waits the outage out.
     */
    async awaitRefundRecorded(refundId: string): Promise<'pending' | 'settled' | 'missing'> {
      const ctx = Context.current();
      const deadline = Date.now() + RECORDED_WAIT_MS;
      for (;;) {
        const refund = await orm.em.fork().findOne(Refund, { id: refundId }, { fields: ['status'] });
        if (refund) return refund.status === 'pending' ? 'pending' : 'settled';
        if (Date.now() >= deadline) return 'missing';
        ctx.heartbeat();
        await ctx.sleep(POLL_MS);
      }
    },
  };
}
