import { MockActivityEnvironment } from '@temporalio/testing';
import { createActivities } from '../../activities';
import { createWorkflowStarters } from '../../src/worker';
import type { OpenedAndCharged } from '../../activities/subscriptions';
import { Invoice, Merchant } from '../../src/db/entities';
import { insertSubscription } from '../../src/domain/subscriptions';
import {
  createTestMerchant,
  startPaymentStack,
  testLogger,
  type PaymentStack,
  type TestMerchant,
} from '../helpers/stack';

/**
 * The renewal's open-and-charge step (`openAndChargeInvoice`, patch renewal-open-in-charge-v1)
 * run as the server runs it, twice: against PostgreSQL and the provider sandbox over HTTP. A run
 * again (the server's retry after a lost answer) finds the invoice and answers the recorded
 * attempt: the provider is not asked again, and a declined attempt keeps its retry time.
 */
describe('the open-and-charge step, run again', () => {
  let stack: PaymentStack;
  let merchant: TestMerchant;
  let activities: ReturnType<typeof createActivities>;

  beforeAll(async () => {
    stack = await startPaymentStack('open-and-charge');
    merchant = await createTestMerchant(stack.orm, 'Open and charge merchant');
    activities = createActivities({
      orm: stack.orm,
      logger: testLogger,
      providers: stack.providers,
      publicBaseUrl: 'http://127.0.0.1:9',
      starters: createWorkflowStarters({
        client: stack.api.client,
        taskQueue: 'unused-open-and-charge',
        callbackRetryInitialSeconds: 10,
      }),
      smtpUrl: 'smtp://127.0.0.1:9',
    });
  });
  afterAll(() => stack.close());

  async function subscriptionWithCard(cardToken: string) {
    const em = stack.orm.em.fork();
    const { subscription, phases } = insertSubscription(em, await em.findOneOrFail(Merchant, merchant.merchantId), {
      merchantId: merchant.merchantId,
      environment: 'test',
      processor: 'sandbox',
      externalId: `open-and-charge-${Date.now()}-${Math.random()}`,
      amountMinor: 1250,
      currency: 'USD',
      billingIntervalDays: 30,
      cardToken,
      customer: { email: 'ada@example.com' },
      retryScheduleDays: [2],
      phases: [],
    });
    subscription.status = 'active';
    await em.flush();
    return {
      period: {
        subscriptionId: subscription.id,
        periodIndex: 1,
        phaseId: phases[0]!.id,
        amountMinor: 1250,
        periodStart: new Date(Date.UTC(2026, 1, 1)).toISOString(),
        periodEnd: new Date(Date.UTC(2026, 2, 3)).toISOString(),
      },
      retryDelayMs: 2 * 86_400_000,
      discardOnReject: false,
    };
  }

  const runStep = (input: Awaited<ReturnType<typeof subscriptionWithCard>>): Promise<OpenedAndCharged> =>
    new MockActivityEnvironment({ startToCloseTimeoutMs: 6_000 }).run(activities.openAndChargeInvoice, input);

  it('a paid attempt: answered paid again, one capture at the provider', async () => {
    const input = await subscriptionWithCard('tok_success');
    const first = await runStep(input);
    const again = await runStep(input);
    expect(first.opened).toMatchObject({ kind: 'open', attempts: 0 });
    expect(first.charged).toMatchObject({ kind: 'paid' });
    expect(again.opened).toMatchObject({ kind: 'paid' });
    expect(again.charged).toBeUndefined();
    // Its receipt was not sent (no SMTP server here): the run again names it, so the workflow
    // sends it (chaos run, 2026-11-24: a worker killed mid-send left two receipts never sent).
    const receipt = (first.charged as { outbox: { emailIds: string[] } }).outbox.emailIds;
    expect(receipt).toHaveLength(1);
    expect(again.opened.kind === 'paid' && again.opened.outbox.emailIds).toEqual(receipt);
    const captures = await stack.ledger('capture', input.period.subscriptionId, 'subscriptionId');
    expect(captures.map((c) => c.status)).toEqual(['succeeded']);
  });

  it('a declined attempt: answered declined again with the same retry time, nothing asked twice', async () => {
    const input = await subscriptionWithCard('tok_insufficient_funds');
    const first = await runStep(input);
    const again = await runStep(input);
    expect(first.charged).toMatchObject({ kind: 'declined' });
    const nextAttemptAt = (first.charged as { nextAttemptAt: string | null }).nextAttemptAt;
    expect(nextAttemptAt).not.toBeNull();
    expect(again.opened).toMatchObject({ kind: 'open', attempts: 1 });
    expect(again.charged).toMatchObject({ kind: 'declined', nextAttemptAt });
    const captures = await stack.ledger('capture', input.period.subscriptionId, 'subscriptionId');
    expect(captures.map((c) => c.status)).toEqual(['failed']);
  });

  it('a charge the provider refused unavailable (never sent) is reconciled without a lookup: not_found, then charged once', async () => {
    const input = await subscriptionWithCard('tok_success');
    await stack.sandbox('/_admin/faults', { payments: 'unavailable' });
    try {
      await expect(runStep(input)).rejects.toThrow(/unavailable/);
    } finally {
      await stack.sandbox('/_admin/faults', {});
    }
    const [invoice] = await stack.orm.em.fork().find(Invoice, { subscription: input.period.subscriptionId });
    expect(invoice).toMatchObject({ status: 'open', attempts: 0, providerCallSentAt: null });
    const invoiceId = invoice!.id;
    const request = { invoiceId, attempt: 1, retryDelayMs: input.retryDelayMs, discardOnReject: false };
    const refused = [['POST', '/v1/payments', invoiceId, 503]];
    const seen = async () =>
      (await stack.requests(invoiceId)).map((r) => [r.method, r.url, r.idempotencyKey, r.status]);
    expect(await seen()).toEqual(refused);

    // Asked what became of it: nothing was sent, so nothing is asked (decision 0058).
    const found = await new MockActivityEnvironment({ startToCloseTimeoutMs: 6_000 }).run(
      activities.reconcileInvoiceCharge,
      request,
    );
    expect(found).toEqual({ kind: 'not_found' });
    expect(await seen()).toEqual(refused);

    // The same attempt again, the provider back: one capture.
    const charged = await runStep(input);
    expect(charged.charged).toMatchObject({ kind: 'paid' });
    expect(await seen()).toEqual([...refused, ['POST', '/v1/payments', invoiceId, 200]]);
    const captures = await stack.ledger('capture', input.period.subscriptionId, 'subscriptionId');
    expect(captures.map((c) => [c.status, c.idempotencyKey])).toEqual([['succeeded', invoiceId]]);
  });
});
