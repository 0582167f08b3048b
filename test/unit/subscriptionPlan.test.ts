import { Invoice, Subscription } from '../../src/db/entities';
import {
  DEFAULT_RETRY_SCHEDULE_DAYS,
  invoiceAttemptKey,
  periodMillis,
  phaseOfPeriod,
  retryDelayMillis,
  type Plan,
  type PlanPhase,
} from '../../src/rules/subscriptionPlan';
import { subscriptionEmail, type SubscriptionEmailKind } from '../../src/domain/subscriptionEmails';

/** The pure billing rules of a subscription (PRODUCT.md "Subscriptions") and its customer emails. */

const DAY_MS = 86_400_000;

const phase = (id: string, iterations: number | null, amountMinor: number, billingIntervalDays = 30): PlanPhase => ({
  id,
  iterations,
  amountMinor,
  billingIntervalDays,
});

/** trial x1 (free), intro x3, then evergreen. */
const phased: Plan = {
  phases: [phase('ph_trial', 1, 0, 7), phase('ph_intro', 3, 499), phase('ph_evergreen', null, 999)],
  retryScheduleDays: DEFAULT_RETRY_SCHEDULE_DAYS,
};

describe('phaseOfPeriod', () => {
  it.each<[number, string, number]>([
    [0, 'ph_trial', 0],
    [1, 'ph_intro', 1],
    [2, 'ph_intro', 1],
    [3, 'ph_intro', 1],
    [4, 'ph_evergreen', 2],
    [5, 'ph_evergreen', 2],
    [1_000, 'ph_evergreen', 2],
    [1_000_000, 'ph_evergreen', 2],
  ])('period %i is billed by %s (phase index %i)', (periodIndex, phaseId, phaseIndex) => {
    const found = phaseOfPeriod(phased, periodIndex);
    expect(found.phase.id).toBe(phaseId);
    expect(found.phaseIndex).toBe(phaseIndex);
    expect(found.phase).toBe(phased.phases[phaseIndex]);
  });

  it('several multi-period phases: each boundary switches to the next phase exactly', () => {
    const plan: Plan = {
      phases: [phase('a', 2, 100), phase('b', 1, 200), phase('c', 4, 300), phase('ever', null, 400)],
      retryScheduleDays: [],
    };
    const ids = Array.from({ length: 10 }, (_, i) => phaseOfPeriod(plan, i).phase.id);
    expect(ids).toEqual(['a', 'a', 'b', 'c', 'c', 'c', 'c', 'ever', 'ever', 'ever']);
  });

  it('no listed phases: every period is evergreen', () => {
    const plan: Plan = { phases: [phase('ever', null, 999)], retryScheduleDays: [] };
    for (const i of [0, 1, 2, 365, 10_000]) {
      expect(phaseOfPeriod(plan, i)).toEqual({ phase: plan.phases[0], phaseIndex: 0 });
    }
  });

  it('a plan that ends without its evergreen phase is refused past its last period', () => {
    const plan: Plan = { phases: [phase('a', 2, 100)], retryScheduleDays: [] };
    expect(phaseOfPeriod(plan, 1).phase.id).toBe('a');
    expect(() => phaseOfPeriod(plan, 2)).toThrow(/evergreen/);
  });
});

describe('periodMillis', () => {
  it.each<[number, number, number]>([
    [1, 86_400, DAY_MS],
    [30, 86_400, 30 * DAY_MS],
    [3650, 86_400, 3650 * DAY_MS],
    [7, 3600, 7 * 3_600_000],
    [30, 1, 30_000],
  ])('%i billing day(s) of %i s last %i ms', (billingIntervalDays, billingDaySeconds, expected) => {
    expect(periodMillis(phase('p', null, 100, billingIntervalDays), billingDaySeconds)).toBe(expected);
  });
});

describe('retryDelayMillis', () => {
  it('the default schedule is [1, 3, 5]', () => {
    expect(DEFAULT_RETRY_SCHEDULE_DAYS).toEqual([1, 3, 5]);
  });

  it.each<[number, number | null]>([
    [1, 1 * DAY_MS],
    [2, 3 * DAY_MS],
    [3, 5 * DAY_MS],
    [4, null],
    [5, null],
  ])('default schedule, after %i failed attempt(s): %p ms', (failedAttempts, expected) => {
    expect(retryDelayMillis(phased, failedAttempts, 86_400)).toBe(expected);
  });

  it('scales with the length of a billing day', () => {
    expect(retryDelayMillis(phased, 1, 3600)).toBe(3_600_000);
    expect(retryDelayMillis(phased, 2, 3600)).toBe(3 * 3_600_000);
    expect(retryDelayMillis(phased, 3, 1)).toBe(5_000);
    expect(retryDelayMillis(phased, 4, 1)).toBeNull();
  });

  it('an empty schedule gives no retry at all', () => {
    const plan: Plan = { phases: phased.phases, retryScheduleDays: [] };
    expect(retryDelayMillis(plan, 1, 86_400)).toBeNull();
    expect(retryDelayMillis(plan, 2, 86_400)).toBeNull();
  });

  it('a custom schedule is followed entry by entry', () => {
    const plan: Plan = { phases: phased.phases, retryScheduleDays: [2, 2, 7, 365] };
    expect([1, 2, 3, 4, 5].map((n) => retryDelayMillis(plan, n, 86_400))).toEqual([
      2 * DAY_MS,
      2 * DAY_MS,
      7 * DAY_MS,
      365 * DAY_MS,
      null,
    ]);
  });
});

