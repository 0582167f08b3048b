import {
  chargeRequestOf,
  subscriptionRevivalOf,
  type SubscriptionRecordForRevival,
} from '../../src/rules/subscriptionCollection';
import type { Plan } from '../../src/rules/subscriptionPlan';

/**
 * Where a live subscription whose workflow ended is taken up (decision 0061): the collection of
 * its invoice rebuilt from the record, each attempt's request derived as the workflow derives it.
 */

const DAY_S = 10;
const DAY_MS = DAY_S * 1000;
const NOW = Date.parse('2026-12-01T12:00:00.000Z');
const plan: Plan = {
  phases: [{ id: 'ph_evergreen', amountMinor: 1000, billingIntervalDays: 30, iterations: null }],
  retryScheduleDays: [1, 3, 5],
};
const terms = { plan, billingDaySeconds: DAY_S };

type InvoiceRecord = NonNullable<SubscriptionRecordForRevival['invoice']>;
const invoice = (patch: Partial<InvoiceRecord> = {}): InvoiceRecord => ({
  id: 'inv_1',
  periodIndex: 2,
  periodStartMs: NOW - 5 * DAY_MS,
  periodEndMs: NOW + 25 * DAY_MS,
  status: 'open',
  attempts: 0,
  declineType: null,
  nextAttemptAtMs: null,
  callSent: false,
  updatedAtMs: NOW - DAY_MS,
  ...patch,
});
const record = (
  status: SubscriptionRecordForRevival['status'],
  inv: InvoiceRecord | null,
  patch: Partial<SubscriptionRecordForRevival> = {},
): SubscriptionRecordForRevival => ({
  status,
  setupTransactionId: null,
  hasCard: true,
  updatedAtMs: NOW - 3 * DAY_MS,
  invoice: inv,
  actionRequiredEmailKeys: [],
  ...patch,
});
const revive = (r: SubscriptionRecordForRevival) =>
  subscriptionRevivalOf(r, { ...terms, authorizationExpirySeconds: 60 }, NOW);
const collectionOf = (r: SubscriptionRecordForRevival) => {
  const from = revive(r);
  if (!from || from.status === 'created' || !from.collection) throw new Error('no collection');
  return from.collection;
};

describe('chargeRequestOf: the one derivation of an attempt', () => {
  it('the first attempt of the first invoice is on-session and discarded on a refused token', () => {
    expect(
      chargeRequestOf({ ...terms, needsAuthorization: false }, { invoiceId: 'inv_1', attempts: 0, first: true }),
    ).toEqual({
      invoiceId: 'inv_1',
      attempt: 1,
      retryDelayMs: DAY_MS,
      discardOnReject: true,
      onSession: true,
      authenticationWaitMs: 9 * DAY_MS,
    });
  });

  it('a retry is off-session; its delay counts from the schedule’s restart; the last has none', () => {
    const t = { ...terms, needsAuthorization: false };
    expect(chargeRequestOf(t, { invoiceId: 'inv_1', attempts: 1, first: true })).toMatchObject({
      attempt: 2,
      retryDelayMs: 3 * DAY_MS,
      discardOnReject: false,
      onSession: false,
    });
    expect(chargeRequestOf(t, { invoiceId: 'inv_1', attempts: 3, first: false, retryBase: 2 })).toMatchObject({
      attempt: 4,
      retryDelayMs: 3 * DAY_MS,
    });
    expect(chargeRequestOf(t, { invoiceId: 'inv_1', attempts: 3, first: false })).toMatchObject({
      attempt: 4,
      retryDelayMs: null,
    });
  });

  it('a hosted authorization’s first charge is never discarded', () => {
    expect(
      chargeRequestOf({ ...terms, needsAuthorization: true }, { invoiceId: 'inv_1', attempts: 0, first: true }),
    ).toMatchObject({ discardOnReject: false, onSession: true });
  });
});

