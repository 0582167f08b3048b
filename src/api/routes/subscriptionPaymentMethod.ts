import { z } from 'zod';
import type { EntityManager } from '@mikro-orm/postgresql';
import { AppError } from '../../errors';
import { isId } from '../../ids';
import type { SubscriptionGateway } from '../../temporal/subscriptionGateway';
import { updateSubscriptionPaymentMethod } from '../../app/subscriptions';
import { CARD_TOKEN_MAX_LENGTH } from '../../../workflows/subscriptionApi';
import { AUTH_ERRORS, defineRoute } from '../routing';
import { subscriptionSchema } from './subscriptions';

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

/**
 * POST /subscriptions/{subscriptionId}/payment-method (PRODUCT.md "Subscription card update"):
 * an Update of the subscription's workflow, which verifies and keeps the card (a past_due
 * subscription is charged at once with it) or opens a hosted page; the API starts nothing and
 * answers the subscription from PostgreSQL.
 */
export function subscriptionPaymentMethodRoutes(deps: { em: EntityManager; subscriptions: SubscriptionGateway }) {
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
      errors: [
        'validation_error',
        'invalid_card_token',
        'provider_rejected',
        ...AUTH_ERRORS,
        'not_found',
        'subscription_not_updatable',
        'provider_not_configured',
        'provider_unavailable',
        'service_unavailable',
      ],
      handler: async ({ params, body, caller }) => {
        if (!isId('subscription', params.subscriptionId)) throw notFound();
        return updateSubscriptionPaymentMethod(deps, caller, params.subscriptionId, body);
      },
    }),
  ];
}
