import {
  checkDeliveryIsolation,
  checkInvariants,
  type InvariantInput,
  type LedgerEntryView,
} from '../../dev/chaos/invariants';

const at = (iso: string) => Date.parse(iso);

function capture(id: string, metadata: Record<string, string>, amountMinor = 1000, createdAt = '2026-01-01T00:00:10Z') {
  return {
    id,
    type: 'capture',
    status: 'succeeded',
    amountMinor,
    currency: 'USD',
    metadata,
    createdAt,
  } as LedgerEntryView;
}
function refundEntry(id: string, refundId: string, amountMinor: number): LedgerEntryView {
  return {
    id,
    type: 'refund',
    status: 'succeeded',
    amountMinor,
    currency: 'USD',
    metadata: { refundId },
    createdAt: '2026-01-01T00:00:20Z',
  };
}

/** A run where everything held: one captured payment refunded in part, one paid invoice, one sent email. */
function cleanRun(): InvariantInput {
  return {
    ledger: [
      capture('tx1', { paymentId: 'pay_1' }),
      refundEntry('rf_tx1', 'ref_1', 400),
      capture('tx2', { subscriptionId: 'sub_1', invoiceId: 'inv_1' }, 500, '2026-01-01T00:00:05Z'),
    ],
    payments: [
      {
        id: 'pay_1',
        merchantId: 'm1',
        status: 'partially_refunded',
        amountMinor: 1000,
        amountRefundedMinor: 400,
        amountPendingRefundMinor: 0,
      },
    ],
    refunds: [{ id: 'ref_1', paymentId: 'pay_1', status: 'succeeded', amountMinor: 400 }],
    invoices: [{ id: 'inv_1', subscriptionId: 'sub_1', status: 'paid', amountMinor: 500 }],
    subscriptions: [{ id: 'sub_1', status: 'cancelled' }],
    emails: [{ id: 'eml_1', sentAt: new Date() }],
    deliveries: [{ messageId: '<eml_1@payments.local>', at: at('2026-01-01T00:00:12Z') }],
    workerKills: [],
    acknowledgements: [
      { kind: 'payment', id: 'pay_1', merchantId: 'm1', status: 'succeeded', at: at('2026-01-01T00:00:11Z') },
      { kind: 'refund', id: 'ref_1', merchantId: 'm1', status: 'succeeded', at: at('2026-01-01T00:00:21Z') },
      { kind: 'subscription', id: 'sub_1', merchantId: 'm1', status: 'active', at: at('2026-01-01T00:00:06Z') },
      { kind: 'cancellation', id: 'sub_1', merchantId: 'm1', status: 'cancelled', at: at('2026-01-01T00:00:30Z') },
    ],
    serverErrors: [],
    answers: 4,
    crossMerchantProbes: 3,
    crossMerchantLeaks: [],
  };
}

const violationsOf = (input: InvariantInput, name: string) =>
  checkInvariants(input).find((r) => r.name.startsWith(name))!.violations;