describe('invoiceAttemptKey', () => {
  const invoiceId = 'inv_01JABCDEFGHJKMNPQRSTVWXYZ0';

  it('the first attempt uses the invoice id itself', () => {
    expect(invoiceAttemptKey(invoiceId, 1)).toBe(invoiceId);
  });

  it('later attempts have keys of their own, distinct and stable', () => {
    const keys = Array.from({ length: 10 }, (_, i) => invoiceAttemptKey(invoiceId, i + 1));
    expect(new Set(keys).size).toBe(10);
    // Asked again (a replayed workflow, a retried activity), each attempt gets the same key.
    expect(Array.from({ length: 10 }, (_, i) => invoiceAttemptKey(invoiceId, i + 1))).toEqual(keys);
    for (const key of keys.slice(1)) {
      expect(key).not.toBe(invoiceId);
      expect(key.startsWith(invoiceId)).toBe(true);
    }
  });

  it("two invoices' keys never collide", () => {
    const other = 'inv_01JABCDEFGHJKMNPQRSTVWXYZ1';
    const mine = [1, 2, 3, 4].map((n) => invoiceAttemptKey(invoiceId, n));
    const theirs = [1, 2, 3, 4].map((n) => invoiceAttemptKey(other, n));
    expect(mine.filter((k) => theirs.includes(k))).toEqual([]);
  });
});

