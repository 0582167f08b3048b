import Router from '@koa/router';
import type { Client } from '@temporalio/client';
import { WorkflowNotFoundError } from '@temporalio/client';
import type { Context } from 'koa';
import { AppError } from '../../errors';
import type { Logger } from '../../logger';
import type { ProviderRegistry } from '../../providers/registry';
import { ProviderWebhookError } from '../../providers/errors';
import type { PaymentProvider, ProviderWebhookEvent } from '../../providers/types';
import { paymentWorkflowId, providerPaymentEventSignal } from '../../../workflows/paymentApi';
import { providerRefundEventSignal, refundWorkflowId } from '../../../workflows/refundApi';
import { providerSubscriptionEventSignal, subscriptionWorkflowId } from '../../../workflows/subscriptionApi';
import type { AppState } from '../context';
import { MAX_BODY_BYTES, readLimited } from '../middleware/jsonBody';

const invalidSignature = () => new AppError('invalid_signature', 'The webhook signature does not verify.');

/**
 * The first provider whose secret verifies the raw body, and its event. None: 400
 * `invalid_signature` (also when no provider could have signed it, so nothing is revealed).
 */
function verified(
  providers: PaymentProvider[],
  raw: string,
  headers: Context['req']['headers'],
): { provider: PaymentProvider; event: ProviderWebhookEvent } {
  for (const provider of providers) {
    try {
      return { provider, event: provider.parseWebhook(raw, headers) };
    } catch (err) {
      if (!(err instanceof ProviderWebhookError)) throw err;
    }
  }
  throw invalidSignature();
}

/**
 * Provider webhooks: verified by signature (no merchant auth), then handed to the workflow as a
 * signal. The payload is only a hint: the workflow asks the provider for the state itself.
 *
 * - `/webhooks/sandbox`: the built-in sandbox, one secret for the platform.
 * - `/webhooks/stripe/{merchantId}`: Stripe, signed with that merchant's webhook secret (its
 *   test and live configurations may each have one: either verifies).
 */
export function webhookRoutes(deps: { client: Client; providers: ProviderRegistry; logger: Logger }): Router<AppState> {
  const router = new Router<AppState>();

  const deliver = async (ctx: Context & { state: AppState }, processor: string, event: ProviderWebhookEvent) => {
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
    ctx.state.log.info(
      { processor, type: event.type, kind: event.kind, workflowId: target?.id ?? null },
      'provider webhook',
    );
    ctx.body = { received: true };
  };

  router.post('/webhooks/stripe/:merchantId', async (ctx) => {
    const raw = await readLimited(ctx.req, MAX_BODY_BYTES);
    const candidates = await deps.providers.stripeWebhookCandidates(ctx.params.merchantId!);
    const { event } = verified(
      candidates.map((c) => c.provider),
      raw,
      ctx.req.headers,
    );
    await deliver(ctx, 'stripe', event);
  });

  router.post('/webhooks/:processor', async (ctx) => {
    const provider = deps.providers.builtIn(ctx.params.processor!);
    if (!provider) throw new AppError('not_found', 'Route not found.');
    const raw = await readLimited(ctx.req, MAX_BODY_BYTES);
    await deliver(ctx, provider.name, verified([provider], raw, ctx.req.headers).event);
  });
  return router;
}