describe('chaos invariants', () => {
  it('find nothing wrong in a run where every invariant held', () => {
    expect(checkInvariants(cleanRun()).flatMap((r) => r.violations)).toEqual([]);
  });

  it('1: a payment captured twice, an invoice charged twice, a capture we never recorded', () => {
    const run = cleanRun();
    run.ledger.push(capture('tx1b', { paymentId: 'pay_1' }), capture('tx2b', { invoiceId: 'inv_1' }));
    run.ledger.push(capture('tx3', { paymentId: 'pay_unknown' }));
    expect(violationsOf(run, '1.')).toEqual([
      'payment pay_1 captured 2 times',
      'payment pay_unknown captured by the provider but unknown to us',
      'invoice inv_1 charged 2 times',
      'invoice inv_1 paid with 2 charges',
    ]);
  });

  it('1: a payment recorded succeeded that the provider never captured', () => {
    const run = cleanRun();
    run.ledger = run.ledger.filter((e) => e.id !== 'tx1');
    expect(violationsOf(run, '1.')).toContain('payment pay_1 recorded partially_refunded without a capture');
  });

  it('2: refunds beyond the capture, two in flight, a refund moved twice', () => {
    const run = cleanRun();
    run.refunds.push(
      { id: 'ref_2', paymentId: 'pay_1', status: 'pending', amountMinor: 400 },
      { id: 'ref_3', paymentId: 'pay_1', status: 'pending', amountMinor: 300 },
    );
    run.ledger.push(refundEntry('rf_tx1b', 'ref_1', 400));
    const found = violationsOf(run, '2.');
    expect(found).toContain('payment pay_1 has 2 refunds in flight');
    expect(found).toContain('payment pay_1: 400 refunded + 700 in flight > 1000');
    expect(found).toContain('refund ref_1 moved 2 times');
  });

  it('2: our refunded total disagrees with the money the provider moved', () => {
    const run = cleanRun();
    run.payments[0]!.amountRefundedMinor = 0;
    expect(violationsOf(run, '2.')).toEqual(['payment pay_1 records 0 refunded, the provider moved 400']);
  });

  it('6: a lost or accepted dispute beyond what refunds left, at the provider and in our records', () => {
    const dispute = (id: string, status: LedgerEntryView['status'], amountMinor: number): LedgerEntryView => ({
      id,
      type: 'dispute',
      status,
      amountMinor,
      currency: 'USD',
      metadata: { paymentId: 'pay_1' },
      createdAt: '2026-01-01T00:00:25Z',
    });
    const held = cleanRun();
    held.ledger.push(dispute('le_d1', 'lost', 600), dispute('le_d2', 'won', 1000));
    held.disputes = [
      { id: 'dp_1', paymentId: 'pay_1', status: 'lost', amountMinor: 600 },
      { id: 'dp_2', paymentId: 'pay_1', status: 'won', amountMinor: 1000 },
    ];
    expect(violationsOf(held, '6.')).toEqual([]);

    const broken = cleanRun();
    broken.ledger.push(dispute('le_d1', 'accepted', 700));
    broken.disputes = [{ id: 'dp_1', paymentId: 'pay_1', status: 'lost', amountMinor: 601 }];
    expect(violationsOf(broken, '6.')).toEqual([
      'payment pay_1: 400 refunded + 700 lost in disputes > 1000 (provider)',
      'payment pay_1: 400 refunded + 601 lost in disputes > 1000 (recorded)',
    ]);
  });

  it('6: the provider side counts the refunds its ledger moved, even ones we never recorded', () => {
    const run = cleanRun();
    run.ledger[0]!.transactionId = 'txn_1';
    // A refund the provider moved on our capture that our records do not know.
    run.ledger.push({ ...refundEntry('rf_tx9', 'ref_unknown', 300), paymentTransactionId: 'txn_1' });
    run.ledger.push({
      id: 'le_d1',
      type: 'dispute',
      status: 'lost',
      amountMinor: 400,
      currency: 'USD',
      transactionId: 'dsp_1',
      paymentTransactionId: 'txn_1',
      metadata: {},
      createdAt: '2026-01-01T00:00:25Z',
    });
    run.disputes = [{ id: 'dp_1', paymentId: 'pay_1', status: 'lost', amountMinor: 400, providerDisputeId: 'dsp_1' }];
    expect(violationsOf(run, '6.')).toEqual(['payment pay_1: 700 refunded + 400 lost in disputes > 1000 (provider)']);
  });

  it('6: a dispute the provider decided that we record otherwise, or not at all', () => {
    const run = cleanRun();
    const entry = (transactionId: string, status: LedgerEntryView['status']): LedgerEntryView => ({
      id: `le_${transactionId}`,
      type: 'dispute',
      status,
      amountMinor: 100,
      currency: 'USD',
      transactionId,
      metadata: { paymentId: 'pay_1' },
      createdAt: '2026-01-01T00:00:25Z',
    });
    run.ledger.push(entry('dsp_1', 'lost'), entry('dsp_2', 'won'), entry('dsp_3', 'under_review'));
    run.disputes = [
      { id: 'dp_1', paymentId: 'pay_1', status: 'under_review', amountMinor: 100, providerDisputeId: 'dsp_1' },
      { id: 'dp_3', paymentId: 'pay_1', status: 'needs_response', amountMinor: 100, providerDisputeId: 'dsp_3' },
    ];
    // dsp_3 is still open at the provider: our record may lag its webhook.
    expect(violationsOf(run, '6.')).toEqual([
      'dispute dp_1 lost at the provider, recorded under_review',
      'dispute dsp_2 won at the provider, unknown to us',
    ]);
  });

  describe('7: authenticated and processing charges', () => {
    const attempt = (
      transactionId: string,
      status: LedgerEntryView['status'],
      createdAt: string,
      metadata: Record<string, string> = { subscriptionId: 'sub_1', invoiceId: 'inv_7' },
      idempotencyKey = `key_${transactionId}`,
    ): LedgerEntryView => ({
      id: `le_${transactionId}`,
      type: 'capture',
      status,
      amountMinor: 500,
      currency: 'USD',
      transactionId,
      idempotencyKey,
      metadata,
      createdAt,
    });
    const payment = (id: string, status: string, cardToken: string) => ({
      id,
      merchantId: 'm1',
      status,
      amountMinor: 500,
      amountRefundedMinor: 0,
      amountPendingRefundMinor: 0,
      cardToken,
    });

    it('hold for one capture per authenticated or processing payment and ordered invoice attempts', () => {
      const run = cleanRun();
      run.payments.push(
        payment('pay_3ds', 'succeeded', 'tok_3ds'),
        payment('pay_proc', 'failed', 'tok_processing_fail'),
      );
      run.ledger.push(
        attempt('txn_3ds', 'succeeded', '2026-01-01T00:00:40Z', { paymentId: 'pay_3ds' }),
        attempt('txn_proc', 'failed', '2026-01-01T00:00:41Z', { paymentId: 'pay_proc' }),
        // A failed authentication, then the retry once it had failed (last seen open before it).
        attempt('txn_a', 'failed', '2026-01-01T00:01:00Z'),
        attempt('txn_b', 'succeeded', '2026-01-01T00:02:00Z'),
      );
      run.invoices.push({ id: 'inv_7', subscriptionId: 'sub_1', status: 'paid', amountMinor: 500 });
      run.ledgerOpenSeenAt = { txn_a: at('2026-01-01T00:01:30Z') };
      run.acknowledgements.push(
        { kind: 'payment', id: 'pay_3ds', merchantId: 'm1', status: 'requires_action', at: at('2026-01-01T00:00:40Z') },
        { kind: 'payment', id: 'pay_3ds', merchantId: 'm1', status: 'succeeded', at: at('2026-01-01T00:00:45Z') },
      );
      const result = checkInvariants(run).find((r) => r.name.startsWith('7.'))!;
      expect(result.violations).toEqual([]);
      expect(result.checked).toBe(4); // 2 payments, inv_1 and inv_7
    });

    it('a payment captured twice under one idempotency key, a succeeded one without its capture', () => {
      const run = cleanRun();
      run.payments.push(payment('pay_3ds', 'succeeded', 'tok_3ds'), payment('pay_proc', 'succeeded', 'tok_processing'));
      run.ledger.push(
        attempt('txn_3ds', 'succeeded', '2026-01-01T00:00:40Z', { paymentId: 'pay_3ds' }, 'key_same'),
        attempt('txn_3ds_b', 'succeeded', '2026-01-01T00:00:42Z', { paymentId: 'pay_3ds' }, 'key_same'),
        attempt('txn_proc', 'processing', '2026-01-01T00:00:41Z', { paymentId: 'pay_proc' }),
      );
      // The API said succeeded of a payment whose record is gone: still held to the ledger.
      run.acknowledgements.push(
        { kind: 'payment', id: 'pay_gone', merchantId: 'm1', status: 'processing', at: 0 },
        { kind: 'payment', id: 'pay_gone', merchantId: 'm1', status: 'succeeded', at: 1 },
      );
      expect(violationsOf(run, '7.')).toEqual([
        'idempotency key key_same captured 2 times',
        'payment pay_3ds (authentication or processing) captured 2 times',
        'payment pay_proc (authentication or processing) recorded succeeded without a capture',
        'payment pay_gone (authentication or processing) answered succeeded without a capture',
      ]);
    });

    it('an invoice charged again while an attempt waited for authentication or the processor', () => {
      const run = cleanRun();
      run.ledger.push(
        // Still awaiting authentication at the end, and charged again.
        attempt('txn_c', 'requires_action', '2026-01-01T00:01:00Z', { invoiceId: 'inv_8' }),
        attempt('txn_d', 'failed', '2026-01-01T00:01:10Z', { invoiceId: 'inv_8' }),
        // Processing, charged again, then the processing one failed: seen processing after the second.
        attempt('txn_e', 'failed', '2026-01-01T00:02:00Z', { invoiceId: 'inv_9' }),
        attempt('txn_f', 'failed', '2026-01-01T00:02:05Z', { invoiceId: 'inv_9' }),
        // Authenticated (succeeded), then charged again.
        attempt('txn_g', 'succeeded', '2026-01-01T00:03:00Z', { invoiceId: 'inv_10' }),
        attempt('txn_h', 'failed', '2026-01-01T00:03:30Z', { invoiceId: 'inv_10' }),
      );
      run.ledgerOpenSeenAt = { txn_e: at('2026-01-01T00:02:06Z') };
      expect(violationsOf(run, '7.')).toEqual([
        'invoice inv_8 charged again at 2026-01-01T00:01:10Z after its attempt of 2026-01-01T00:01:00Z, still requires_action',
        'invoice inv_9 charged again at 2026-01-01T00:02:05Z after its attempt of 2026-01-01T00:02:00Z, seen undecided until 2026-01-01T00:02:06.000Z',
        'invoice inv_10 charged again at 2026-01-01T00:03:30Z after its attempt of 2026-01-01T00:03:00Z, which succeeded',
      ]);
    });
  });

  it('3: a charge after the cancellation was acknowledged', () => {
    const run = cleanRun();
    run.ledger.push(capture('tx9', { subscriptionId: 'sub_1', invoiceId: 'inv_2' }, 500, '2026-01-01T00:00:31Z'));
    expect(violationsOf(run, '3.')).toEqual([
      'subscription sub_1 charged at 2026-01-01T00:00:31Z, after its cancellation at 2026-01-01T00:00:30.000Z',
    ]);
  });

  it('4 and 5: a leak to another merchant, an acknowledged record that is gone', () => {
    const run = cleanRun();
    run.crossMerchantLeaks.push({ path: '/payments/pay_1', status: 200 });
    run.acknowledgements.push({ kind: 'payment', id: 'pay_lost', merchantId: 'm1', status: 'created', at: 0 });
    expect(violationsOf(run, '4.')).toEqual(['/payments/pay_1 answered 200 to another merchant']);
    expect(violationsOf(run, '5.')).toEqual(['payment pay_lost acknowledged (created) but not recorded']);
  });

  it('emails: one delivered twice with no crash, one recorded sent but never delivered; any 500 is a violation', () => {
    const run = cleanRun();
    run.deliveries.push({ messageId: '<eml_1@payments.local>', at: at('2026-01-01T00:01:40Z') });
    run.emails.push({ id: 'eml_2', sentAt: new Date() });
    run.serverErrors.push({ operation: 'payment (token)', status: 500, code: 'internal_error' });
    expect(violationsOf(run, 'emails')).toEqual([
      'email <eml_1@payments.local> delivered 2 times',
      'email eml_2 recorded sent, never delivered',
    ]);
    expect(violationsOf(run, 'no 500')).toEqual(['payment (token) answered 500 internal_error']);
  });

  it('emails: another copy is tolerated (and reported) only when a worker died just after each earlier one', () => {
    const run = cleanRun();
    run.deliveries.push({ messageId: '<eml_1@payments.local>', at: at('2026-01-01T00:01:40Z') });
    run.workerKills.push(at('2026-01-01T00:00:12.300Z'));
    const emails = checkInvariants(run).find((r) => r.name === 'emails sent once')!;
    expect(emails.violations).toEqual([]);
    expect(emails.notes).toEqual([
      'email <eml_1@payments.local> delivered 2 times, each resend after its sender was killed mid-send',
    ]);

    // The resend met a kill too (seen in the 30-minute run): still explained.
    run.deliveries.push({ messageId: '<eml_1@payments.local>', at: at('2026-01-01T00:03:00Z') });
    run.workerKills.push(at('2026-01-01T00:01:40.040Z'));
    expect(violationsOf(run, 'emails')).toEqual([]);

    // A fourth copy after a copy no kill explains is a violation.
    run.deliveries.push({ messageId: '<eml_1@payments.local>', at: at('2026-01-01T00:04:10Z') });
    expect(violationsOf(run, 'emails')).toEqual(['email <eml_1@payments.local> delivered 4 times']);
  });
});

