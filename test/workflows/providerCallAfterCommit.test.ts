import { Context } from '@temporalio/activity';
import { temporal } from '@temporalio/proto';
import type { ChargeRequest } from '../../activities/subscriptions';
import type { paymentWorkflowV2 } from '../../workflows/payment';
import { paymentWorkflowId, submitPaymentUpdate, type PaymentWorkflowInput } from '../../workflows/paymentApi';
import type { subscriptionWorkflow } from '../../workflows/subscription';
import {
  cancelSubscriptionUpdate,
  subscriptionWorkflowId,
  type SubscriptionWorkflowInput,
} from '../../workflows/subscriptionApi';
import { composedOpenAndCharge } from '../helpers/openAndCharge';
import {
  useTimeSkippingEnvironment,
  withShippedWorker,
  terminatedAfterEachTest,
  untilNoTimerDue,
} from '../helpers/timeSkipping';

type HistoryEvent = temporal.api.history.v1.IHistoryEvent;
const { EventType } = temporal.api.enums.v1;

/**
 * A provider call made as a local activity has its effect at the provider even when the worker
 * running it dies before the workflow task completes; the task's marker and (for a payment) the
 * not-yet-accepted submit Update are lost with the worker. (Chaos run 2026-11-23: a token payment
 * captured but left `created` for its 24 h expiry, the Update gone after the worker kill and a
 * PostgreSQL restart; an invoice charged in a lost task, then voided by a cancellation delivered
 * in the retried task.) So the provider is asked only once what led to the call is in the history:
 * a retried task replays to the same call, with the same idempotency key. A renewal's cause is
 * its timer: a cancellation taken by the retried task instead first asks the provider about the
 * call marked sent, and records a capture as paid (test/integration/providerCallSent.test.ts).
 *
 * Here the activities look at the workflow's history at the moment the provider is called.
 */
