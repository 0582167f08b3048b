import type { Invoice, Subscription } from '../db/entities';
import { toMajor } from '../rules/money';

/**
 * How the API shows an invoice (PRODUCT.md, "Lists"): `open | requires_action | processing | paid |
 * void | uncollectible` (the two waiting statuses: "Processor lifecycle", decision 0060).
 *
 * The database keeps three states (`open`, `paid`, `void`): cancelling a subscription voids its
 * open invoice whatever the reason. An invoice voided because the service gave up collecting it
 * (the subscription was cancelled with `payment_failed` after its retries were exhausted, and the
 * invoice had a failed attempt) is shown as `uncollectible`, as Stripe does; one voided by a
 * merchant's cancellation stays `void`.
 */
export const INVOICE_VIEW_STATUSES = [
  'open',
  'requires_action',
  'processing',
  'paid',
  'void',
  'uncollectible',
] as const;
export type InvoiceViewStatus = (typeof INVOICE_VIEW_STATUSES)[number];

export function invoiceStatusOf(
  invoice: Pick<Invoice, 'status' | 'failureCode'>,
  subscription: Pick<Subscription, 'status' | 'cancellationReason'>,
): InvoiceViewStatus {
  if (
    invoice.status === 'void' &&
    invoice.failureCode !== null &&
    subscription.status === 'cancelled' &&
    subscription.cancellationReason === 'payment_failed'
  ) {
    return 'uncollectible';
  }
  return invoice.status;
}

/** The fields of an invoice its view needs (an entity, or a row read without the ORM). */
export type InvoiceView = Pick<
  Invoice,
  | 'id'
  | 'status'
  | 'amountMinor'
  | 'currency'
  | 'periodStart'
  | 'periodEnd'
  | 'attempts'
  | 'nextAttemptAt'
  | 'failureCode'
  | 'failureMessage'
  | 'declineType'
  | 'hostedUrl'
  | 'paidAt'
  | 'createdAt'
> & { subscriptionId: string };

export function presentInvoice(
  invoice: InvoiceView,
  subscription: Pick<Subscription, 'status' | 'cancellationReason'>,
) {
  return {
    id: invoice.id,
    subscriptionId: invoice.subscriptionId,
    status: invoiceStatusOf(invoice, subscription),
    amount: toMajor(invoice.amountMinor, invoice.currency),
    currency: invoice.currency,
    periodStart: invoice.periodStart.toISOString(),
    periodEnd: invoice.periodEnd.toISOString(),
    // The attempt waiting for the customer or the processor counts (it is recorded once decided).
    attempts: invoice.attempts + (invoice.status === 'requires_action' || invoice.status === 'processing' ? 1 : 0),
    nextAttemptAt: invoice.nextAttemptAt?.toISOString() ?? null,
    failureCode: invoice.failureCode,
    failureMessage: invoice.failureMessage,
    declineType: invoice.declineType,
    // Where the customer authenticates, only while that is possible.
    hostedUrl: invoice.status === 'requires_action' ? invoice.hostedUrl : null,
    paidAt: invoice.paidAt?.toISOString() ?? null,
    createdAt: invoice.createdAt.toISOString(),
  };
}

export type InvoiceResponse = ReturnType<typeof presentInvoice>;
