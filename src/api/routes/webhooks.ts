import Router from '@koa/router';
import type { Context } from 'koa';
import { AppError } from '../../errors';
import type { Logger } from '../../logger';
import type { ProviderRegistry } from '../../providers/registry';
import { ProviderWebhookError } from '../../providers/errors';
import type { PaymentProvider, ProviderWebhookEvent } from '../../providers/types';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { KeyEnvironment } from '../../db/entities';
import { ProviderMismatchError } from '../../providers/errors';
import { recordProviderDispute, type DisputedPaymentRef } from '../../domain/disputes';
import type { DisputeGateway } from '../../temporal/disputeGateway';
import type { PaymentGateway } from '../../temporal/paymentGateway';
import type { RefundGateway } from '../../temporal/refundGateway';
import type { SubscriptionGateway } from '../../temporal/subscriptionGateway';
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
): { provider: PaymentProvider; event: ProviderWebhookEvent; index: number } {
  for (const [index, provider] of providers.entries()) {
    try {
      return { provider, event: provider.parseWebhook(raw, headers), index };
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
 * - `/webhooks/sandbox`: the built-in sandbox, one secret for the whole service.
 * - `/webhooks/stripe/{merchantId}`: Stripe, signed with that merchant's webhook secret (its
 *   test and live configurations may each have one: either verifies).
 */
export function webhookRoutes(deps: {
  payments: Pick<PaymentGateway, 'workflowId' | 'providerEvent'>;
  refunds: Pick<RefundGateway, 'workflowId' | 'providerEvent'>;
  subscriptions: Pick<SubscriptionGateway, 'workflowId' | 'providerEvent'>;
  disputes: Pick<DisputeGateway, 'workflowId' | 'startOrSignal'>;
  em: EntityManager;
  providers: ProviderRegistry;
  logger: Logger;
}): Router<AppState> {
  const router = new Router<AppState>();

  /**
   * A dispute: recorded (created if new, idempotent on the processor's dispute id) for the
   * payment of the verified merchant and environment (Stripe) or named by the processor's
   * metadata (the sandbox, one account for all merchants), whose transaction is the disputed
   * one; then its workflow is started or told. Anything else is acknowledged and left alone.
   */
  const deliverDispute = async (
    ctx: Context & { state: AppState },
    event: Extract<ProviderWebhookEvent, { kind: 'dispute' }>,
    ref: DisputedPaymentRef,
  ) => {
    let recorded: Awaited<ReturnType<typeof recordProviderDispute>> = null;
    if (ref.paymentId !== undefined || ref.merchantId !== undefined) {
      try {
        recorded = await recordProviderDispute(deps.em.fork(), ref, event.dispute);
      } catch (err) {
        if (!(err instanceof ProviderMismatchError)) throw err;
        ctx.state.log.error({ err, processor: ref.processor }, 'provider dispute does not match its payment');
      }
    }
    const dispute = recorded?.dispute;
    if (dispute) {
      await deps.disputes.startOrSignal({
        id: dispute.id,
        paymentId: dispute.payment.id,
        merchantId: dispute.merchant.id,
        amountMinor: dispute.amountMinor,
        currency: dispute.currency,
        createdAt: dispute.createdAt,
        evidenceDueBy: dispute.evidenceDueBy,
        callbackUrl: dispute.payment.callbackUrl,
      });
    }
    ctx.state.log.info(
      {
        processor: ref.processor,
        type: event.type,
        kind: event.kind,
        workflowId: dispute ? deps.disputes.workflowId(dispute.id) : null,
      },
      'provider webhook',
    );
    ctx.body = { received: true };
  };

  const deliver = async (
    ctx: Context & { state: AppState },
    processor: string,
    event: ProviderWebhookEvent,
    environment?: KeyEnvironment,
  ) => {
    if (event.kind === 'dispute') {
      const ref: DisputedPaymentRef =
        processor === 'stripe'
          ? { processor, merchantId: ctx.params.merchantId, ...(environment ? { environment } : {}) }
          : { processor, ...(event.metadata.paymentId ? { paymentId: event.metadata.paymentId } : {}) };
      return deliverDispute(ctx, event, ref);
    }
    const target =
      event.kind === 'payment' && event.metadata.paymentId
        ? { gateway: deps.payments, id: event.metadata.paymentId }
        : event.kind === 'payment' && event.metadata.subscriptionId && !event.metadata.invoiceId
          ? { gateway: deps.subscriptions, id: event.metadata.subscriptionId }
          : event.kind === 'refund' && event.metadata.refundId
            ? { gateway: deps.refunds, id: event.metadata.refundId }
            : undefined;
    // A closed workflow has already settled its record; the event is a late duplicate.
    if (target) await target.gateway.providerEvent(target.id);
    ctx.state.log.info(
      {
        processor,
        type: event.type,
        kind: event.kind,
        workflowId: target ? target.gateway.workflowId(target.id) : null,
      },
      'provider webhook',
    );
    ctx.body = { received: true };
  };

  router.post('/webhooks/stripe/:merchantId', async (ctx) => {
    const raw = await readLimited(ctx.req, MAX_BODY_BYTES);
    const candidates = await deps.providers.stripeWebhookCandidates(ctx.params.merchantId!);
    const { event, index } = verified(
      candidates.map((c) => c.provider),
      raw,
      ctx.req.headers,
    );
    await deliver(ctx, 'stripe', event, candidates[index]?.environment);
  });

  router.post('/webhooks/:processor', async (ctx) => {
    const provider = deps.providers.builtIn(ctx.params.processor!);
    if (!provider) throw new AppError('not_found', 'Route not found.');
    const raw = await readLimited(ctx.req, MAX_BODY_BYTES);
    await deliver(ctx, provider.name, verified([provider], raw, ctx.req.headers).event);
  });
  return router;
}
