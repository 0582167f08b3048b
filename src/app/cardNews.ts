import type { EntityManager } from '@mikro-orm/postgresql';
import type { Logger } from '../logger';
import type { PaymentMethod } from '../db/entities';
import { subscriptionsToTellOfCard } from '../domain/customers';

/**
 * What telling of a new card needs of the subscription gateway (src/temporal/subscriptionGateway.ts
 * has it; so do the worker's starters): a structural type, so the worker's activities can tell
 * without importing the gateway (and, through it, the workflows).
 */
export interface CardNewsGateway {
  customerCard(subscriptionId: string, paymentMethodId: string): Promise<'delivered' | 'not_found'>;
}

/** How long the request waits for each subscription to be told of a new card. */
const TELL_WAIT_MS = 3_000;

/**
 * A customer has a new card its subscriptions can charge (attached, set up, made the default),
 * committed: each subscription that may be waiting for one is told (the `customerCard` signal;
 * decision 0088), and one waiting for a new card after a hard decline charges it at once. Best
 * effort: a signal that is not delivered is logged and left (the merchant's card update still
 * ends the wait); it never fails the request.
 */
export async function tellSubscriptionsOfCard(
  deps: { em: EntityManager; subscriptions?: CardNewsGateway; logger?: Logger | undefined },
  method: Pick<PaymentMethod, 'id' | 'processor' | 'hardDeclinedAt' | 'deletedAt'> & { customer: { id: string } },
): Promise<void> {
  const gateway = deps.subscriptions;
  // A method just created has neither field set (undefined).
  if (!gateway || method.hardDeclinedAt || method.deletedAt) return;
  const customerId = method.customer.id;
  let ids: string[];
  try {
    ids = await subscriptionsToTellOfCard(deps.em.fork(), customerId, method.processor);
  } catch (err) {
    deps.logger?.warn({ err, customerId, paymentMethodId: method.id }, 'subscriptions not told of a new card');
    return;
  }
  await Promise.all(
    ids.map(async (subscriptionId) => {
      let timer: NodeJS.Timeout | undefined;
      try {
        const answer = await Promise.race([
          gateway.customerCard(subscriptionId, method.id),
          new Promise<'timeout'>((resolve) => {
            timer = setTimeout(() => resolve('timeout'), TELL_WAIT_MS);
          }),
        ]);
        if (answer !== 'delivered') {
          deps.logger?.info(
            { subscriptionId, paymentMethodId: method.id, answer },
            'subscription not told of a new card',
          );
        }
      } catch (err) {
        deps.logger?.warn({ err, subscriptionId, paymentMethodId: method.id }, 'subscription not told of a new card');
      } finally {
        clearTimeout(timer);
      }
    }),
  );
}
