import { EVENT_TYPES, isKnownEventFilter, matchesFilter, signingSecretsOf } from '../../src/rules/eventFilters';

describe('matchesFilter: exact, <prefix>.*, *', () => {
  it.each([
    [['payment.succeeded'], 'payment.succeeded', true],
    [['payment.succeeded'], 'payment.failed', false],
    [['payment.*'], 'payment.failed', true],
    [['payment.*'], 'refund.succeeded', false],
    // a prefix is a whole object name: `payment.*` is not `payment_x.*`
    [['payment.*'], 'paymentx.succeeded', false],
    [['*'], 'subscription.cancelled', true],
    [['refund.failed', 'dispute.*'], 'dispute.closed', true],
    [['refund.failed', 'dispute.*'], 'refund.succeeded', false],
    [[], 'payment.succeeded', false],
  ] as const)('%j matches %s: %s', (filters, type, expected) => {
    expect(matchesFilter(filters, type)).toBe(expected);
  });

  it('every event type matches itself, its prefix and *', () => {
    for (const type of EVENT_TYPES) {
      expect(matchesFilter([type], type)).toBe(true);
      expect(matchesFilter([`${type.split('.')[0]}.*`], type)).toBe(true);
      expect(matchesFilter(['*'], type)).toBe(true);
    }
  });
});

describe('isKnownEventFilter', () => {
  it.each(['*', 'payment.*', 'refund.*', 'dispute.*', 'subscription.*', 'payment.succeeded', 'dispute.closed'])(
    'takes %s',
    (filter) => expect(isKnownEventFilter(filter)).toBe(true),
  );
  it.each(['payment.exploded', 'invoice.*', 'payment', '', '**', 'payment.**', '*.succeeded', 'PAYMENT.SUCCEEDED'])(
    'refuses %j',
    (filter) => expect(isKnownEventFilter(filter)).toBe(false),
  );
});

describe('signingSecretsOf', () => {
  const now = new Date('2026-12-02T12:00:00.000Z');
  it('the current secret alone without a previous one', () => {
    expect(signingSecretsOf({ secret: 'new', previousSecret: null, previousSecretExpiresAt: null }, now)).toEqual([
      'new',
    ]);
  });
  it('the current then the previous one while the overlap lasts', () => {
    const expires = new Date(now.getTime() + 1);
    expect(signingSecretsOf({ secret: 'new', previousSecret: 'old', previousSecretExpiresAt: expires }, now)).toEqual([
      'new',
      'old',
    ]);
  });
  it('the current alone from the expiry on', () => {
    expect(signingSecretsOf({ secret: 'new', previousSecret: 'old', previousSecretExpiresAt: now }, now)).toEqual([
      'new',
    ]);
  });
});
