import { z } from 'zod';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Client } from '@temporalio/client';
import { AppError } from '../../errors';
import { isId } from '../../ids';
import { CARD_UPDATABLE_STATUSES, findSubscriptionView, type SubscriptionResponse } from '../../domain/subscriptions';
import { paymentMethodUpdateId, SubscriptionGateway } from '../../temporal/subscriptionGateway';
import { CARD_TOKEN_MAX_LENGTH } from '../../../workflows/subscriptionApi';
import { AUTH_ERRORS, defineRoute } from '../routing';
import { providerRejection } from '../providerRejection';
import { providerTrouble, workflowServiceUnavailable } from '../temporalOutcome';
import { subscriptionSchema, type SubscriptionSettings } from './subscriptions';

export const paymentMethodBody = z
  .object({
    cardToken: z
      .string()
      .min(1)
      .max(CARD_TOKEN_MAX_LENGTH)
      .optional()
      .describe('the new saved-card token; without, the customer enters a card at the answer’s `redirectUrl`'),
  })
  .strict();

const params = z.object({ subscriptionId: z.string() });

const notFound = () => new AppError('not_found', 'Subscription not found.');

const notUpdatable = (view: SubscriptionResponse) =>
  new AppError(
    'subscription_not_updatable',
    `Only an active or past_due subscription takes a new card; this one is ${view.status}.`,
    { status: view.status },
  );

/**
 * POST /subscriptions/{subscriptionId}/payment-method (PRODUCT.md "Subscription card update"):
 * an Update of the subscription's workflow, which verifies and keeps the card (a past_due
 * subscription is charged at once with it) or opens a hosted page; the API starts nothing and
 * answers the subscription from PostgreSQL.
 */
export function subscriptionPaymentMethodRoutes(deps: {
  em: EntityManager;
  client: Client;
  settings: SubscriptionSettings;
}) {
  const gateway = new SubscriptionGateway(deps.client, { ...deps.settings, waitMs: deps.settings.paymentWaitMs });
  return [
    defineRoute({
      method: 'post',
      path: '/subscriptions/{subscriptionId}/payment-method',
      operationId: 'updateSubscriptionPaymentMethod',
      tag: 'Subscriptions',
      summary: 'Replace the card of an active or past_due subscription (a token, or a hosted page).',
      description:
        'With `cardToken` the provider verifies the card (no money moves) and it is charged from the next attempt on; a `past_due` subscription is charged at once with it (the open invoice’s next attempt), and the answer shows the outcome; the retry schedule restarts only if that charge is declined. With `{}` the answer carries a `redirectUrl` where the customer enters a card; the old card is charged until they complete it (a `past_due` subscription is then charged at once). A repeat of the same request changes nothing more. Other statuses: 409 `subscription_not_updatable`.',
      params,
      body: paymentMethodBody,
      response: subscriptionSchema,
      errors: {
        400: ['validation_error', 'invalid_card_token', 'provider_rejected'],
        ...AUTH_ERRORS,
        404: ['not_found'],
        409: ['subscription_not_updatable'],
        500: ['provider_not_configured'],
        503: ['provider_unavailable', 'service_unavailable'],
      },
      handler: async ({ params, body, caller }) => {
        if (!isId('subscription', params.subscriptionId)) throw notFound();
        const before = await findSubscriptionView(deps.em, params.subscriptionId, caller);
        if (!before) throw notFound();
        if (!CARD_UPDATABLE_STATUSES.includes(before.status)) throw notUpdatable(before);
        const req = body.cardToken ? { cardToken: body.cardToken } : {};
        const result = await gateway.updatePaymentMethod(
          params.subscriptionId,
          req,
          paymentMethodUpdateId(before.updatedAt, req),
        );
        const after = await findSubscriptionView(deps.em, params.subscriptionId, caller);
        if (!after) throw notFound();
        if (result === 'refused' || (typeof result === 'object' && result.kind === 'not_updatable')) {
          throw notUpdatable(after);
        }
        if (result === 'accepted') {
          throw workflowServiceUnavailable(
            'The card update is accepted and not finished yet (workers busy, or the provider slow for a past_due charge); it takes effect without another request. Repeat the request to see the result.',
            { subscription: after, paymentMethod: 'accepted' },
          );
        }
        if (result === 'no_answer') {
          throw workflowServiceUnavailable(
            'The workflow service did not answer in time; nothing was decided yet. Repeat the request to see the result.',
            { subscription: after },
          );
        }
        switch (result.kind) {
          case 'rejected':
            throw providerRejection(result);
          case 'provider_unavailable':
            throw providerTrouble(
              result.kind,
              'The payment provider could not verify the card in time; nothing changed. Retry the request.',
              { subscription: after },
              { 'Retry-After': '1' },
            );
          default:
            return after;
        }
      },
    }),
  ];
}
