import { ApplicationFailure } from '@temporalio/activity';
import { Subscription, type Invoice } from '../../src/db/entities';
import {
  CARD_UPDATABLE_STATUSES,
  type ChargeResult,
  type InvoiceForCharge,
  type SubscriptionForCharge,
} from '../../src/domain/subscriptions';
import type { Logger } from '../../src/logger';
import type { EmailProfile } from '../../src/domain/emails';
import { invoiceAttemptKey } from '../../src/rules/subscriptionPlan';
import type { CreatePaymentInput, PaymentLookup, PaymentProvider, ProviderPayment } from '../../src/providers/types';
import type { ActivityDeps } from '../deps';
import { recordProvider } from '../recordProvider';
import { PROVIDER_NOT_CONFIGURED, RECONCILIATION_MISMATCH } from '../../src/rules/providerFailures';

/** Where the subscription emails these activities record go (decision 0066). */
export function emailProfileOf(deps: Pick<ActivityDeps, 'productionProfile'>): EmailProfile {
  return { production: deps.productionProfile === true };
}

/** What every concern reads first: the subscription record, and the provider of its processor. */
export function subscriptionRecords({ orm, providers }: Pick<ActivityDeps, 'orm' | 'providers'>) {
  return {
    load: (id: string) => orm.em.fork().findOne(Subscription, { id }),
    providerOf: async (s: Subscription): Promise<PaymentProvider> => {
      const provider = await recordProvider(providers, s);
      // Retried (never a failed workflow): the merchant may configure the processor again.
      if (!provider) throw ApplicationFailure.retryable(`no provider ${s.processor}`, PROVIDER_NOT_CONFIGURED);
      return provider;
    },
  };
}

/** The metadata of a provider call for a subscription (and one of its invoices). */
export const metadataOf = (
  s: Pick<SubscriptionForCharge, 'id' | 'merchant'> & { paymentMethodId?: string | null },
  invoiceId?: string,
) => ({
  subscriptionId: s.id,
  merchantId: s.merchant.id,
  ...(invoiceId ? { invoiceId } : {}),
  // A charge on a customer's saved payment method names it (PRODUCT.md "Customers and payment methods").
  ...(invoiceId && s.paymentMethodId ? { paymentMethodId: s.paymentMethodId } : {}),
});

/** A card may be replaced (a new token, or a hosted update) in these statuses only. */
export const updatable = (s: Subscription) => CARD_UPDATABLE_STATUSES.includes(s.status);

/**
 * A charge the provider has not decided (`pending`, `processing`, `requires_action`, or any other
 * status this code does not settle): nothing is recorded, the invoice stays open, and the
 * workflow asks again about the same attempt (by its key) until it is decided.
 */
export interface UndecidedCharge {
  kind: 'undecided';
  status: string;
}

/**
 * The provider's answer to an invoice attempt, trusted only when it is about what we asked:
 * a capture of another amount or currency is not recorded (an operator must look).
 */
export function chargeResultOf(
  logger: Logger,
  invoice: InvoiceForCharge,
  pp: ProviderPayment,
): ChargeResult | UndecidedCharge {
  if (pp.amountMinor !== invoice.amountMinor || pp.currency !== invoice.currency) {
    logger.error(
      { invoiceId: invoice.id, transactionId: pp.transactionId, ours: [invoice.amountMinor, invoice.currency] },
      'provider answered for another amount or currency; not recorded',
    );
    throw ApplicationFailure.retryable(
      `provider transaction ${pp.transactionId} does not match invoice ${invoice.id}`,
      RECONCILIATION_MISMATCH,
    );
  }
  if (pp.status === 'succeeded') return { kind: 'paid', transactionId: pp.transactionId };
  if (pp.status === 'failed') {
    return {
      kind: 'declined',
      transactionId: pp.transactionId,
      failureCode: pp.failureCode ?? 'card_declined',
      failureMessage: pp.failureMessage ?? 'The card was declined.',
    };
  }
  // Not decided yet (or a status we do not settle on): never a failure, asked about again.
  logger.warn(
    { invoiceId: invoice.id, transactionId: pp.transactionId, status: pp.status },
    'invoice charge not decided by the provider; asking again later',
  );
  return { kind: 'undecided', status: pp.status };
}

/** The request of one charge attempt of an invoice with this card: the same every time (its key's). */
export function chargeRequest(
  invoice: InvoiceForCharge,
  attempt: number,
  cardToken: string,
  onSession: boolean,
  /** Where the provider reports what becomes of it (an attempt it decides later: decision 0060). */
  webhookUrl?: string,
): CreatePaymentInput {
  const s = invoice.subscription;
  return {
    idempotencyKey: invoiceAttemptKey(invoice.id, attempt),
    amountMinor: invoice.amountMinor,
    currency: invoice.currency,
    mode: 'card',
    cardToken,
    // A charge the customer is not present for (renewals, retries): the processor may ask for authentication.
    ...(onSession ? {} : { offSession: true }),
    ...(webhookUrl ? { webhookUrl } : {}),
    ...(s.description ? { description: s.description } : {}),
    metadata: metadataOf(s, invoice.id),
  };
}

/**
 * How the provider finds what became of one charge attempt of an invoice. `request`: that
 * attempt's request, for a provider that replays it (which performs it if it never arrived: give
 * it only where that is wanted, the attempt's own reconciliation; never a cancellation).
 */
export function chargeLookup(
  invoice: Pick<Invoice, 'id' | 'providerCallSentAt' | 'createdAt'>,
  attempt: number,
  request?: CreatePaymentInput,
): PaymentLookup {
  // The mark is this attempt's (cleared once an attempt is known declined): a retry days after the
  // invoice opened asks about what was sent since, not since the invoice opened.
  return {
    idempotencyKey: invoiceAttemptKey(invoice.id, attempt),
    mode: 'card',
    notBefore: invoice.providerCallSentAt ?? invoice.createdAt,
    ...(request ? { request } : {}),
  };
}

/** The request of a subscription's hosted card authorization: the same every time (its key's). */
export function setupRequest(s: Subscription, publicBaseUrl: string): CreatePaymentInput {
  return {
    idempotencyKey: s.id,
    amountMinor: 0,
    currency: s.currency,
    mode: 'setup',
    ...(s.returnUrl ? { returnUrl: s.returnUrl } : {}),
    webhookUrl: `${publicBaseUrl}/webhooks/${s.processor}`,
    ...(s.description ? { description: s.description } : {}),
    metadata: metadataOf(s),
  };
}

/**
 * How the provider finds what became of a subscription's hosted card authorization. `request`:
 * for a provider that replays it (a setup moves no money: performing it is harmless).
 */
export function setupLookup(s: Subscription, request?: CreatePaymentInput): PaymentLookup {
  return { idempotencyKey: s.id, mode: 'setup', notBefore: s.createdAt, ...(request ? { request } : {}) };
}