describe('provider calls run after the decision is in the history (time-skipping, stubbed activities)', () => {
  const testEnv = useTimeSkippingEnvironment();
  let counter = 0;
  const started = terminatedAfterEachTest();

  const withWorker = <T>(activities: object, drive: (taskQueue: string) => Promise<T>) =>
    withShippedWorker(testEnv(), 'call-after-commit', activities, drive);

  const historyOf = async (workflowId: string): Promise<HistoryEvent[]> =>
    (await testEnv().client.workflow.getHandle(workflowId).fetchHistory()).events ?? [];

  it('payment: the submit Update is accepted in the history before the provider is asked', async () => {
    const paymentId = `pay_commit_${process.pid}_${++counter}`;
    const workflowId = paymentWorkflowId(paymentId);
    const seenAtCall: boolean[] = [];
    const activities = {
      attemptProviderPayment: jest.fn(async () => {
        const events = await historyOf(workflowId);
        seenAtCall.push(events.some((e) => e.eventType === EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED));
        return { kind: 'settled' as const };
      }),
      reconcileProviderPayment: jest.fn(async () => 'settled' as const),
      expireProviderPayment: jest.fn(async () => 'settled' as const),
      undeliveredEventIds: jest.fn(async () => [] as string[]),
    };
    const input: PaymentWorkflowInput = {
      paymentId,
      merchantId: 'mer_commit',
      expiresAt: new Date(Date.now() + 86_400_000).toISOString(),
      callbackRetryInitialSeconds: 10,
      callbacks: false,
    };
    const outcome = await withWorker(activities, async (taskQueue) => {
      const handle = await testEnv().client.workflow.start<typeof paymentWorkflowV2>('paymentWorkflowV2', {
        taskQueue,
        workflowId,
        args: [input],
      });
      started.push(handle);
      const answer = await handle.executeUpdate(submitPaymentUpdate);
      await handle.result();
      return answer;
    });
    expect(outcome).toEqual({ kind: 'settled' });
    expect(seenAtCall).toEqual([true]);
  });

  it('subscription: the charge runs in the task its cause (start, timer) woke, already in the history; a cancellation waits for it', async () => {
    const subscriptionId = `sub_commit_${process.pid}_${++counter}`;
    const workflowId = subscriptionWorkflowId(subscriptionId);
    const causeAtCall: Array<{ isLocal: boolean; timersFired: number }> = [];
    const outbox = (status: string) => ({ status, emailIds: [] as string[], eventIds: [] as string[] });
    let status = 'created';
    const invoices = new Map<string, 'open' | 'paid' | 'void'>();
    const activities = {
      awaitRecordVisible: jest.fn(async () => true),
      unsentSubscriptionEmails: jest.fn(async () => [] as string[]),
      sendEmail: jest.fn(async () => 'sent' as const),
      openInvoice: jest.fn(async (req: { periodIndex: number }) => {
        if (status === 'cancelled') return { kind: 'cancelled' as const };
        const invoiceId = `inv_${req.periodIndex}`;
        if (!invoices.has(invoiceId)) invoices.set(invoiceId, 'open');
        return { kind: 'open' as const, invoiceId, attempts: 0, outbox: outbox(status) };
      }),
      chargeInvoice: jest.fn(async (req: ChargeRequest) => {
        const events = await historyOf(workflowId);
        // The call runs in a local activity of the task its cause woke (renewal-charge-local-v1):
        // the run's start for the first period, the period's timer, fired, for a renewal.
        const { isLocal } = Context.current().info;
        const timersFired = events.filter((e) => e.eventType === EventType.EVENT_TYPE_TIMER_FIRED).length;
        causeAtCall.push({ isLocal, timersFired });
        invoices.set(req.invoiceId, 'paid');
        status = 'active';
        return { kind: 'paid' as const, outbox: outbox(status) };
      }),
      reconcileInvoiceCharge: jest.fn(async () => ({ kind: 'not_found' as const })),
      cancelSubscriptionRecord: jest.fn(async () => {
        for (const [id, state] of invoices) if (state === 'open') invoices.set(id, 'void');
        status = 'cancelled';
        return outbox(status);
      }),
    };
    const withOpenAndCharge = { ...activities, openAndChargeInvoice: composedOpenAndCharge(activities) };
    const input: SubscriptionWorkflowInput = {
      subscriptionId,
      merchantId: 'mer_commit',
      externalId: `ext-commit-${counter}`,
      plan: {
        // 20 days: the renewal's timer fires well before the run's 30-day age bound, which would
        // otherwise race it (under load the first charge lands a few ms after the run's start, the
        // bound fires first, and the next run charges without a timer of its own).
        phases: [{ id: 'ph_evergreen', amountMinor: 1000, billingIntervalDays: 20, iterations: null }],
        retryScheduleDays: [1, 3, 5],
      },
      needsAuthorization: false,
      billingDaySeconds: 86_400,
      authorizationExpirySeconds: 86_400,
      callbackRetryInitialSeconds: 10,
      callbacks: false,
    };
    await withWorker(withOpenAndCharge, async (taskQueue) => {
      const handle = await testEnv().client.workflow.start<typeof subscriptionWorkflow>('subscriptionWorkflow', {
        taskQueue,
        workflowId,
        args: [input],
      });
      started.push(handle);
      // Two periods: the first charge at once, the renewal's after 20 days (skipped).
      for (let i = 0; i < 400 && causeAtCall.length < 2; i++) await testEnv().sleep(86_400_000);
      await untilNoTimerDue(testEnv(), handle.workflowId);
      const cancelled = await handle.executeUpdate(cancelSubscriptionUpdate, {
        args: [{ reason: 'test_over', notify: false }],
      });
      expect(cancelled).toBe('cancelled');
      await handle.result();
    });
    expect(causeAtCall.slice(0, 2)).toEqual([
      { isLocal: true, timersFired: 0 },
      { isLocal: true, timersFired: 1 },
    ]);
    // Every invoice the provider was asked to charge is recorded paid, none voided.
    expect([...invoices.values()].slice(0, 2)).toEqual(['paid', 'paid']);
  });
});
