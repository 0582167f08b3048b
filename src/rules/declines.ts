/**
 * Hard and soft declines (PRODUCT.md "Processor lifecycle", Hard declines): the one list of the
 * codes a card is never charged again for. A hard decline ends the retries with that card (the
 * customer is asked for a new one); every other decline is soft and follows the retry schedule.
 */
export const HARD_DECLINE_CODES: readonly string[] = [
  'lost_card',
  'stolen_card',
  'pickup_card',
  'expired_card',
  'incorrect_number',
  'invalid_account',
  'card_not_supported',
  'restricted_card',
  'fraudulent',
  'revocation_of_authorization',
];

export const DECLINE_TYPES = ['hard', 'soft'] as const;
export type DeclineType = (typeof DECLINE_TYPES)[number];

/**
 * The platform's own decline, nothing sent: the subscription has no card left to charge (a
 * customer's cards all hard-declined or deleted, its own card among them). It waits for a new
 * card as a hard decline does (PRODUCT.md "Customers and payment methods": "when none is left, it
 * waits for a new card"); retrying with no card could not succeed.
 */
export const NO_CARD_CODE = 'no_card';

/** Whether a decline with this code may be retried with the same card. */
export function declineTypeOf(failureCode: string): DeclineType {
  return HARD_DECLINE_CODES.includes(failureCode) || failureCode === NO_CARD_CODE ? 'hard' : 'soft';
}