describe('chaos invariant 8: a hanging endpoint delays only its merchant', () => {
  const t0 = Date.parse('2026-01-01T00:00:00Z');
  const isolated = () => ({
    concurrencyPerMerchant: 4,
    // Held from 2 s to 22 s (two rounds of 10 s attempts), then a probe from 52 s, still held at the end.
    hanging: {
      maxOpen: 4,
      requests: 9,
      held: [
        { from: t0 + 2_000, to: t0 + 22_000 },
        { from: t0 + 52_000, to: null },
      ],
    },
    answeredAt: [t0 + 1_000, t0 + 5_000, t0 + 30_000, t0 + 55_000],
    until: t0 + 60_000,
  });

  it('holds when the hanging endpoint stays within the concurrency and the other endpoint is served meanwhile', () => {
    const result = checkDeliveryIsolation(isolated());
    expect(result.violations).toEqual([]);
    expect(result.checked).toBe(13);
    expect(result.notes).toEqual([
      "hanging endpoint: 9 requests, at most 4 at once, held 28 s; the other merchant's endpoint: 4 deliveries, 2 of them meanwhile",
    ]);
  });

  it('catches more requests held at once than the concurrency', () => {
    const input = isolated();
    input.hanging.maxOpen = 5;
    expect(checkDeliveryIsolation(input).violations).toEqual([
      'the hanging endpoint held 5 requests at once (limit 4 per merchant)',
    ]);
  });

  it('catches another merchant starved while the endpoint hangs', () => {
    const input = isolated();
    input.answeredAt = [t0 + 1_000, t0 + 30_000];
    expect(checkDeliveryIsolation(input).violations).toEqual([
      "no delivery reached the other merchant's endpoint during the 28 s the hanging one held requests",
    ]);
  });

  it('catches a run whose hanging endpoint was never called', () => {
    const input = isolated();
    input.hanging = { maxOpen: 0, requests: 0, held: [] };
    expect(checkDeliveryIsolation(input).violations).toEqual([
      'the hanging endpoint was never called: nothing was checked',
    ]);
  });
});
