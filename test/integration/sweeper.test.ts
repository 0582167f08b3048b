import { ScheduleNotFoundError, ScheduleOverlapPolicy } from '@temporalio/client';
import {
  createTestMerchant,
  startPaymentStack,
  startTestApi,
  type PaymentStack,
  type TestApi,
  type TestMerchant,
} from '../helpers/stack';
import { call, eventually } from '../helpers/http';
import {
  sweepOrphansWorkflow,
  sweepScheduleId,
  type SweepOrphansInput,
  type SweepResult,
} from '../../workflows/sweepOrphans';
import { sweepOrphanPaymentsWorkflow } from '../../workflows/sweepPayments';
import { paymentWorkflowId } from '../../workflows/paymentApi';
import { ensureSchedules, SWEEP_ARGS } from '../../src/temporal/schedules';
import { DeliveryJob, Email, Invoice, Merchant, Subscription } from '../../src/db/entities';
import { recordEmail } from '../../src/domain/emails';
import { recordEvent } from '../../src/domain/events';
import { subscriptionEmail } from '../../src/domain/subscriptionEmails';
import { newId } from '../../src/ids';
import { subscriptionWorkflowId } from '../../workflows/subscriptionApi';
import { startCallbackReceiver } from '../helpers/callbackReceiver';
import { paymentRow } from '../helpers/records';
import { SANDBOX_WEBHOOK_SECRET } from '../helpers/stack';
import { signWebhook } from '../../dev/sandbox/webhooks';
import { disputeWorkflowId } from '../../workflows/disputeApi';
import { sleep, subscriptionClient } from '../helpers/subscriptions';
import { emailRelayWorkflowId } from '../../src/temporal/outboxEmailGateway';
import { outboxEmailWorkflow } from '../../workflows/outboxEmail';
import { createMerchant } from '../../src/domain/merchants';
import { eventDeliveriesWorkflowId } from '../../workflows/eventDeliveriesApi';

