import Router from '@koa/router';
import type { Client } from '@temporalio/client';
import { WorkflowNotFoundError } from '@temporalio/client';
import { AppError } from '../../errors';
import type { Logger } from '../../logger';
import type { ProviderRegistry } from '../../providers/registry';
import { ProviderWebhookError } from '../../providers/errors';
import { paymentWorkflowId, providerPaymentEventSignal } from '../../../workflows/paymentApi';
import { providerRefundEventSignal, refundWorkflowId } from '../../../workflows/refundApi';
import { providerSubscriptionEventSignal, subscriptionWorkflowId } from '../../../workflows/subscriptionApi';
import type { AppState } from '../context';
import { MAX_BODY_BYTES, readLimited } from '../middleware/jsonBody';

/**
 * Provider webhooks: verified by signature (no merchant auth), then handed to the workflow as a
 * signal. The payload is only a hint: the workflow asks the provider for the state itself.
 */
export function webhookRoutes(deps: { client: Client; providers: ProviderRegistry; logger: Logger }): Router<AppState> {
  const router = new Router<AppState>();
  // Built-in processors only (the sandbox): a merchant's own provider (Stripe) has a route per merchant.
  router.post('/webhooks/:processor', async (ctx) => {
    const provider = deps.providers.builtIn(ctx.params.processor!);
    if (!provider) throw new AppError(404, 'not_found', 'Route not found.');
    const raw = await readLimited(ctx.req, MAX_BODY_BYTES);
    let event;
    try {
      event = provider.parseWebhook(raw, ctx.req.headers);
    } catch (err) {
      if (err instanceof ProviderWebhookError)
        throw new AppError(400, 'invalid_signature', 'The webhook signature does not verify.');
      throw err;
    }
    const target =
      event.kind === 'payment' && event.metadata.paymentId
        ? { id: paymentWorkflowId(event.metadata.paymentId), signal: providerPaymentEventSignal }
        : event.kind === 'payment' && event.metadata.subscriptionId && !event.metadata.invoiceId
          ? { id: subscriptionWorkflowId(event.metadata.subscriptionId), signal: providerSubscriptionEventSignal }
          : event.kind === 'refund' && event.metadata.refundId
            ? { id: refundWorkflowId(event.metadata.refundId), signal: providerRefundEventSignal }
            : undefined;
    if (target) {
      try {
        await deps.client.workflow.getHandle(target.id).signal(target.signal);
      } catch (err) {
        // A closed workflow has already settled its record; the event is a late duplicate.
        if (!(err instanceof WorkflowNotFoundError)) throw err;
      }
    }
    ctx.state.log.info({ type: event.type, kind: event.kind, workflowId: target?.id ?? null }, 'provider webhook');
    ctx.body = { received: true };
  });
  return router;
}