describe('subscriptionEmail', () => {
  const periodStart = new Date('2026-03-01T00:00:00.000Z');
  const periodEnd = new Date('2026-03-31T00:00:00.000Z');

  function subscription(patch: Partial<Subscription> = {}): Subscription {
    return Object.assign(new Subscription(), {
      id: 'sub_01JABCDEFGHJKMNPQRSTVWXYZ0',
      externalId: 'ext-gold',
      amountMinor: 999,
      currency: 'USD',
      billingIntervalDays: 30,
      status: 'active',
      description: 'Gold plan',
      customer: { email: 'ada@example.com', name: 'Ada' },
      cancellationReason: null,
      currentPeriodStart: periodStart,
      currentPeriodEnd: periodEnd,
      ...patch,
    });
  }

  function invoice(patch: Partial<Invoice> = {}): Invoice {
    return Object.assign(new Invoice(), {
      id: 'inv_01JABCDEFGHJKMNPQRSTVWXYZ0',
      amountMinor: 999,
      currency: 'USD',
      periodStart,
      periodEnd,
      status: 'open',
      attempts: 1,
      providerTransactionId: 'txn_123',
      failureCode: null,
      failureMessage: null,
      ...patch,
    });
  }

  /** Every kind that names an amount: the text a customer reads (subject and body). */
  const amountKinds: SubscriptionEmailKind[] = ['activated', 'receipt', 'payment_failed'];

  function render(kind: SubscriptionEmailKind, amountMinor: number, currency: string, nextAttemptAt?: Date | null) {
    const s = subscription({ amountMinor, currency });
    const inv = invoice({ amountMinor, currency, failureCode: 'card_declined', failureMessage: 'Card declined' });
    return subscriptionEmail(kind, s, { invoice: inv, nextAttemptAt: nextAttemptAt ?? null });
  }

  describe.each(amountKinds)('%s', (kind) => {
    it.each<[number, string, string]>([
      [999, 'USD', '9.99 USD'],
      [1200, 'JPY', '1200 JPY'],
      [1234, 'KWD', '1.234 KWD'],
      [1, 'EUR', '0.01 EUR'],
    ])('names %i minor units of %s as "%s"', (amountMinor, currency, expected) => {
      const email = render(kind, amountMinor, currency);
      expect(`${email.subject}\n${email.text}`).toContain(expected);
      // Never the minor units themselves, and JPY never with decimals.
      if (currency !== 'JPY') expect(email.text).not.toMatch(new RegExp(`(?<![\\d.])${amountMinor} ${currency}`));
      else expect(email.text).not.toMatch(/1200\.\d+ JPY/);
    });

    // Amounts on customer emails are written with all of the currency's decimals.
    it.each<[number, string, string]>([
      [1050, 'USD', '10.50 USD'],
      [1500, 'KWD', '1.500 KWD'],
    ])('writes %i minor units of %s with every decimal: "%s"', (amountMinor, currency, expected) => {
      const email = render(kind, amountMinor, currency);
      expect(`${email.subject}\n${email.text}`).toContain(expected);
    });
  });

  it('the receipt names the amount in its subject, the invoice, the period and the provider transaction', () => {
    const email = subscriptionEmail('receipt', subscription(), { invoice: invoice({ status: 'paid' }) });
    expect(email.subject).toContain('9.99 USD');
    expect(email.subject).toContain('Gold plan');
    expect(email.text).toContain('Hello Ada,');
    expect(email.text).toContain('inv_01JABCDEFGHJKMNPQRSTVWXYZ0');
    expect(email.text).toContain(periodStart.toISOString());
    expect(email.text).toContain(periodEnd.toISOString());
    expect(email.text).toContain('txn_123');
    expect(email.text).toContain('sub_01JABCDEFGHJKMNPQRSTVWXYZ0');
  });

  it('the activation email names the renewal amount and interval', () => {
    const email = subscriptionEmail('activated', subscription(), {});
    expect(email.subject).toContain('Gold plan');
    expect(email.text).toContain('9.99 USD');
    expect(email.text).toContain('every 30 day(s)');
  });

  it('the payment-failed email names the next retry date', () => {
    const next = new Date('2026-03-02T00:00:00.000Z');
    const email = subscriptionEmail('payment_failed', subscription(), {
      invoice: invoice({ failureCode: 'card_declined', failureMessage: 'Your card was declined.' }),
      nextAttemptAt: next,
    });
    expect(email.subject).toContain('Payment failed');
    expect(email.text).toContain('9.99 USD');
    expect(email.text).toContain(next.toISOString());
    expect(email.text).toMatch(/next retry/i);
    expect(email.text).not.toMatch(/no further retries/i);
    expect(email.text).toContain('card_declined');
    expect(email.text).toContain('Your card was declined.');
  });

  it.each<[string, Date | null | undefined]>([
    ['null', null],
    ['absent', undefined],
  ])('the payment-failed email without a next attempt (%s) says there are no further retries', (_label, next) => {
    const email = subscriptionEmail('payment_failed', subscription(), {
      invoice: invoice({ failureCode: 'insufficient_funds', failureMessage: 'Insufficient funds.' }),
      ...(next === undefined ? {} : { nextAttemptAt: next }),
    });
    expect(email.text).toMatch(/no further retries/i);
    expect(email.text).not.toMatch(/next retry:/i);
    expect(email.text).toContain('9.99 USD');
  });

  it('the cancellation email names the reason and how long the current period stays valid', () => {
    const email = subscriptionEmail(
      'cancelled',
      subscription({ status: 'cancelled', cancellationReason: 'merchant_request' }),
      {},
    );
    expect(email.subject).toContain('cancelled');
    expect(email.subject).toContain('Gold plan');
    expect(email.text).toContain('merchant_request');
    expect(email.text).toContain(periodEnd.toISOString());
  });

  // emails.subject is varchar(255) (src/db/entities.ts); the API accepts externalId <= 255 and
  // description <= 1000 characters, and the subject quotes one of them.
  it.each<[string, Partial<Subscription>]>([
    ['a description of 1000 characters', { description: 'd'.repeat(1000) }],
    ['an externalId of 255 characters (no description)', { description: null, externalId: 'e'.repeat(255) }],
  ])('with %s every subject fits the 255-character column', (_label, patch) => {
    const s = subscription({ ...patch, cancellationReason: 'merchant_request' });
    const facts = { invoice: invoice({ amountMinor: 100_000_000_000 }), nextAttemptAt: null };
    const kinds = ['activated', 'receipt', 'payment_failed', 'cancelled'] as const;
    const emails = kinds.map((kind) => ({ kind, ...subscriptionEmail(kind, s, facts) }));
    const tooLong = emails.filter((e) => e.subject.length > 255).map((e) => `${e.kind}: ${e.subject.length}`);
    expect(tooLong).toEqual([]);
    for (const email of emails) {
      expect(email.subject.length).toBeGreaterThan(0);
      // The full reference stays in the body.
      expect(email.text).toContain(s.externalId);
    }
  });

  it('without a description or a customer name: the externalId and a plain greeting', () => {
    const s = subscription({ description: null, customer: { email: 'x@example.com' } });
    const email = subscriptionEmail('activated', s, {});
    expect(email.subject).toContain('ext-gold');
    expect(email.text.startsWith('Hello,')).toBe(true);
  });
});
