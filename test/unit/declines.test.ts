import { chargeResultOf } from '../../activities/subscriptions/shared';
import type { InvoiceForCharge } from '../../src/domain/subscriptions';
import type { Logger } from '../../src/logger';
import type { ProviderPayment } from '../../src/providers/types';
import { declineTypeOf, HARD_DECLINE_CODES, NO_CARD_CODE } from '../../src/rules/declines';
import { retryScheduleTotalMillis } from '../../src/rules/subscriptionPlan';

const logger = { warn: jest.fn(), error: jest.fn(), info: jest.fn() } as unknown as Logger;
const invoice = { id: 'inv_1', amountMinor: 1000, currency: 'USD' } as InvoiceForCharge;
const answer = (status: string, failureCode: string | null = null) =>
  ({
    transactionId: 'txn_1',
    status,
    amountMinor: 1000,
    currency: 'USD',
    failureCode,
    failureMessage: null,
  }) as unknown as ProviderPayment;

describe('hard and soft declines (PRODUCT.md "Hard declines")', () => {
  it('names the ten hard codes of PRODUCT.md; every other code is soft', () => {
    expect([...HARD_DECLINE_CODES].sort()).toEqual(
      [
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
      ].sort(),
    );
    for (const code of HARD_DECLINE_CODES) expect(declineTypeOf(code)).toBe('hard');
    for (const code of ['card_declined', 'insufficient_funds', 'authentication_failed', ''])
      expect(declineTypeOf(code)).toBe('soft');
  });

  it('a subscription with no card left (no_card, nothing sent) waits for a new card as a hard decline does', () => {
    expect(declineTypeOf(NO_CARD_CODE)).toBe('hard');
  });

  it('waits the retry schedule’s total, in billing days', () => {
    expect(retryScheduleTotalMillis({ phases: [], retryScheduleDays: [1, 3, 5] }, 86_400)).toBe(9 * 86_400_000);
    expect(retryScheduleTotalMillis({ phases: [], retryScheduleDays: [] }, 1)).toBe(0);
  });
});

describe('an invoice charge answer (never fail closed)', () => {
  it('settles only succeeded and failed; any other status is undecided, never a thrown failure', () => {
    expect(chargeResultOf(logger, invoice, answer('succeeded'))).toEqual({ kind: 'paid', transactionId: 'txn_1' });
    expect(chargeResultOf(logger, invoice, answer('failed', 'lost_card'))).toMatchObject({
      kind: 'declined',
      failureCode: 'lost_card',
    });
    for (const status of ['processing', 'requires_action', 'pending', 'canceled', 'under_review']) {
      expect(chargeResultOf(logger, invoice, answer(status))).toEqual({ kind: 'undecided', status });
    }
  });
});
