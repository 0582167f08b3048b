import { temporal } from '@temporalio/proto';
import { verify } from '../../src/providers/signature';
import { signingSecrets } from '../../src/domain/signingSecrets';
import { subscriptionWorkflowId } from '../../workflows/subscriptionApi';
import { startCallbackReceiver } from '../helpers/callbackReceiver';
import { eventually } from '../helpers/http';
import {
  createTestMerchant,
  startPaymentStack,
  TEST_PAYLOAD_KEYS,
  type PaymentStack,
  type TestMerchant,
} from '../helpers/stack';
import { EncryptionCodec } from '../../src/temporal/payloadCodec';

const testCodec = EncryptionCodec.fromEnv(TEST_PAYLOAD_KEYS);
import { sleep, subscriptionClient, succeededByInvoice } from '../helpers/subscriptions';

/**
 * Subscriptions on the real stack with a one-second billing day: renewals, phases, emails,
 * callbacks, cancellation and continue-as-new, all checked against the sandbox ledger.
 */
describe('subscriptions (token flow, 1 s billing day)', () => {
  const DAY_MS = 1000;
  let stack: PaymentStack;
  let merchant: TestMerchant;
  let subs: ReturnType<typeof subscriptionClient>;

  beforeAll(async () => {
    stack = await startPaymentStack('subscriptions', { billingDaySeconds: DAY_MS / 1000, historyEventLimit: 60 });
    merchant = await createTestMerchant(stack.orm, 'Subscription merchant');
    subs = subscriptionClient(stack, merchant);
  });
  afterAll(() => stack.close());

  it('charges the first period at once, then each period once; cancelling keeps the period and stops charges', async () => {
    const created = await subs.create({ amount: 9.99, currency: 'usd', cardToken: 'tok_success' });
    expect(created.status).toBe(200);
    expect(created.body).toMatchObject({
      status: 'active',
      amount: 9.99,
      currency: 'USD',
      billingIntervalDays: 1,
      redirectUrl: null,
      cancelledAt: null,
      cancellationReason: null,
      retryScheduleDays: [1, 3, 5],
      phases: [{ name: 'evergreen', order: 1, iterations: null, amount: 9.99, billingIntervalDays: 1 }],
      customerId: null,
    });
    expect(created.body.id).toMatch(/^sub_[0-9A-HJKMNP-TV-Z]{26}$/);
    expect(created.body.phases[0].id).toMatch(/^ph_/);
    const id = created.body.id as string;
    const firstEnd = Date.parse(created.body.currentPeriodEnd);
    expect(firstEnd - Date.parse(created.body.currentPeriodStart)).toBe(DAY_MS);

    // Three renewals at least.
    await subs.untilPaid(id, 4);
    const cancelled = await subs.cancel(id);
    expect(cancelled.status).toBe(200);
    expect(cancelled.body).toMatchObject({ status: 'cancelled', cancellationReason: 'merchant_request' });
    expect(Date.parse(cancelled.body.cancelledAt)).toBeGreaterThan(Date.parse(created.body.createdAt));

    const invoices = await subs.invoices(id);
    // Periods follow each other without gap or overlap; none skipped, none billed twice.
    invoices.forEach((inv, i) => {
      expect(inv.periodIndex).toBe(i);
      expect(inv.amountMinor).toBe(999);
      if (i > 0) expect(inv.periodStart.getTime()).toBe(invoices[i - 1]!.periodEnd.getTime());
    });
    const paid = invoices.filter((i) => i.status === 'paid');
    expect(paid.length).toBeGreaterThanOrEqual(4);
    // The current period stays valid after the cancel: it is the latest invoice's.
    const last = invoices[invoices.length - 1]!;
    expect(cancelled.body.currentPeriodEnd).toBe(last.periodEnd.toISOString());
    expect(invoices.filter((i) => i.status === 'open')).toHaveLength(0);

    const captures = await subs.captures(id);
    const byInvoice = succeededByInvoice(captures);
    expect([...byInvoice.keys()].sort()).toEqual(paid.map((i) => i.id).sort());
    expect([...byInvoice.values()].every((n) => n === 1)).toBe(true);
    expect(captures.every((c) => c.status === 'succeeded' && c.amount === 9.99 && c.currency === 'USD')).toBe(true);
    // The first attempt of an invoice is charged with the invoice id as idempotency key.
    expect(captures.every((c) => c.idempotencyKey === c.metadata.invoiceId)).toBe(true);

    // Money invariant 3: after three more periods, nothing more was charged.
    await sleep(3 * DAY_MS + 500);
    expect(await subs.captures(id)).toHaveLength(captures.length);
    expect((await subs.invoices(id)).length).toBe(invoices.length);
    const later = await subs.get(id);
    expect(later.body).toMatchObject({ status: 'cancelled', currentPeriodEnd: cancelled.body.currentPeriodEnd });

    // Emails: activated once, one receipt per paid invoice, cancelled once; each sent once.
    const mail = await eventually(
      async () => subs.mail(id),
      (list) => list.some((e) => /cancelled/.test(e.subject)),
    );
    expect(mail.every((e) => e.to === 'customer@example.com')).toBe(true);
    expect(mail.filter((e) => /is active/.test(e.subject))).toHaveLength(1);
    const receipts = mail.filter((e) => /^Payment receipt: 9\.99 USD/.test(e.subject));
    expect(receipts).toHaveLength(paid.length);
    expect(new Set(receipts.map((e) => /Invoice: (inv_\w+)/.exec(e.text)?.[1])).size).toBe(paid.length);
    expect(mail.filter((e) => /cancelled/.test(e.subject))).toHaveLength(1);
    expect(new Set(mail.map((e) => e.messageId)).size).toBe(mail.length);
  });

  it("opens each period's invoice and sends its emails inside the charge: no other step in the workflow, each email once", async () => {
    const created = await subs.create({ cardToken: 'tok_success', billingIntervalDays: 1 });
    const id = created.body.id as string;
    await subs.untilPaid(id, 3);
    // The activation email and the receipts so far, each sent once.
    const mail = await eventually(
      async () => subs.mail(id),
      (list) => list.filter((e) => /^Payment receipt/.test(e.subject)).length >= 3,
    );
    expect(mail.filter((e) => /is active/.test(e.subject))).toHaveLength(1);
    expect(new Set(mail.map((e) => e.messageId)).size).toBe(mail.length);

    const { EventType } = temporal.api.enums.v1;
    // Steps of an activity type in every run of the workflow (it may have continued as new):
    // scheduled activities and local activities' markers.
    const client = stack.api.client.workflow;
    const readSteps = async () => {
      const events: temporal.api.history.v1.IHistoryEvent[] = [];
      for await (const run of client.list({ query: `WorkflowId = "${subscriptionWorkflowId(id)}"` })) {
        events.push(...((await client.getHandle(run.workflowId, run.runId).fetchHistory()).events ?? []));
      }
      // Markers' details are encrypted like every payload (decision 0078): read through the codec.
      const markers = await Promise.all(
        events
          .filter((e) => e.eventType === EventType.EVENT_TYPE_MARKER_RECORDED)
          .map(async (e) => {
            const [payload] = e.markerRecordedEventAttributes?.details?.data?.payloads ?? [];
            return payload ? Buffer.from((await testCodec.decode([payload]))[0]?.data ?? []) : Buffer.alloc(0);
          }),
      );
      return (type: string) =>
        events.filter(
          (e) =>
            e.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED &&
            e.activityTaskScheduledEventAttributes?.activityType?.name === type,
        ).length + markers.filter((m) => m.includes(`"activity_type":"${type}"`)).length;
    };
    // The first period and two renewals, each opened and charged by one step. A local activity's
    // marker is written when its workflow task completes, after the invoice it paid is committed:
    // the third may reach the history a moment after the API shows it paid.
    const steps = await eventually(readSteps, (count) => count('openAndChargeInvoice') >= 3);
    expect(steps('openInvoice')).toBe(0);
    expect(steps('chargeInvoice')).toBe(0);
    expect(steps('sendEmail')).toBe(0);
    await subs.cancel(id, '?notify=false');
  });

  it('runs phases in order (a free trial charges nothing), then the evergreen phase', async () => {
    const created = await subs.create({
      amount: 20,
      billingIntervalDays: 1,
      cardToken: 'tok_success',
      phases: [
        { name: 'trial', iterations: 2, amount: 0, billingIntervalDays: 1 },
        { name: 'intro', iterations: 2, amount: 5.5, billingIntervalDays: 2 },
      ],
    });
    expect(created.status).toBe(200);
    expect(created.body.status).toBe('active'); // a free first phase activates without a charge
    expect(created.body.phases).toEqual([
      expect.objectContaining({ name: 'trial', order: 1, iterations: 2, amount: 0, billingIntervalDays: 1 }),
      expect.objectContaining({ name: 'intro', order: 2, iterations: 2, amount: 5.5, billingIntervalDays: 2 }),
      expect.objectContaining({ name: 'evergreen', order: 3, iterations: null, amount: 20, billingIntervalDays: 1 }),
    ]);
    const id = created.body.id as string;
    expect(await subs.captures(id)).toHaveLength(0);

    // trial 1 s + 1 s, intro 2 s + 2 s, then evergreen 1 s periods: 7 invoices by ~7 s.
    await subs.untilPaid(id, 7, 30_000);
    await subs.cancel(id, '?reason=customer_moved&notify=false');
    const invoices = (await subs.invoices(id)).slice(0, 7);
    expect(invoices.map((i) => i.amountMinor)).toEqual([0, 0, 550, 550, 2000, 2000, 2000]);
    expect(invoices.map((i) => i.periodEnd.getTime() - i.periodStart.getTime())).toEqual([
      DAY_MS,
      DAY_MS,
      2 * DAY_MS,
      2 * DAY_MS,
      DAY_MS,
      DAY_MS,
      DAY_MS,
    ]);
    const phaseIds = (created.body.phases as Array<{ id: string }>).map((p) => p.id);
    expect(invoices.map((i) => i.phase.id)).toEqual([0, 0, 1, 1, 2, 2, 2].map((n) => phaseIds[n]));

    // Only charged periods reach the provider, each once, for its phase's amount.
    const captures = (await subs.captures(id)).filter((c) => c.status === 'succeeded');
    const paidCharged = (await subs.invoices(id)).filter((i) => i.status === 'paid' && i.amountMinor > 0);
    expect(captures.map((c) => c.metadata.invoiceId).sort()).toEqual(paidCharged.map((i) => i.id).sort());
    expect(captures.slice(0, 4).map((c) => c.amount)).toEqual([5.5, 5.5, 20, 20]);

    const after = await subs.get(id);
    expect(after.body).toMatchObject({ status: 'cancelled', cancellationReason: 'customer_moved' });
    // notify=false: no cancellation email (the activation email and receipts were sent).
    await sleep(500);
    const mail = subs.mail(id);
    expect(mail.filter((e) => /cancelled/.test(e.subject))).toHaveLength(0);
    expect(mail.filter((e) => /is active/.test(e.subject))).toHaveLength(1);
  });

  it('answers a second DELETE with the cancelled subscription unchanged', async () => {
    const created = await subs.create({ cardToken: 'tok_success', billingIntervalDays: 30 });
    const id = created.body.id as string;
    const first = await subs.cancel(id, '?reason=too_expensive');
    expect(first.body).toMatchObject({ status: 'cancelled', cancellationReason: 'too_expensive' });
    const second = await subs.cancel(id, '?reason=other&notify=true');
    expect(second.status).toBe(200);
    expect(second.body).toEqual(first.body);
    // Concurrent cancels of a live subscription: one cancellation, one email.
    const other = (await subs.create({ cardToken: 'tok_success', billingIntervalDays: 30 })).body.id as string;
    const answers = await Promise.all([1, 2, 3, 4, 5].map(() => subs.cancel(other)));
    expect(answers.every((a) => a.status === 200 && a.body.status === 'cancelled')).toBe(true);
    expect(new Set(answers.map((a) => a.body.cancelledAt)).size).toBe(1);
    await eventually(
      async () => subs.mail(other).filter((e) => /cancelled/.test(e.subject)),
      (l) => l.length >= 1,
    );
    await sleep(300);
    expect(subs.mail(other).filter((e) => /cancelled/.test(e.subject))).toHaveLength(1);
  });

  it('replays a create with the same externalId (one subscription, one first charge)', async () => {
    const externalId = `replay-${Date.now()}`;
    const answers = await Promise.all(
      Array.from({ length: 8 }, () =>
        subs.create({ externalId, cardToken: 'tok_success', billingIntervalDays: 30, amount: 12 }),
      ),
    );
    expect(answers.every((a) => a.status === 200)).toBe(true);
    const ids = new Set(answers.map((a) => a.body.id));
    expect(ids.size).toBe(1);
    const id = [...ids][0] as string;
    expect(await subs.captures(id)).toHaveLength(1);
    const conflict = await subs.create({ externalId, cardToken: 'tok_success', billingIntervalDays: 30, amount: 13 });
    expect(conflict.status).toBe(400);
    expect(conflict.body.code).toBe('external_id_conflict');
    await subs.cancel(id);
  });

  it('sends signed subscription callbacks: activated, charge_succeeded, cancelled', async () => {
    const receiver = await startCallbackReceiver();
    try {
      const secret = (await signingSecrets(stack.orm.em.fork(), stack.providers.secrets, merchant.merchantId, 'test'))
        .current;
      const created = await subs.create({ cardToken: 'tok_success', callbackUrl: receiver.url });
      const id = created.body.id as string;
      await subs.untilPaid(id, 2);
      await subs.cancel(id);
      const received = await eventually(
        async () => receiver.received.filter((r) => r.json.data.id === id),
        (l) => l.some((r) => r.json.type === 'subscription.cancelled'),
      );
      const types = received.map((r) => r.json.type);
      expect(types.filter((t) => t === 'subscription.activated')).toHaveLength(1);
      expect(types.filter((t) => t === 'subscription.charge_succeeded').length).toBeGreaterThanOrEqual(2);
      expect(types.filter((t) => t === 'subscription.cancelled')).toHaveLength(1);
      for (const r of received) {
        expect(verify(secret, r.body, r.signature ?? '')).toBe(true);
        expect(r.json.data).toMatchObject({ id, externalId: created.body.externalId });
        expect(Array.isArray(r.json.data.phases)).toBe(true);
      }
      expect(received.find((r) => r.json.type === 'subscription.cancelled')!.json.data.status).toBe('cancelled');
    } finally {
      await receiver.close();
    }
  });

  it('continues as new between periods: runs stay short, periods carry on without gap or repeat', async () => {
    const created = await subs.create({ cardToken: 'tok_success' });
    const id = created.body.id as string;
    const workflowId = subscriptionWorkflowId(id);
    await eventually(
      async () => {
        const runs: number[] = [];
        for await (const wf of stack.api.client.workflow.list({ query: `WorkflowId = "${workflowId}"` })) {
          runs.push(wf.historyLength);
        }
        return runs;
      },
      (runs) => runs.length >= 3,
      40_000,
      500,
    );
    await subs.cancel(id);
    const runs: Array<{ status: string; historyLength: number }> = [];
    for await (const wf of stack.api.client.workflow.list({ query: `WorkflowId = "${workflowId}"` })) {
      runs.push({ status: wf.status.name, historyLength: wf.historyLength });
    }
    expect(runs.filter((r) => r.status === 'CONTINUED_AS_NEW').length).toBeGreaterThanOrEqual(2);
    // The limit is 60 here; a period's steps never push a run far past it (the product default is 600 of 1,000).
    expect(Math.max(...runs.map((r) => r.historyLength))).toBeLessThan(100);
    const invoices = await subs.invoices(id);
    invoices.forEach((inv, i) => {
      expect(inv.periodIndex).toBe(i);
      if (i > 0) expect(inv.periodStart.getTime()).toBe(invoices[i - 1]!.periodEnd.getTime());
    });
    const byInvoice = succeededByInvoice(await subs.captures(id));
    expect(byInvoice.size).toBe(invoices.filter((i) => i.status === 'paid').length);
    expect([...byInvoice.values()].every((n) => n === 1)).toBe(true);
  });
});
