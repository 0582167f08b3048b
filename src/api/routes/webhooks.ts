import Router from '@koa/router';
import type { Context } from 'koa';
import type { EntityManager } from '@mikro-orm/postgresql';
import { AppError } from '../../errors';
import type { Logger } from '../../logger';
import type { ProviderRegistry } from '../../providers/registry';
import { ProviderWebhookError } from '../../providers/errors';
import type { PaymentProvider, ProviderWebhookEvent } from '../../providers/types';
import { ProviderMismatchError } from '../../providers/errors';
import { recordProviderDispute, type DisputedPaymentRef } from '../../domain/disputes';
import type { DisputeGateway } from '../../temporal/disputeGateway';
import type { PaymentGateway } from '../../temporal/paymentGateway';
import type { RefundGateway } from '../../temporal/refundGateway';
import type { SubscriptionGateway } from '../../temporal/subscriptionGateway';
import type { KeyEnvironment } from '../../db/entities';
import type { RecordScope } from '../../domain/scope';
import { webhookMayWake } from '../../domain/webhookTargets';
import type { AppState } from '../context';
import { MAX_BODY_BYTES, readLimited } from '../middleware/jsonBody';
import { limitRefusals } from '../middleware/addressLimit';
import type { RateLimiter } from '../rateLimiter';
import { isId } from '../../ids';
import { addSetupCard } from '../../app/customers';

const invalidSignature = () => new AppError('invalid_signature', 'The webhook signature does not verify.');

/**
 * The providers whose secret verifies the raw body, and the event: the one of the event's own mode
 * when it says (a merchant may have given its test and live endpoints one secret), else the first.
 * None: 400 `invalid_signature` (also when no provider could have signed it, so nothing is revealed).
 */
function verified<C extends { provider: PaymentProvider; environment?: KeyEnvironment }>(
  candidates: C[],
  raw: string,
  headers: Context['req']['headers'],
): C & { event: ProviderWebhookEvent } {
  const verifiedBy: Array<C & { event: ProviderWebhookEvent }> = [];
  for (const candidate of candidates) {
    try {
      verifiedBy.push({ ...candidate, event: candidate.provider.parseWebhook(raw, headers) });
    } catch (err) {
      if (!(err instanceof ProviderWebhookError)) throw err;
    }
  }
  const first = verifiedBy.find((v) => sameMode(v.event, v.environment)) ?? verifiedBy[0];
  if (!first) throw invalidSignature();
  return first;
}

/** Whether an event's own mode (when it says) is the environment's: live events for live only. */
const sameMode = (event: ProviderWebhookEvent, environment: KeyEnvironment | undefined): boolean =>
  event.livemode === undefined || environment === undefined || event.livemode === (environment === 'live');

/**
 * Provider webhooks: verified by signature (no merchant auth), then handed to the workflow as a
 * signal. The payload is only a hint: the workflow asks the provider for the state itself.
 *
 * - `/webhooks/sandbox`: the built-in sandbox, one secret for the whole service.
 * - `/webhooks/stripe/{merchantId}`: Stripe, signed with that merchant's webhook secret (its
 *   test and live configurations may each have one: either verifies). The event wakes only a
 *   record of that merchant, in the environment of the secret that verified it, and only when
 *   its `livemode` is that environment's (decision 0058); anything else is acknowledged and
 *   routed nowhere, logged. A replayed event only wakes a workflow that asks Stripe again.
 */
