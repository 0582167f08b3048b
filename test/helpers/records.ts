import type { EntityManager } from '@mikro-orm/postgresql';
import { Merchant, Payment } from '../../src/db/entities';
import { newId } from '../../src/ids';

/**
 * A payment row as a test needs it, written straight to PostgreSQL (records the API cannot make
 * today: a live key's payment, one whose processor is gone, one with a given event). Defaults: a
 * `created` 10.00 USD test payment of the sandbox; the caller flushes.
 */
export function paymentRow(em: EntityManager, merchantId: string, overrides: Partial<Payment> = {}): Payment {
  const now = new Date();
  return em.create(Payment, {
    id: newId('payment'),
    merchant: em.getReference(Merchant, merchantId),
    externalId: `row-${now.getTime()}-${Math.random()}`,
    environment: 'test',
    processor: 'sandbox',
    amountMinor: 1000,
    currency: 'USD',
    status: 'created',
    amountRefundedMinor: 0,
    amountPendingRefundMinor: 0,
    amountDisputedMinor: 0,
    openDisputes: 0,
    providerTransactionId: null,
    redirectUrl: null,
    cardToken: null,
    saveCardEnabled: false,
    savedCardToken: null,
    customer: { email: 'c@example.com' },
    billing: null,
    metadata: null,
    description: null,
    callbackUrl: null,
    returnUrl: null,
    failureCode: null,
    failureMessage: null,
    expiresAt: new Date(now.getTime() + 86_400_000),
    createdAt: now,
    updatedAt: now,
    ...overrides,
  });
}