describe('subscriptionRevivalOf', () => {
  it('created starts over; active with its invoice paid waits for the next period', () => {
    expect(revive(record('created', null))).toEqual({ status: 'created' });
    expect(revive(record('active', invoice({ status: 'paid', attempts: 1 })))).toEqual({
      status: 'active',
      periodIndex: 3,
      periodStartMs: NOW + 25 * DAY_MS,
    });
  });

  it('a hosted authorization without an invoice: the wait goes on until its expiry; a saved card bills now', () => {
    const pageAt = NOW - 3 * DAY_MS;
    expect(revive(record('pending', null, { setupTransactionId: 'txn_setup', hasCard: false }))).toEqual({
      status: 'pending',
      periodIndex: 0,
      periodStartMs: 0,
      needsAuthorization: true,
      authorization: { expiresAtMs: pageAt + 60_000 },
    });
    // No page recorded yet: requested again (its key is the subscription's id).
    expect(revive(record('pending', null, { hasCard: false }))).toMatchObject({ authorization: { expiresAtMs: null } });
    expect(revive(record('pending', null, { setupTransactionId: 'txn_setup' }))).toEqual({
      status: 'pending',
      periodIndex: 0,
      periodStartMs: NOW,
      needsAuthorization: true,
    });
  });

  it('nothing to resume: cancelled, no invoice unless pending, an invoice void, a paid one past_due', () => {
    expect(revive(record('cancelled', invoice()))).toBeNull();
    expect(revive(record('past_due', null))).toBeNull();
    expect(revive(record('past_due', invoice({ status: 'void' })))).toBeNull();
    expect(revive(record('past_due', invoice({ status: 'paid' })))).toBeNull();
  });

  it('resumes at the invoice’s period, with its status', () => {
    const from = revive(record('past_due', invoice({ attempts: 1, declineType: 'soft', nextAttemptAtMs: NOW })));
    expect(from).toMatchObject({
      status: 'past_due',
      periodIndex: 2,
      periodStartMs: NOW - 5 * DAY_MS,
      needsAuthorization: false,
    });
  });

  it('a soft decline: the next attempt at its recorded date', () => {
    const declinedAt = NOW - 2 * DAY_MS;
    expect(
      collectionOf(
        record(
          'past_due',
          invoice({ attempts: 1, declineType: 'soft', nextAttemptAtMs: declinedAt + DAY_MS, updatedAtMs: declinedAt }),
        ),
      ),
    ).toEqual({
      invoiceId: 'inv_1',
      attempts: 1,
      unavailableStreak: 0,
      first: false,
      nextAttemptAtMs: declinedAt + DAY_MS,
    });
  });

  it('a soft decline after a new card restarted the schedule: the schedule’s position from the recorded delay', () => {
    // Attempts 1-2 declined, a new card charged at once (attempt 3) declined: its delay is the
    // schedule's first entry (1 day), so 2 attempts came before the restart.
    const c = collectionOf(
      record(
        'past_due',
        invoice({ attempts: 3, declineType: 'soft', nextAttemptAtMs: NOW + DAY_MS, updatedAtMs: NOW }),
      ),
    );
    expect(c).toMatchObject({ attempts: 3, retryBase: 2, nextAttemptAtMs: NOW + DAY_MS });
    expect(chargeRequestOf({ ...terms, needsAuthorization: false }, c).retryDelayMs).toBe(3 * DAY_MS);
  });

  it('a soft decline with no next attempt: the schedule ran out, the new run cancels at once', () => {
    const c = collectionOf(
      record('past_due', invoice({ attempts: 4, declineType: 'soft', nextAttemptAtMs: null, updatedAtMs: NOW - 5 })),
    );
    expect(c).toMatchObject({ attempts: 4, newCardByMs: NOW - 5 });
    expect(c.undecided).toBeUndefined();
  });

  it('a hard decline: the wait for a new card keeps its deadline (the schedule’s total from the decline)', () => {
    const declinedAt = NOW - 2 * DAY_MS;
    const c = collectionOf(record('past_due', invoice({ attempts: 1, declineType: 'hard', updatedAtMs: declinedAt })));
    expect(c).toEqual({
      invoiceId: 'inv_1',
      attempts: 1,
      unavailableStreak: 0,
      first: false,
      nextAttemptAtMs: declinedAt + 9 * DAY_MS,
      newCardByMs: declinedAt + 9 * DAY_MS,
    });
  });

  it('requires_action: that attempt undecided and waiting, the same request, its start and reminders kept', () => {
    const askedAt = NOW - 4 * DAY_MS;
    const keys = [0, 1].map((n) => `sub_1:email:action_required:inv_1:2:${n}`);
    const c = collectionOf(
      record('past_due', invoice({ status: 'requires_action', attempts: 1, updatedAtMs: askedAt }), {
        actionRequiredEmailKeys: [...keys, 'sub_1:email:action_required:inv_1:1:2'],
      }),
    );
    expect(c.undecided).toEqual({
      request: chargeRequestOf(
        { ...terms, needsAuthorization: false },
        { invoiceId: 'inv_1', attempts: 1, first: false },
      ),
      polls: 1,
      waiting: 'requires_action',
      sinceMs: askedAt,
      reminders: 1,
    });
    expect(c.undecided!.request).toMatchObject({ invoiceId: 'inv_1', attempt: 2, onSession: false });
    expect(c.nextAttemptAtMs).toBe(NOW);
  });

  it('processing: that attempt undecided and waiting for the processor, asked about now', () => {
    const c = collectionOf(record('active', invoice({ status: 'processing', attempts: 0 })));
    expect(c).toMatchObject({
      attempts: 0,
      nextAttemptAtMs: NOW,
      undecided: { request: { invoiceId: 'inv_1', attempt: 1 }, polls: 1, waiting: 'processing' },
    });
  });

  it('a pending first charge processing: first, on-session, the create’s request', () => {
    const from = revive(record('pending', invoice({ periodIndex: 0, status: 'processing' })));
    expect(from).toMatchObject({ status: 'pending', periodIndex: 0, needsAuthorization: false });
    const c = (from as { collection: { first: boolean; undecided: { request: unknown } } }).collection;
    expect(c.first).toBe(true);
    expect(c.undecided.request).toEqual({
      invoiceId: 'inv_1',
      attempt: 1,
      retryDelayMs: DAY_MS,
      discardOnReject: true,
      onSession: true,
      authenticationWaitMs: 9 * DAY_MS,
    });
    // A hosted authorization's first charge: the same request it was made with.
    const hosted = revive(
      record('pending', invoice({ periodIndex: 0, status: 'processing' }), { setupTransactionId: 'txn_setup' }),
    ) as { needsAuthorization: boolean; collection: { undecided: { request: { discardOnReject: boolean } } } };
    expect(hosted.needsAuthorization).toBe(true);
    expect(hosted.collection.undecided.request.discardOnReject).toBe(false);
  });

  it('an attempt in doubt (its call sent, no outcome recorded): undecided, asked about by its key', () => {
    const c = collectionOf(
      record('past_due', invoice({ attempts: 1, declineType: 'soft', nextAttemptAtMs: NOW - 10, callSent: true })),
    );
    expect(c.undecided).toMatchObject({ request: { attempt: 2 }, polls: 0 });
    expect(c.undecided!.waiting).toBeUndefined();
  });

  it('nothing attempted yet: the first attempt now', () => {
    expect(collectionOf(record('active', invoice()))).toEqual({
      invoiceId: 'inv_1',
      attempts: 0,
      unavailableStreak: 0,
      first: false,
      nextAttemptAtMs: NOW,
    });
  });

  it('an attempt released for a new card: the new card charged now, the schedule restarted', () => {
    expect(collectionOf(record('past_due', invoice({ attempts: 1, declineType: null })))).toMatchObject({
      attempts: 1,
      retryBase: 1,
      nextAttemptAtMs: NOW,
    });
  });
});
