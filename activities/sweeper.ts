import { WorkflowExecutionAlreadyStartedError } from '@temporalio/client';
import { paymentWorkflow } from '../workflows/payment';
import { paymentWorkflowStartOptions } from '../src/temporal/paymentWorkflowOptions';
import type { ActivityDeps } from './deps';

/**
 * The API inserts a payment, then starts its workflow. If Temporal was unreachable in between
 * (the merchant got a 503) or the API died, the payment has no workflow, so nothing would void
 * it at its expiry. The sweeper starts the workflow of such payments. It never sends the
 * merchant's submit: without a new request the workflow only waits for its expiry and voids
 * (nothing is ever captured without the merchant's request).
 */
export function createSweeperActivities({ orm, client, taskQueue, callbackRetryInitialSeconds }: ActivityDeps) {
  return {
    async startOrphanPaymentWorkflows(olderThanSeconds: number, limit: number): Promise<number> {
      // Candidates: never reached the provider. Most have a running workflow (start is then a no-op).
      const rows: Array<{
        id: string;
        external_id: string;
        merchant_id: string;
        expires_at: Date;
        callback_url: string | null;
      }> = await orm.em.getConnection().execute(
        `select id, external_id, merchant_id, expires_at, callback_url from payments
            where status = 'created' and provider_transaction_id is null
              and created_at < now() - make_interval(secs => ?)
            order by created_at limit ?`,
        [olderThanSeconds, limit],
      );
      for (const row of rows) {
        const options = paymentWorkflowStartOptions(
          {
            id: row.id,
            externalId: row.external_id,
            expiresAt: new Date(row.expires_at),
            callbackUrl: row.callback_url,
            merchant: { id: row.merchant_id },
          },
          { taskQueue, callbackRetryInitialSeconds },
        );
        try {
          await client.workflow.start(paymentWorkflow, options);
        } catch (err) {
          // Closed: the payment was settled or discarded by its own workflow.
          if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
        }
      }
      return rows.length;
    },
  };
}
