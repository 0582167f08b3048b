/**
 * A customer's card setup page, watched in case the processor's webhook never comes (decision
 * 0089): what a look at it answers, and when it is looked at. Pure: the page's workflow
 * (workflows/setupPage.ts) and the look itself (src/app/setupPages.ts) share these.
 */

/**
 * What a look at a setup page came to: its card kept for the customer (now, or by an earlier
 * look or the webhook), the page still open, or over without a card to keep (declined,
 * cancelled, the customer gone).
 */
export type SetupPageAnswer = 'added' | 'pending' | 'ended';

/** A setup page the API created: whose it is, and how the processor names it. */
export interface SetupPage {
  customerId: string;
  /** The id the card will have: chosen when the page was created, the processor's idempotency key. */
  paymentMethodId: string;
  processor: string;
  /** The processor's id of the page (a Checkout Session for Stripe). */
  transactionId: string;
}

/**
 * How long a page is watched: Stripe's Checkout Session lives 24 hours (its default), and an hour
 * more for a customer who finished at the last moment. A webhook after that still keeps the card.
 */
export const SETUP_PAGE_WATCH_MS = 25 * 3_600_000;

/** The first look at a page after `pollSeconds` (default 60), then doubling, at most hourly. */
export function setupPageLookDelayMs(looks: number, pollSeconds = 60): number {
  return Math.min(Math.max(1, pollSeconds) * 1000 * 2 ** Math.min(looks, 20), 3_600_000);
}
