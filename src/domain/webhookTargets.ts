import type { EntityManager } from '@mikro-orm/postgresql';
import { Payment, Refund, Subscription } from '../db/entities';
import type { RecordScope } from './scope';

/** A record a provider webhook names (by the ids in its metadata). */
export interface WebhookTarget {
  kind: 'payment' | 'refund' | 'subscription';
  id: string;
}

/**
 * Whether the record a verified webhook names is one it may wake (decision 0058): of the merchant
 * whose secret verified it, in that secret's environment, served by that processor. Anything else
 * (another merchant's record, the other environment's, a sandbox record named in a Stripe event,
 * no such record) is answered false: the event is acknowledged and routed nowhere.
 */
export async function webhookMayWake(
  em: EntityManager,
  scope: RecordScope & { processor: string },
  target: WebhookTarget,
): Promise<boolean> {
  const fork = em.fork();
  const owned = { merchant: scope.merchantId, environment: scope.environment, processor: scope.processor };
  switch (target.kind) {
    case 'payment':
      return (await fork.count(Payment, { id: target.id, ...owned })) > 0;
    case 'subscription':
      return (await fork.count(Subscription, { id: target.id, ...owned })) > 0;
    case 'refund':
      return (await fork.count(Refund, { id: target.id, merchant: scope.merchantId, payment: owned })) > 0;
  }
}
