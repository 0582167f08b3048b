import type { Invoice, Subscription } from '../db/entities';
import { currencyExponent, toMajor } from '../rules/money';

/** The customer emails of a subscription: plain text, one per event (PRODUCT.md, Subscriptions). */
export type SubscriptionEmailKind =
  'activated' | 'receipt' | 'payment_failed' | 'card_required' | 'action_required' | 'cancelled';

/** `10.50 USD`, `1200 JPY`: every decimal the currency has. */
const money = (minor: number, currency: string) =>
  `${toMajor(minor, currency).toFixed(currencyExponent(currency))} ${currency}`;
/** Subjects quote the subscription's name, shortened: a subject line is at most 255 characters. */
const short = (text: string, max = 100) => (text.length <= max ? text : `${text.slice(0, max - 1)}…`);
const day = (d: Date | null | undefined) => (d ? d.toISOString() : 'unknown');

/** What the emails name of a subscription. */
export type SubscriptionOfEmail = Pick<
  Subscription,
  | 'id'
  | 'externalId'
  | 'description'
  | 'customer'
  | 'billingIntervalDays'
  | 'amountMinor'
  | 'currency'
  | 'cancellationReason'
  | 'currentPeriodEnd'
>;

/** What the emails name of an invoice (a failure only in the payment-failed email). */
export type InvoiceOfEmail = Pick<
  Invoice,
  'id' | 'amountMinor' | 'currency' | 'periodStart' | 'periodEnd' | 'providerTransactionId'
> &
  Partial<Pick<Invoice, 'failureCode' | 'failureMessage'>>;

export function subscriptionEmail(
  kind: SubscriptionEmailKind,
  s: SubscriptionOfEmail,
  facts: {
    invoice?: InvoiceOfEmail;
    nextAttemptAt?: Date | null;
    /** card_required: the hosted card-update page (null: none could be made) and the deadline. */
    cardUpdateUrl?: string | null;
    cancelAt?: Date;
    /** action_required: the page where the customer authenticates, and which reminder (0: the first email). */
    hostedUrl?: string | null;
    reminder?: number;
  },
): { subject: string; text: string } {
  const what = short(s.description ?? `subscription ${s.externalId}`);
  const greeting = s.customer?.name ? `Hello ${s.customer.name},` : 'Hello,';
  const ref = `Subscription: ${s.id} (${s.externalId})`;
  const invoice = facts.invoice;
  switch (kind) {
    case 'activated':
      return {
        subject: `Your subscription is active: ${what}`,
        text: [
          greeting,
          '',
          `Your subscription "${what}" is now active.`,
          `It renews every ${s.billingIntervalDays} day(s) at ${money(s.amountMinor, s.currency)} once any introductory phases end.`,
          '',
          ref,
        ].join('\n'),
      };
    case 'receipt':
      return {
        subject: `Payment receipt: ${money(invoice!.amountMinor, invoice!.currency)} for ${what}`,
        text: [
          greeting,
          '',
          `We received your payment of ${money(invoice!.amountMinor, invoice!.currency)}.`,
          `Period: ${day(invoice!.periodStart)} to ${day(invoice!.periodEnd)}`,
          `Invoice: ${invoice!.id}`,
          `Provider transaction: ${invoice!.providerTransactionId ?? 'n/a'}`,
          '',
          ref,
        ].join('\n'),
      };
    case 'payment_failed':
      return {
        subject: `Payment failed for ${what}`,
        text: [
          greeting,
          '',
          `Your payment of ${money(invoice!.amountMinor, invoice!.currency)} failed: ${invoice!.failureMessage ?? 'declined'} (${invoice!.failureCode ?? 'declined'}).`,
          facts.nextAttemptAt
            ? `Next retry: ${day(facts.nextAttemptAt)}`
            : 'No further retries: the subscription will be cancelled.',
          `Invoice: ${invoice!.id}`,
          '',
          ref,
        ].join('\n'),
      };
    case 'card_required':
      return {
        subject: `A new card is needed for ${what}`,
        text: [
          greeting,
          '',
          `Your payment of ${money(invoice!.amountMinor, invoice!.currency)} failed: ${invoice!.failureMessage ?? 'declined'} (${invoice!.failureCode ?? 'declined'}).`,
          'This card cannot be charged again, so it will not be retried.',
          facts.cardUpdateUrl
            ? `Please enter a new card here: ${facts.cardUpdateUrl}`
            : 'Please give the merchant a new card.',
          `Without a new card by ${day(facts.cancelAt)}, the subscription will be cancelled.`,
          `Invoice: ${invoice!.id}`,
          '',
          ref,
        ].join('\n'),
      };
    case 'action_required':
      return {
        subject: `${facts.reminder ? 'Reminder: action' : 'Action'} required to pay for ${what}`,
        text: [
          greeting,
          '',
          `Your bank asks you to confirm the payment of ${money(invoice!.amountMinor, invoice!.currency)}.`,
          `Please authenticate it here: ${facts.hostedUrl ?? 'unavailable'}`,
          facts.cancelAt
            ? `Without it by ${day(facts.cancelAt)}, the subscription will be cancelled.`
            : 'Without it, the subscription will be cancelled.',
          `Invoice: ${invoice!.id}`,
          '',
          ref,
        ].join('\n'),
      };
    case 'cancelled':
      return {
        subject: `Your subscription was cancelled: ${what}`,
        text: [
          greeting,
          '',
          `Your subscription "${what}" was cancelled (${s.cancellationReason ?? 'cancelled'}).`,
          s.currentPeriodEnd
            ? `The current period stays valid until ${day(s.currentPeriodEnd)}; nothing more will be charged.`
            : 'Nothing more will be charged.',
          '',
          ref,
        ].join('\n'),
      };
  }
}