/** The orphan sweeper: paged, past a grace age, skipping records with a workflow, each examined once. */
describe('orphan sweeper', () => {
  let stack: PaymentStack;
  let cutOff: TestApi;
  let merchant: TestMerchant;

  beforeAll(async () => {
    stack = await startPaymentStack('sweeper');
    merchant = await createTestMerchant(stack.orm, 'Sweeper merchant');
    // An API whose Temporal answers nothing: what it records has no workflow.
    cutOff = await startTestApi({
      orm: stack.orm,
      providers: stack.providers,
      temporalAddress: '127.0.0.1:9',
      settings: { taskQueue: stack.taskQueue },
    });
  });
  afterAll(async () => {
    await cutOff.close();
    await stack.close();
  });

  const orphanPayment = async (name: string) => {
    const res = await call(cutOff.baseUrl, 'POST', '/payments', merchant.auth, {
      amount: 2,
      currency: 'USD',
      externalId: `${name}-${Date.now()}`,
      customer: { email: 'c@example.com' },
    });
    expect(res.status).toBe(503);
    return (res.body.details as { payment: { id: string } }).payment.id;
  };
  const sweep = (input: Partial<SweepOrphansInput> = {}) =>
    stack.worker.client.workflow.execute(sweepOrphansWorkflow, {
      taskQueue: stack.taskQueue,
      workflowId: `sweep-test-${Date.now()}-${Math.random()}`,
      args: [{ graceSeconds: 1, pageSize: 1, maxRows: 1000, merchantId: merchant.merchantId, ...input }],
    });
  const nothingElse = { refunds: 0, subscriptions: 0, emails: 0, merchantEvents: 0, disputes: 0 };
  const workflowStatus = async (paymentId: string) =>
    (await stack.api.client.workflow.getHandle(paymentWorkflowId(paymentId)).describe()).status.name;

  it('pages through every orphan once, skips records with a workflow, and leaves younger ones for later', async () => {
    // A hosted payment with its workflow (it has a provider transaction): never a candidate.
    const hosted = await call(stack.api.baseUrl, 'POST', '/payments', merchant.auth, {
      amount: 2,
      currency: 'USD',
      externalId: `hosted-${Date.now()}`,
      customer: { email: 'c@example.com' },
    });
    expect(hosted.body).toMatchObject({ status: 'created', providerTransactionId: expect.any(String) });
    const orphans = [await orphanPayment('o1'), await orphanPayment('o2'), await orphanPayment('o3')];
    await new Promise((r) => setTimeout(r, 1100));

    // One row per page: three pages.
    expect(await sweep()).toEqual({ payments: 3, ...nothingElse });
    for (const id of orphans) expect(await workflowStatus(id)).toBe('RUNNING');
    // Started by the sweeper: the same summary as the API's, and no request id (no request).
    const swept = await stack.api.client.workflow.getHandle(paymentWorkflowId(orphans[0]!)).describe();
    expect(await swept.staticSummary()).toMatch(
      new RegExp(`^Payment 2\\.00 USD · test · merchant ${merchant.merchantId} · externalId o1-\\d+$`),
    );
    expect(swept.memo ?? {}).toEqual({});
    // The watermark is past them: the next sweep examines nothing.
    expect(await sweep()).toEqual({ payments: 0, ...nothingElse });

    // Younger than the grace age: left for a later sweep (the watermark stays before it).
    const young = await orphanPayment('young');
    expect(await sweep({ graceSeconds: 60 })).toEqual({ payments: 0, ...nothingElse });
    expect(await sweep()).toEqual({ payments: 1, ...nothingElse });
    expect(await workflowStatus(young)).toBe('RUNNING');
  });

  it('a row committed after the watermark passed its time is still examined (the lookback)', async () => {
    const first = await orphanPayment('before-late');
    await new Promise((r) => setTimeout(r, 1100));
    expect(await sweep()).toEqual({ payments: 1, ...nothingElse });
    expect(await workflowStatus(first)).toBe('RUNNING');
    // A transaction that began before that row's and committed only now: its created_at (the
    // transaction's start) is behind the watermark the sweep just saved.
    const late = await orphanPayment('late-commit');
    await stack.orm.em
      .fork()
      .execute(`update payments set created_at = created_at - interval '3 minutes' where id = ?`, [late]);
    // Behind the watermark, so not counted again; but its workflow is started.
    await sweep();
    expect(await workflowStatus(late)).toBe('RUNNING');
    // Examined again within the lookback: nothing more happens to either.
    await sweep();
    expect(await workflowStatus(first)).toBe('RUNNING');
  });

  it('gives a subscription committed without its workflow one: charged once, as the merchant asked', async () => {
    const created = await call(cutOff.baseUrl, 'POST', '/subscriptions', merchant.auth, {
      amount: 3,
      currency: 'USD',
      billingIntervalDays: 30,
      externalId: `orphan-sub-${Date.now()}`,
      cardToken: 'tok_success',
      customer: { email: 'c@example.com' },
    });
    // Recorded, but the workflow service never answered: a 503 that carries the subscription.
    expect(created.status).toBe(503);
    expect(created.body).toMatchObject({
      code: 'service_unavailable',
      details: { subscription: { status: 'created' } },
    });
    const id = (created.body.details as { subscription: { id: string } }).subscription.id;
    await new Promise((r) => setTimeout(r, 1100));

    expect(await sweep({ kinds: ['subscriptions'] })).toEqual({ subscriptions: 1 });
    const active = await eventually(
      () => call(stack.api.baseUrl, 'GET', `/subscriptions/${id}`, merchant.auth),
      (r) => r.body.status === 'active',
    );
    expect(active.body.latestInvoice).toMatchObject({ status: 'paid', attempts: 1 });
    const captures = await stack.ledger('capture', id, 'subscriptionId');
    expect(captures.map((c) => c.status)).toEqual(['succeeded']);
    // Examined once: the next sweep has nothing to do.
    expect(await sweep({ kinds: ['subscriptions'] })).toEqual({ subscriptions: 0 });
    await call(stack.api.baseUrl, 'DELETE', `/subscriptions/${id}?notify=false`, merchant.auth);
  });

  it('gives an open dispute whose webhook could not start its workflow one, once', async () => {
    const paid = await call(stack.api.baseUrl, 'POST', '/payments', merchant.auth, {
      amount: 4,
      currency: 'USD',
      externalId: `disputed-${Date.now()}`,
      customer: { email: 'c@example.com' },
      cardToken: 'tok_success',
    });
    expect(paid.body).toMatchObject({ status: 'succeeded' });
    const body = JSON.stringify({
      id: 'whevt_orphan_dispute',
      type: 'dispute.created',
      createdAt: new Date().toISOString(),
      data: {
        object: 'dispute',
        id: `dsp_orphan_${Date.now()}`,
        paymentId: paid.body.providerTransactionId,
        status: 'needs_response',
        amount: 4,
        currency: 'USD',
        reason: 'fraudulent',
        evidenceDueBy: new Date(Date.now() + 3_600_000).toISOString(),
        evidence: null,
        metadata: { paymentId: paid.body.id },
        createdAt: new Date().toISOString(),
        updatedAt: new Date().toISOString(),
        closedAt: null,
      },
    });
    // Recorded by an API whose Temporal answers nothing: the row, no workflow (the webhook fails).
    const res = await fetch(`${cutOff.baseUrl}/webhooks/sandbox`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'sandbox-signature': signWebhook(SANDBOX_WEBHOOK_SECRET, Math.floor(Date.now() / 1000), body),
      },
      body,
    });
    expect(res.status).toBeGreaterThanOrEqual(500);
    const listed = await call(stack.api.baseUrl, 'GET', `/disputes?paymentId=${paid.body.id as string}`, merchant.auth);
    const [dispute] = listed.body.disputes as Array<{ id: string }>;
    expect(dispute).toBeDefined();
    await new Promise((r) => setTimeout(r, 1100));

    expect(await sweep({ kinds: ['disputes'] })).toEqual({ disputes: 1 });
    const handle = stack.api.client.workflow.getHandle(disputeWorkflowId(dispute!.id));
    expect((await handle.describe()).status.name).toBe('RUNNING');
    expect(await sweep({ kinds: ['disputes'] })).toEqual({ disputes: 0 });
    await handle.terminate('test over');
  });

  /**
   * The outbox relay. A renewal charge runs as a local activity: a worker killed after it
   * recorded the invoice paid, with its receipt and `charge_succeeded` event, but before the
   * workflow task completed loses the activity's marker; a cancel arriving first ends the run
   * without it ever learning those rows' ids (found by `npm run chaos`). Here the rows are
   * recorded as the charge records them, for a subscription whose workflow has ended. Its event
   * needs no relay: the event's delivery job is written with it (decision 0069); the sweep only
   * wakes the deliveries of a merchant whose jobs no kicker looked at.
   */
  describe('outbox relay', () => {
    const unsent = async (merchantId: string) => {
      const em = stack.orm.em.fork();
      return (
        (await em.count(Email, { merchant: merchantId, sentAt: null })) +
        (await em.count(DeliveryJob, { merchant: merchantId, status: 'pending' }))
      );
    };

    it('sends an email recorded by a lost run, once, however often it sweeps; its event is delivered by the merchant’s deliveries, once', async () => {
      const receiver = await startCallbackReceiver();
      try {
        const relayMerchant = await createTestMerchant(stack.orm, 'Relay merchant');
        const subs = subscriptionClient(stack, relayMerchant);
        const created = await subs.create({ cardToken: 'tok_success', callbackUrl: receiver.url });
        expect(created.status).toBe(200);
        const id = created.body.id as string;
        await subs.until(id, (s) => s.status === 'active', 60_000);
        expect((await subs.cancel(id, '?notify=false')).status).toBeLessThan(300);
        await stack.api.client.workflow.getHandle(subscriptionWorkflowId(id)).result();
        // What the run itself recorded went out (its events by the merchant's delivery workflow): none is a candidate.
        await eventually(
          () => unsent(relayMerchant.merchantId),
          (n) => n === 0,
          60_000,
          250,
        );
        const mailBefore = subs.mail(id).length;
        // The merchant's deliveries run in one workflow of its own, on the delivery queue, with its summary.
        const deliveriesRun = stack.api.client.workflow.getHandle(eventDeliveriesWorkflowId(relayMerchant.merchantId));
        expect(await (await deliveriesRun.describe()).staticSummary()).toBe(
          `Event deliveries · merchant ${relayMerchant.merchantId}`,
        );

        // The lost renewal's rows: the receipt and the event its charge records.
        const { emailId, eventId } = await stack.orm.em.fork().transactional(async (tx) => {
          const s = await tx.findOneOrFail(Subscription, { id }, { populate: ['merchant'] });
          const invoice = await tx.findOneOrFail(Invoice, { subscription: id, periodIndex: 0 });
          // A renewal's invoice, as the lost charge paid it.
          const renewal = { ...invoice, id: newId('invoice'), periodIndex: 1 } as Invoice;
          const email = recordEmail(tx, {
            merchant: s.merchant,
            dedupeKey: `${id}:email:receipt:${renewal.id}`,
            to: s.customer!.email!,
            ...subscriptionEmail('receipt', s, { invoice: renewal }),
          });
          const event = recordEvent(tx, {
            merchant: s.merchant,
            type: 'subscription.charge_succeeded',
            resourceId: id,
            dedupeKey: `${id}:charge_succeeded:${renewal.id}`,
            callbackUrl: s.callbackUrl,
            environment: s.environment,
            data: { id, invoiceId: renewal.id },
          });
          await tx.flush();
          return { emailId: email.id, eventId: event.id };
        });
        // The event needs no relay: its delivery job was written with it, and the delivery
        // kicker wakes the merchant's deliveries once it is committed.
        const deliveries = () => receiver.received.filter((r) => r.json.id === eventId);
        await eventually(
          async () => deliveries().length,
          (n) => n > 0,
          60_000,
          250,
        );
        await sleep(1100);

        const runSweep = () => sweep({ merchantId: relayMerchant.merchantId });
        const relayed = (r: SweepResult) => [r.emails, r.merchantEvents];
        expect(relayed(await runSweep())).toEqual([1, 0]);
        const receipts = () => stack.mail().filter((m) => m.messageId.includes(emailId));
        await eventually(
          async () => receipts().length,
          (n) => n > 0,
          60_000,
          250,
        );
        expect(receipts()).toEqual([expect.objectContaining({ to: 'customer@example.com' })]);
        expect(receipts()[0]!.subject).toMatch(/^Payment receipt:/);
        expect(deliveries().map((d) => d.json.type)).toEqual(['subscription.charge_succeeded']);
        // The relay says what it is in the Temporal UI (never the recipient).
        const summaryOf = async (workflowId: string) =>
          (await stack.api.client.workflow.getHandle(workflowId).describe()).staticSummary();
        expect(await summaryOf(emailRelayWorkflowId(emailId))).toBe(
          `Customer email ${emailId} · merchant ${relayMerchant.merchantId}`,
        );
        const em = stack.orm.em.fork();
        expect(await em.findOneOrFail(Email, { id: emailId })).toMatchObject({ sentAt: expect.any(Date), attempts: 1 });
        expect(await em.findOneOrFail(DeliveryJob, { event: eventId })).toMatchObject({
          status: 'succeeded',
          attempts: 1,
        });

        // Sent and delivered: the next runs have nothing to relay; nothing arrives twice.
        expect(relayed(await runSweep())).toEqual([0, 0]);
        expect(relayed(await runSweep())).toEqual([0, 0]);
        await sleep(2000);
        expect(receipts()).toHaveLength(1);
        expect(deliveries()).toHaveLength(1);
        expect(subs.mail(id)).toHaveLength(mailBefore + 1);
      } finally {
        await receiver.close();
      }
    }, 180_000);

    it('leaves an email younger than the grace age to the run that recorded it; relays it once past it', async () => {
      const relayMerchant = await createTestMerchant(stack.orm, 'Relay merchant (fresh)');
      const emailId = await stack.orm.em.fork().transactional(async (tx) => {
        const email = recordEmail(tx, {
          merchant: tx.getReference(Merchant, relayMerchant.merchantId),
          dedupeKey: `fresh:${Date.now()}:email:receipt`,
          to: 'fresh@example.com',
          subject: 'Payment receipt: 10.00 USD for a fresh charge',
          text: 'We received your payment.',
        });
        await tx.flush();
        return email.id;
      });
      const sent = () => stack.mail().filter((m) => m.messageId.includes(emailId));

      // The normal path sends within seconds: a fresh row is not the relay's.
      expect(await sweep({ merchantId: relayMerchant.merchantId, graceSeconds: 60 })).toMatchObject({ emails: 0 });
      await sleep(1500);
      expect(await stack.orm.em.fork().findOneOrFail(Email, { id: emailId })).toMatchObject({
        attempts: 0,
        sentAt: null,
        claimedUntil: null,
      });
      expect(sent()).toHaveLength(0);

      // Still unattempted past the grace age: relayed, once.
      expect(await sweep({ merchantId: relayMerchant.merchantId })).toMatchObject({ emails: 1 });
      await eventually(
        async () => sent().length,
        (n) => n > 0,
        60_000,
        250,
      );
      expect(await sweep({ merchantId: relayMerchant.merchantId })).toMatchObject({ emails: 0 });
      await sleep(1500);
      expect(sent()).toHaveLength(1);
    }, 120_000);

    it("relays an email whose send was lost after its claim (also a relay's own); never a failed or held one", async () => {
      const relayMerchant = await createTestMerchant(stack.orm, 'Relay merchant (lost send)');
      const record = (name: string) =>
        stack.orm.em.fork().transactional(async (tx) => {
          const email = recordEmail(tx, {
            merchant: tx.getReference(Merchant, relayMerchant.merchantId),
            dedupeKey: `lost:${name}:${Date.now()}`,
            to: `${name}@example.com`,
            subject: `Payment receipt: 10.00 USD (${name})`,
            text: 'We received your payment.',
          });
          await tx.flush();
          return email.id;
        });
      const set = (emailId: string, assignments: string) =>
        stack.orm.em.getConnection().execute(`update emails set ${assignments} where id = ?`, [emailId]);
      const lost = await record('lost');
      const failed = await record('failed');
      const held = await record('held');
      // A claim taken (a renewal's receipt is claimed by the statement that records it) and never
      // released: the step was cancelled with its subscription, or its worker died.
      await set(lost, `attempts = 1, claimed_until = now() - interval '1 second'`);
      // A send that failed released its claim: its own run retries it.
      await set(failed, `attempts = 1, claimed_until = null, last_error = 'smtp 451'`);
      // A send under way holds its claim.
      await set(held, `attempts = 1, claimed_until = now() + interval '1 hour'`);
      await sleep(1500); // past the grace age
      const sent = (emailId: string) => stack.mail().filter((m) => m.messageId.includes(emailId));

      expect(await sweep({ merchantId: relayMerchant.merchantId })).toMatchObject({ emails: 1 });
      await eventually(
        async () => sent(lost).length,
        (n) => n > 0,
        60_000,
        250,
      );
      const relay = stack.api.client.workflow.getHandle(emailRelayWorkflowId(lost));
      expect(await relay.result()).toBe('sent');
      expect(await stack.orm.em.fork().findOneOrFail(Email, { id: lost })).toMatchObject({
        sentAt: expect.any(Date),
        attempts: 2,
        claimedUntil: null,
      });

      // A relay closed while its send held the claim (terminated by an operator): relayed again.
      const stranded = await record('stranded');
      await set(stranded, `attempts = 1, claimed_until = now() + interval '1 hour'`);
      const first = await stack.api.client.workflow.start(outboxEmailWorkflow, {
        workflowId: emailRelayWorkflowId(stranded),
        taskQueue: stack.taskQueue,
        args: [{ emailId: stranded }],
      });
      await first.terminate('an operator stopped it mid-send');
      await set(stranded, `claimed_until = now() - interval '1 second'`);
      await sleep(1500); // past the grace age
      expect(await sweep({ merchantId: relayMerchant.merchantId })).toMatchObject({ emails: 1 });
      await eventually(
        async () => sent(stranded).length,
        (n) => n > 0,
        60_000,
        250,
      );
      expect(await sweep({ merchantId: relayMerchant.merchantId })).toMatchObject({ emails: 0 });
      await sleep(1500);
      expect(sent(lost)).toHaveLength(1);
      expect(sent(stranded)).toHaveLength(1);
      expect(sent(failed)).toHaveLength(0);
      expect(sent(held)).toHaveLength(0);
    }, 120_000);

    it('wakes the deliveries of a merchant no kicker looks at: its overdue jobs, counted, never one a step holds', async () => {
      const receiver = await startCallbackReceiver();
      try {
        // Not one of this file's merchants: the worker's delivery kicker never wakes its deliveries
        // (as a merchant's jobs are left when no delivery worker's kicker runs).
        const { merchant: unkicked } = await createMerchant(stack.orm.em.fork(), {
          name: 'Unkicked merchant',
          email: 'merchant@example.com',
        });
        const merchantId = unkicked.id;
        const eventOf = async (name: string) => {
          const em = stack.orm.em.fork();
          // A test payment: a live one's callback would never reach a loopback receiver.
          const resourceId = paymentRow(em, merchantId, { status: 'succeeded' }).id;
          const event = recordEvent(em, {
            merchant: em.getReference(Merchant, merchantId),
            type: 'payment.succeeded',
            resourceId,
            dedupeKey: `${resourceId}:payment.succeeded:${name}`,
            callbackUrl: receiver.url,
            environment: 'test',
            data: { id: resourceId },
          });
          await em.flush();
          return event.id;
        };
        const first = await eventOf('first');
        const second = await eventOf('second');
        const sql = (text: string, values: unknown[]) => stack.orm.em.getConnection().execute(text, values);
        const jobOf = (eventId: string) => stack.orm.em.fork().findOneOrFail(DeliveryJob, { event: eventId });
        const received = () => receiver.received.map((r) => r.json.id);

        // Due, but younger than the grace age: a kicker would have woken it by now; not the sweep's.
        expect(await sweep({ merchantId, graceSeconds: 60 })).toMatchObject({ merchantEvents: 0 });
        await sleep(1500); // past the grace age
        // A delivery step holds the merchant's lease (it is delivering): not the sweep's.
        await sql(
          `insert into delivery_leases (merchant_id, holder, until) values (?, 'lost', now() + interval '1 hour')`,
          [merchantId],
        );
        expect(await sweep({ merchantId })).toMatchObject({ merchantEvents: 0 });
        // The step's worker was lost and its lease lapsed; one job is still claimed by it (mid-POST).
        await sql(`update delivery_leases set until = now() - interval '1 second' where merchant_id = ?`, [merchantId]);
        await sql(`update delivery_jobs set claimed_until = now() + interval '1 hour' where event_id = ?`, [second]);
        expect(await sweep({ merchantId })).toMatchObject({ merchantEvents: 1 });
        await eventually(
          async () => (await jobOf(first)).status,
          (status) => status === 'succeeded',
          60_000,
          250,
        );
        expect(received()).toEqual([first]);
        expect(await jobOf(first)).toMatchObject({ attempts: 1, claimedUntil: null });
        expect(await jobOf(second)).toMatchObject({ status: 'pending', attempts: 0 });
        // The woken workflow is the merchant's deliveries.
        const run = await stack.api.client.workflow.getHandle(eventDeliveriesWorkflowId(merchantId)).describe();
        expect(await run.staticSummary()).toBe(`Event deliveries · merchant ${merchantId}`);

        // The claim lapsed: the next sweep wakes the merchant's (sleeping) run for it.
        await sql(`update delivery_jobs set claimed_until = now() - interval '1 second' where event_id = ?`, [second]);
        expect(await sweep({ merchantId })).toMatchObject({ merchantEvents: 1 });
        await eventually(
          async () => (await jobOf(second)).status,
          (status) => status === 'succeeded',
          60_000,
          250,
        );
        expect(received()).toEqual([first, second]);
        expect(await jobOf(second)).toMatchObject({ attempts: 1, claimedUntil: null });
        // Delivered: nothing left for a sweep; nothing arrives twice.
        expect(await sweep({ merchantId })).toMatchObject({ merchantEvents: 0 });
        await sleep(1500);
        expect(received()).toEqual([first, second]);
      } finally {
        await receiver.close();
      }
    }, 120_000);
  });

  it("ensureSchedules updates a schedule whose definition changed, keeping an operator's pause", async () => {
    const client = stack.worker.client;
    const scheduleId = sweepScheduleId(stack.taskQueue);
    const handle = client.schedule.getHandle(scheduleId);
    await handle.delete().catch((err: unknown) => {
      if (!(err instanceof ScheduleNotFoundError)) throw err;
    });
    // An older definition, paused by an operator.
    await client.schedule.create({
      scheduleId,
      spec: { intervals: [{ every: '5 minutes' }] },
      policies: { overlap: ScheduleOverlapPolicy.SKIP },
      state: { paused: true, note: 'operator: investigating' },
      action: {
        type: 'startWorkflow',
        workflowType: sweepOrphanPaymentsWorkflow,
        workflowId: scheduleId,
        taskQueue: 'an-old-queue',
        args: [{ olderThanSeconds: 120, limit: 500 }],
      },
    });
    try {
      await ensureSchedules(client, stack.taskQueue);
      const updated = await handle.describe();
      expect(updated.action).toMatchObject({
        workflowType: 'sweepOrphansWorkflow',
        taskQueue: stack.taskQueue,
        args: [SWEEP_ARGS],
      });
      expect(updated.spec.intervals?.map((i) => i.every)).toEqual([60_000]);
      expect(updated.action.staticSummary).toBe(
        'Orphan sweep every 60 s · payments, refunds, subscriptions, emails, merchantEvents, disputes',
      );
      expect(updated.state).toMatchObject({ paused: true, note: 'operator: investigating' });

      // Unchanged definition: left alone (the operator's note is not touched either).
      await ensureSchedules(client, stack.taskQueue);
      expect((await handle.describe()).state).toMatchObject({ paused: true, note: 'operator: investigating' });
    } finally {
      await handle.delete();
    }
  });
});