export function webhookRoutes(deps: {
  em: EntityManager;
  payments: Pick<PaymentGateway, 'workflowId' | 'providerEvent'>;
  refunds: Pick<RefundGateway, 'workflowId' | 'providerEvent'>;
  subscriptions: Pick<SubscriptionGateway, 'workflowId' | 'providerEvent' | 'invoiceEvent' | 'customerCard'>;
  disputes: Pick<DisputeGateway, 'workflowId' | 'startOrSignal'>;
  providers: ProviderRegistry;
  logger: Logger;
  /** Refused webhooks per client address (decision 0081); absent: no limit. */
  limiter?: RateLimiter;
}): Router<AppState> {
  const limited = limitRefusals(deps.limiter);
  const router = new Router<AppState>();
  const invoiceEvents = {
    workflowId: deps.subscriptions.workflowId,
    providerEvent: deps.subscriptions.invoiceEvent,
  };

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

  /**
   * Wakes the workflow of the record the event names. `scope` (a merchant's own secret verified
   * it): only a record of that merchant, environment and processor; any other is routed nowhere.
   */
  const deliver = async (
    ctx: Context & { state: AppState },
    processor: string,
    event: ProviderWebhookEvent,
    scope?: RecordScope,
  ) => {
    if (event.kind === 'dispute') {
      const ref: DisputedPaymentRef =
        processor === 'stripe'
          ? { processor, ...(scope ? { merchantId: scope.merchantId, environment: scope.environment } : {}) }
          : { processor, ...(event.metadata.paymentId ? { paymentId: event.metadata.paymentId } : {}) };
      return deliverDispute(ctx, event, ref);
    }
    if (
      event.kind === 'payment' &&
      event.metadata.customerId &&
      event.metadata.paymentMethodId &&
      !event.metadata.paymentId &&
      !event.metadata.subscriptionId
    ) {
      // A customer's card setup page (decision 0087): no workflow; the card is kept here.
      const outcome = await addSetupCard(
        { em: deps.em, providers: deps.providers, logger: deps.logger, subscriptions: deps.subscriptions },
        processor,
        { transactionId: event.payment.transactionId, metadata: event.metadata },
        scope,
      );
      ctx.state.log.info(
        { processor, type: event.type, customerId: event.metadata.customerId, outcome },
        'provider webhook: card setup',
      );
      ctx.body = { received: true };
      return;
    }
    const named =
      event.kind === 'payment' && event.metadata.paymentId
        ? { kind: 'payment' as const, gateway: deps.payments, id: event.metadata.paymentId }
        : event.kind === 'payment' && event.metadata.subscriptionId && !event.metadata.invoiceId
          ? { kind: 'subscription' as const, gateway: deps.subscriptions, id: event.metadata.subscriptionId }
          : event.kind === 'payment' && event.metadata.subscriptionId
            ? // An invoice charge (authenticated, settled): the subscription's workflow asks about it.
              { kind: 'subscription' as const, gateway: invoiceEvents, id: event.metadata.subscriptionId }
            : event.kind === 'refund' && event.metadata.refundId
              ? { kind: 'refund' as const, gateway: deps.refunds, id: event.metadata.refundId }
              : undefined;
    const foreign = named && scope ? !(await webhookMayWake(deps.em, { ...scope, processor }, named)) : false;
    const target = foreign ? undefined : named;
    // A closed workflow has already settled its record; the event is a late duplicate.
    if (target) await target.gateway.providerEvent(target.id);
    const fields = {
      processor,
      type: event.type,
      kind: event.kind,
      ...(scope ?? {}),
      workflowId: target ? target.gateway.workflowId(target.id) : null,
    };
    if (foreign) {
      ctx.state.log.warn(
        { ...fields, named: `${named!.kind} ${named!.id}` },
        "provider webhook names a record not of the verifying secret's merchant and environment: routed nowhere",
      );
    } else if (event.kind === 'ignored' && event.reason) {
      ctx.state.log.warn({ ...fields, reason: event.reason }, 'provider webhook not readable: routed nowhere');
    } else {
      ctx.state.log.info(fields, 'provider webhook');
    }
    ctx.body = { received: true };
  };

  router.post('/webhooks/stripe/:merchantId', limited, async (ctx) => {
    const merchantId = ctx.params.merchantId!;
    // Checked before anything reads the database: a malformed id is no merchant's (decision 0081).
    if (!isId('merchant', merchantId)) throw new AppError('not_found', 'Route not found.');
    const raw = await readLimited(ctx.req, MAX_BODY_BYTES);
    const candidates = await deps.providers.stripeWebhookCandidates(merchantId);
    const { event, environment } = verified(candidates, raw, ctx.req.headers);
    if (!sameMode(event, environment)) {
      // A test-mode event under a live secret, or the reverse: acknowledged (Stripe stops
      // resending), routed nowhere, and logged for the operator (the endpoints are crossed).
      ctx.state.log.warn(
        { processor: 'stripe', merchantId, environment, livemode: event.livemode, type: event.type },
        "Stripe webhook of the other mode than its secret's environment: routed nowhere",
      );
      ctx.body = { received: true };
      return;
    }
    await deliver(ctx, 'stripe', event, { merchantId, environment });
  });

  router.post('/webhooks/:processor', limited, async (ctx) => {
    const provider = deps.providers.builtIn(ctx.params.processor!);
    if (!provider) throw new AppError('not_found', 'Route not found.');
    const raw = await readLimited(ctx.req, MAX_BODY_BYTES);
    await deliver(ctx, provider.name, verified([{ provider }], raw, ctx.req.headers).event);
  });
  return router;
}
