import type { EntityManager } from '@mikro-orm/postgresql';
import { MerchantEvent, type Merchant } from '../db/entities';
import { newId } from '../ids';

/** Event types sent to merchants' callbackUrls (PRODUCT.md, Events). */
export type MerchantEventType =
  | 'payment.succeeded'
  | 'payment.failed'
  | 'payment.voided'
  | 'payment.partially_refunded'
  | 'payment.refunded'
  | 'refund.succeeded'
  | 'refund.failed'
  | 'subscription.activated'
  | 'subscription.charge_succeeded'
  | 'subscription.charge_failed'
  | 'subscription.past_due'
  | 'subscription.cancelled';

/**
 * Records an event in the outbox, inside the caller's transaction, so it exists exactly when
 * the state change it reports does. `dedupeKey` makes a retried transaction record it once.
 */
export function recordEvent(
  em: EntityManager,
  input: {
    merchant: Merchant;
    type: MerchantEventType;
    resourceId: string;
    dedupeKey: string;
    callbackUrl: string | null;
    data: unknown;
  },
): MerchantEvent | null {
  if (!input.callbackUrl) return null;
  const id = newId('event');
  const createdAt = new Date();
  return em.create(MerchantEvent, {
    id,
    merchant: input.merchant,
    type: input.type,
    resourceId: input.resourceId,
    dedupeKey: input.dedupeKey,
    callbackUrl: input.callbackUrl,
    payload: { id, type: input.type, createdAt: createdAt.toISOString(), data: input.data },
    attempts: 0,
    deliveredAt: null,
    lastError: null,
    createdAt,
  });
}
