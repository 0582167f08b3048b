import fs from 'node:fs';
import path from 'node:path';
import { ProviderError } from '../../src/providers/errors';
import { mapDispute } from '../../src/providers/stripe/mapping';

/** Stripe Disputes -> ours (decision 0056): every status Stripe documents, inquiries included. */
const fixture = (over: Record<string, unknown> = {}) => ({
  ...(JSON.parse(fs.readFileSync(path.join(__dirname, '../fixtures/stripe/dispute.json'), 'utf8')) as object),
  ...over,
});

describe('Stripe dispute mapping', () => {
  it.each([
    ['warning_needs_response', 'needs_response'],
    ['needs_response', 'needs_response'],
    ['warning_under_review', 'under_review'],
    ['under_review', 'under_review'],
    ['warning_closed', 'won'],
    ['prevented', 'won'],
    ['won', 'won'],
    ['lost', 'lost'],
  ])('%s is %s', (stripeStatus, ours) => {
    expect(mapDispute(fixture({ status: stripeStatus })).status).toBe(ours);
  });

  it('a dispute our close call lost is accepted; the rest as Stripe says', () => {
    expect(mapDispute(fixture({ status: 'lost' }), true).status).toBe('accepted');
    expect(mapDispute(fixture({ status: 'under_review' }), true).status).toBe('under_review');
  });

  it('the PaymentIntent, else the charge; amounts in our minor units; due 7 days after opening without a due date', () => {
    expect(mapDispute(fixture({ currency: 'jpy', amount: 500, evidence_details: null, payment_intent: null }))).toEqual(
      {
        disputeId: 'dp_1PgbQ8B7WZ01zgkWdisput01',
        transactionId: 'ch_1PgafuB7WZ01zgkWXYmPNZs8',
        status: 'needs_response',
        amountMinor: 500,
        currency: 'JPY',
        reason: 'fraudulent',
        evidenceDueBy: new Date((1234567890 + 7 * 86_400) * 1000),
      },
    );
  });

  it('an unknown status or shape is invalid_response, never a guess', () => {
    expect(() => mapDispute(fixture({ status: 'charge_refunded' }))).toThrow(ProviderError);
    expect(() => mapDispute(fixture({ amount: 'ten' }))).toThrow(ProviderError);
  });
});
