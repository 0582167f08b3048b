import {
  emailRelayWorkflowSummary,
  eventDeliveriesWorkflowSummary,
  merchantEventsWorkflowSummary,
  paymentWorkflowSummary,
  refundWorkflowSummary,
  subscriptionWorkflowSummary,
  SUMMARY_MAX_BYTES,
  sweepOrphansWorkflowSummary,
  text,
  truncateUtf8,
  type WorkflowSummary,
} from '../../src/rules/workflowSummaries';

const bytes = (s: string) => Buffer.byteLength(s, 'utf8');

/** What Temporal accepts and the UI shows as one line. */
function expectOneBoundedLine(summary: WorkflowSummary): void {
  expect(summary.staticSummary).not.toMatch(/[\r\n]/);
  expect(bytes(summary.staticSummary)).toBeLessThanOrEqual(SUMMARY_MAX_BYTES);
}

const payment = {
  id: 'pay_01JZ0000000000000000000000',
  merchantId: 'mer_01JZ0000000000000000000000',
  externalId: 'order-1',
  amountMinor: 1250,
  currency: 'eur',
  environment: 'test',
  expiresAt: new Date('2026-01-02T03:04:05.000Z'),
  callbacks: true,
};

describe('workflow summaries (Temporal UI user metadata)', () => {
  it('a payment: kind, amount and currency, merchant and externalId on one line; details in markdown', () => {
    const s = paymentWorkflowSummary(payment);
    expect(s.staticSummary).toBe(
      'Payment 12.50 EUR · test · merchant mer_01JZ0000000000000000000000 · externalId order-1',
    );
    expect(s.staticDetails.split('\n')).toEqual([
      '**Payment pay_01JZ0000000000000000000000 · test**',
      '',
      '- Merchant: mer_01JZ0000000000000000000000',
      '- Amount: 12.50 EUR',
      '- External id: order-1',
      '- Expires at: 2026-01-02T03:04:05.000Z',
      '- Merchant callbacks: yes',
    ]);
    expectOneBoundedLine(s);
  });

  it('amounts go through the one money converter (exponent 0 and 3 currencies)', () => {
    expect(paymentWorkflowSummary({ ...payment, amountMinor: 1200, currency: 'JPY' }).staticSummary).toContain(
      'Payment 1200 JPY',
    );
    expect(paymentWorkflowSummary({ ...payment, amountMinor: 1005, currency: 'BHD' }).staticSummary).toContain(
      'Payment 1.005 BHD',
    );
  });

  it('a refund names its payment', () => {
    const s = refundWorkflowSummary({
      id: 'ref_1',
      paymentId: 'pay_1',
      merchantId: 'mer_1',
      externalId: 'refund-1',
      amountMinor: 500,
      currency: 'USD',
      callbacks: false,
    });
    expect(s.staticSummary).toBe('Refund 5.00 USD of pay_1 · merchant mer_1 · externalId refund-1');
    expect(s.staticDetails).toContain('- Payment: pay_1');
    expect(s.staticDetails).toContain('- Merchant callbacks: no');
    expect(s.staticDetails.split('\n')[0]).toBe('**Refund ref_1**');
  });

  it('a subscription shows its recurring price and its earlier phases', () => {
    const plan = {
      phases: [
        { id: 'ph_1', amountMinor: 0, billingIntervalDays: 14, iterations: 1 },
        { id: 'ph_2', amountMinor: 999, billingIntervalDays: 30, iterations: null },
      ],
      retryScheduleDays: [1, 3],
    };
    const s = subscriptionWorkflowSummary({
      id: 'sub_1',
      merchantId: 'mer_1',
      externalId: 'plan-42',
      currency: 'EUR',
      plan,
      environment: 'live',
      needsAuthorization: true,
    });
    expect(s.staticSummary).toBe(
      'Subscription 9.99 EUR every 30 days (after 1 earlier phase) · live · merchant mer_1 · externalId plan-42',
    );
    expect(s.staticDetails).toContain('- Plan: 0.00 EUR every 14 days × 1, then 9.99 EUR every 30 days from then on');
    expect(s.staticDetails).toContain('- Retries after a failed charge: 1 day, 3 days');
    expect(s.staticDetails).toContain('- Card: authorized by the customer on the hosted page');
    expect(s.staticDetails.split('\n')[0]).toBe('**Subscription sub_1 · live**');
    const single = subscriptionWorkflowSummary({
      ...plan,
      id: 'sub_2',
      merchantId: 'mer_1',
      externalId: 'x',
      currency: 'EUR',
      plan: { ...plan, phases: [plan.phases[1]!] },
    });
    expect(single.staticSummary).toBe('Subscription 9.99 EUR every 30 days · merchant mer_1 · externalId x');
  });

  it('deliveries, email relays and the sweep say what they are and who started them', () => {
    const events = merchantEventsWorkflowSummary({
      merchantId: 'mer_1',
      eventIds: ['evt_1', 'evt_2'],
      resourceId: 'sub_1',
      startedBy: 'subscription',
    });
    expect(events.staticSummary).toBe('Merchant callbacks: 2 events of sub_1 · merchant mer_1');
    expect(events.staticDetails).toContain('- Started by: the subscription workflow');
    const relayed = merchantEventsWorkflowSummary({
      merchantId: 'mer_1',
      eventIds: ['evt_3'],
      type: 'payment.succeeded',
      resourceId: 'pay_1',
      startedBy: 'sweeper',
    });
    expect(relayed.staticSummary).toBe('Merchant callback: payment.succeeded of pay_1 · merchant mer_1');
    expect(relayed.staticDetails).toContain('orphan sweeper');
    const email = emailRelayWorkflowSummary({ emailId: 'eml_1', merchantId: 'mer_1' });
    expect(email.staticSummary).toBe('Customer email eml_1 · merchant mer_1');
    expect(email.staticDetails).toContain('never in Temporal');
    const sweep = sweepOrphansWorkflowSummary({ everySeconds: 60, kinds: ['payments', 'refunds'] });
    expect(sweep.staticSummary).toBe('Orphan sweep every 60 s · payments, refunds');
    for (const s of [events, relayed, email, sweep]) expectOneBoundedLine(s);
  });

  it("a merchant's delivery workflow names the merchant and where its deliveries are read", () => {
    const s = eventDeliveriesWorkflowSummary({ merchantId: 'mer_01JZ0000000000000000000000' });
    expect(s.staticSummary).toBe('Event deliveries · merchant mer_01JZ0000000000000000000000');
    expect(s.staticDetails.split('\n')).toEqual([
      '**Event deliveries of one merchant**',
      '',
      '- Merchant: mer_01JZ0000000000000000000000',
      '- Delivers: every pending event to its callbackUrl and matching webhook endpoints, a few at a time',
      '- What to read: GET /events/{id} shows each attempt; pending deliveries are rows of delivery_jobs',
    ]);
    expectOneBoundedLine(s);
    // A merchant id at its longest still fits Temporal's 200 bytes.
    expectOneBoundedLine(eventDeliveriesWorkflowSummary({ merchantId: 'mer_'.padEnd(200, 'x') }));
  });

  it("escapes the merchant's text: markdown, line breaks and control characters show as text", () => {
    const s = paymentWorkflowSummary({ ...payment, externalId: '**bold** [x](javascript:1)\n# heading\u0000|`c`' });
    expect(s.staticSummary).toBe(
      'Payment 12.50 EUR · test · merchant mer_01JZ0000000000000000000000 · externalId \\*\\*bold\\*\\* \\[x\\](javascript:1) # heading \\|\\`c\\`',
    );
    expect(s.staticDetails).toContain('- External id: \\*\\*bold\\*\\* \\[x\\](javascript:1) # heading \\|\\`c\\`');
    expect(s.staticDetails.split('\n')).toHaveLength(7);
    expect(text('a_b <c> ~d~ & e\\')).toBe('a\\_b \\<c\\> \\~d\\~ \\& e\\\\');
  });

  it('keeps a long externalId within Temporal’s 200 bytes, cut at a character', () => {
    const long = paymentWorkflowSummary({ ...payment, externalId: 'é'.repeat(255) });
    expectOneBoundedLine(long);
    expect(long.staticSummary).toMatch(/externalId é+…$/);
    expect(long.staticDetails).toContain(`- External id: ${'é'.repeat(255)}`);
    const emoji = paymentWorkflowSummary({
      ...payment,
      merchantId: 'mer_'.padEnd(150, 'x'),
      externalId: '😀'.repeat(64),
    });
    expectOneBoundedLine(emoji);
    expect(emoji.staticSummary.endsWith('…')).toBe(true);
    expect(emoji.staticSummary).not.toContain('\uFFFD');
    expect(truncateUtf8('ab\\*cdef', 6)).toBe('ab…');
    expect(truncateUtf8('short', 200)).toBe('short');
  });

  it('carries no card token, customer data or callback URL (they are not among its inputs)', () => {
    const subscription = {
      id: 'sub_1',
      merchantId: 'mer_1',
      externalId: 'plan-42',
      currency: 'EUR',
      plan: {
        phases: [{ id: 'ph', amountMinor: 100, billingIntervalDays: 30, iterations: null }],
        retryScheduleDays: [],
      },
      // What a caller spreading the record would also pass:
      cardToken: 'tok_SECRET',
      customer: { email: 'secret@example.com' },
      callbackUrl: 'https://merchant.example/cb?token=SECRET',
    };
    const s = subscriptionWorkflowSummary(subscription);
    expect(`${s.staticSummary}\n${s.staticDetails}`).not.toMatch(/SECRET|secret@/);
  });
});
