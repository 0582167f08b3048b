/**
 * Records workflow histories for the replay test (test/integration/replay.test.ts).
 * Run after a deliberate, compatible workflow change, or to add scenarios:
 *   node --import tsx scripts/record-histories.ts [payments|payment-lifecycle|subscriptions|card-updates|hard-declines|invoice-waits|sweeps|disputes|never-fail-closed|gaps|subscription-stuck|revived-collections|event-deliveries|legacy-handlers|cancel-intent|run-age|sweeps-deprecated|activity-bugs|test-clocks|customer-cards|setup-pages|all]   (default all)
 * Then format them: npx prettier --write test/replay/histories
 * Never re-record to make a failing replay pass: a failing replay means running workflows
 * would break; version the change (workflow.patched) instead.
 */
import fs from 'node:fs';
import path from 'node:path';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { locateTemporalCli } from '../dev/infra/temporalCli';
import { testStack } from '../test/setup/stackInfo';
import globalSetup from '../test/setup/globalSetup';
import globalTeardown from '../test/setup/globalTeardown';
import {
  createTestMerchant,
  recordPayloadsInClear,
  startPaymentStack,
  startTestWorker,
  type TestWorker,
} from '../test/helpers/stack';
import { call, eventually } from '../test/helpers/http';
import { startCallbackReceiver } from '../test/helpers/callbackReceiver';
import { paymentWorkflowId } from '../workflows/paymentApi';
import { refundWorkflowId } from '../workflows/refundApi';
import { subscriptionWorkflowId } from '../workflows/subscriptionApi';
import { disputeWorkflowId } from '../workflows/disputeApi';
import { subscriptionClient, type SubscriptionBody } from '../test/helpers/subscriptions';
import { sweepOrphansWorkflow } from '../workflows/sweepOrphans';
import { SWEEP_ARGS } from '../src/temporal/schedules';
import { StuckKey } from '../workflows/searchAttributes';
import { eventDeliveriesWorkflowId } from '../workflows/eventDeliveriesApi';
import { buildWorkflowBundle } from '../src/workflowBundle';
import { recordCancelIntent as recordCancelIntentOf } from '../src/domain/subscriptions';
import { handOverSignal, testClockWorkflowId } from '../workflows/subscriptionApi';
import { startWorkerWithOverrides, type OverriddenWorker } from '../test/helpers/activityOverrides';
import { setupPageWorkflowId } from '../src/temporal/setupPageGateway';

const OUT = path.resolve(__dirname, '../test/replay/histories');

async function main(): Promise<void> {
  const which = process.argv[2] ?? 'all';
  // Recorded histories are fixtures of the replay test, which runs them without a key (decision 0078).
  recordPayloadsInClear();
  await globalSetup();
  try {
    if (which === 'all' || which === 'payments') await recordPaymentsAndRefunds();
    if (which === 'all' || which === 'payment-lifecycle') await recordPaymentLifecycle();
    if (which === 'all' || which === 'subscriptions') await recordSubscriptions();
    if (which === 'all' || which === 'card-updates') await recordCardUpdates();
    if (which === 'all' || which === 'hard-declines') await recordHardDeclines();
    if (which === 'all' || which === 'invoice-waits') await recordInvoiceWaits();
    if (which === 'all' || which === 'sweeps') await recordSweeps();
    if (which === 'all' || which === 'disputes') await recordDisputes();
    if (which === 'all' || which === 'never-fail-closed') await recordNeverFailClosed();
    if (which === 'all' || which === 'gaps') await recordGaps();
    if (which === 'all' || which === 'subscription-stuck') await recordSubscriptionStuck();
    if (which === 'all' || which === 'revived-collections') await recordRevivedCollections();
    if (which === 'all' || which === 'event-deliveries') await recordEventDeliveries();
    if (which === 'all' || which === 'legacy-handlers') await recordLegacyHandlers();
    if (which === 'all' || which === 'cancel-intent') await recordCancelIntent();
    if (which === 'all' || which === 'run-age') await recordRunAge();
    if (which === 'all' || which === 'sweeps-deprecated') await recordSweepsDeprecated();
    if (which === 'all' || which === 'activity-bugs') await recordActivityBugs();
    if (which === 'all' || which === 'test-clocks') await recordTestClocks();
    if (which === 'all' || which === 'customer-cards') await recordCustomerCards();
    if (which === 'all' || which === 'setup-pages') await recordSetupPages();
  } finally {
    await globalTeardown();
  }
}

/** Exports one run's history (the latest run without `runId`) as the CLI's canonical proto JSON. */
async function exportHistory(name: string, workflowId: string, runId?: string): Promise<void> {
  const cli = await locateTemporalCli();
  if (!cli) throw new Error('the Temporal CLI is needed to export histories');
  // The CLI writes the canonical proto JSON that historyFromJSON reads back.
  const { stdout } = await promisify(execFile)(
    cli,
    [
      'workflow',
      'show',
      '--workflow-id',
      workflowId,
      ...(runId ? ['--run-id', runId] : []),
      '--address',
      testStack().temporalAddress,
      '--output',
      'json',
    ],
    { maxBuffer: 64 * 1024 * 1024 },
  );
  fs.writeFileSync(path.join(OUT, `${name}.json`), stdout);
  console.log(`recorded ${name} (${(JSON.parse(stdout) as { events: unknown[] }).events.length} events)`);
}

async function recordPaymentsAndRefunds(): Promise<void> {
  const stack = await startPaymentStack('record', { paymentExpirySeconds: 2, callbackRetryInitialSeconds: 1 });
  const receiver = await startCallbackReceiver([500]);
  try {
    const merchant = await createTestMerchant(stack.orm, 'Recorder');
    const post = (name: string, extra: Record<string, unknown>) =>
      call(stack.api.baseUrl, 'POST', '/payments', merchant.auth, {
        amount: 10,
        currency: 'USD',
        externalId: `${name}-${Date.now()}`,
        customer: { email: 'r@example.com' },
        ...extra,
      });
    const idOf = (r: { body: Record<string, unknown> }) =>
      (r.body.id as string | undefined) ?? (r.body.details as { payment: { id: string } }).payment.id;
    const scenarios: Record<string, string> = {};

    scenarios['payment-token-succeeded-with-callback-retry'] = idOf(
      await post('ok', { cardToken: 'tok_success', callbackUrl: receiver.url }),
    );
    scenarios['payment-token-declined'] = idOf(await post('decline', { cardToken: 'tok_decline' }));
    const hosted = await post('hosted', {});
    await fetch(`${hosted.body.redirectUrl as string}/pay`, { method: 'POST' });
    scenarios['payment-hosted-paid'] = idOf(hosted);
    scenarios['payment-hosted-expired'] = idOf(await post('expire', {}));

    await stack.sandbox('/_admin/faults', { payments: 'unavailable' });
    const unavailable = await post('unavailable', { cardToken: 'tok_success' });
    await stack.sandbox('/_admin/faults', {});
    await call(stack.api.baseUrl, 'POST', '/payments', merchant.auth, {
      amount: 10,
      currency: 'USD',
      externalId: (unavailable.body.details as { payment: { externalId: string } }).payment.externalId,
      customer: { email: 'r@example.com' },
      cardToken: 'tok_success',
    });
    scenarios['payment-unavailable-then-repeated'] = idOf(unavailable);

    await stack.sandbox('/_admin/faults', { payments: 'invalid' });
    const invalid = await post('invalid', { cardToken: 'tok_success' });
    await stack.sandbox('/_admin/faults', {});
    scenarios['payment-invalid-then-reconciled'] = idOf(invalid);

    // Refunds, on a payment of 100.
    const refundable = idOf(await post('refundable', { amount: 100, cardToken: 'tok_success' }));
    const refund = (name: string) =>
      call(stack.api.baseUrl, 'POST', `/payments/${refundable}/refund`, merchant.auth, {
        externalId: `${name}-${Date.now()}`,
        amount: 5,
      });
    const refundIdOf = (r: { body: Record<string, unknown> }) =>
      (r.body.id as string | undefined) ?? (r.body.details as { refund: { id: string } }).refund.id;
    const refundScenarios: Record<string, string> = {};
    refundScenarios['refund-succeeded'] = refundIdOf(await refund('ok'));
    await stack.sandbox('/_admin/faults', { refunds: 'pending' });
    const pendingRefund = await refund('pending');
    await stack.sandbox('/_admin/faults', {});
    await stack.sandbox('/_admin/settle', { reference: pendingRefund.body.externalId, status: 'succeeded' });
    refundScenarios['refund-pending-then-webhook'] = refundIdOf(pendingRefund);
    // One refund in flight at a time: wait for each to settle before the next.
    const settled = (id: string) =>
      eventually(
        () => call(stack.api.baseUrl, 'GET', `/refunds/${id}`, merchant.auth),
        (r) => r.body.status !== 'pending',
        30_000,
        200,
      );
    await settled(refundScenarios['refund-pending-then-webhook']);
    await stack.sandbox('/_admin/faults', { refunds: 'unavailable' });
    refundScenarios['refund-provider-unavailable'] = refundIdOf(await refund('unavailable'));
    await stack.sandbox('/_admin/faults', { refunds: 'invalid' });
    const invalidRefund = await refund('invalid');
    await stack.sandbox('/_admin/faults', {});
    refundScenarios['refund-invalid-then-reconciled'] = refundIdOf(invalidRefund);
    await settled(refundScenarios['refund-invalid-then-reconciled']);
    await stack.sandbox('/_admin/faults', { refunds: 'fail' });
    refundScenarios['refund-declined'] = refundIdOf(await refund('declined'));
    await stack.sandbox('/_admin/faults', {});

    const workflowIds = [
      ...Object.entries(scenarios).map(([name, id]) => [name, paymentWorkflowId(id)] as const),
      ...Object.entries(refundScenarios).map(([name, id]) => [name, refundWorkflowId(id)] as const),
    ];
    for (const [name, workflowId] of workflowIds) {
      const handle = stack.api.client.workflow.getHandle(workflowId);
      await eventually(
        async () => (await handle.describe()).status.name,
        (s) => s !== 'RUNNING',
        30_000,
        250,
      );
      await exportHistory(name, workflowId);
    }
  } finally {
    await receiver.close();
    await stack.close();
  }
}

/**
 * Payments the processor does not decide at once (issue 42): authentication (3-D Secure)
 * authenticated, failed and expired; processing decided by its webhook, and by the workflow asking
 * when the webhook is lost. Each with a callbackUrl, so the in-flight events are sent too.
 */
async function recordPaymentLifecycle(): Promise<void> {
  const stack = await startPaymentStack(
    'record-lifecycle',
    { paymentExpirySeconds: 3, callbackRetryInitialSeconds: 1, processingPollSeconds: 1 },
    undefined,
    undefined,
    { sandboxProcessingSeconds: 2 },
  );
  const receiver = await startCallbackReceiver();
  try {
    const merchant = await createTestMerchant(stack.orm, 'Recorder');
    const post = (name: string, cardToken: string) =>
      call(stack.api.baseUrl, 'POST', '/payments', merchant.auth, {
        amount: 10,
        currency: 'USD',
        externalId: `${name}-${Date.now()}`,
        customer: { email: 'r@example.com' },
        cardToken,
        callbackUrl: receiver.url,
      });
    const page = (r: { body: Record<string, unknown> }) => (r.body.nextAction as { url: string }).url;
    const scenarios: Record<string, string> = {};

    const authenticated = await post('3ds-ok', 'tok_3ds');
    await fetch(`${page(authenticated)}/authenticate`, { method: 'POST' });
    scenarios['payment-3ds-authenticated'] = authenticated.body.id as string;
    const failed = await post('3ds-fail', 'tok_3ds');
    await fetch(`${page(failed)}/fail`, { method: 'POST' });
    scenarios['payment-3ds-failed'] = failed.body.id as string;
    scenarios['payment-3ds-expired'] = (await post('3ds-expire', 'tok_3ds')).body.id as string;
    scenarios['payment-processing-webhook'] = (await post('processing', 'tok_processing')).body.id as string;
    const lost = await post('processing-lost', 'tok_processing');
    // Decided at the processor without a webhook: the workflow asks.
    stack.sandboxStore.settleProcessing(lost.body.providerTransactionId as string, 'failed');
    scenarios['payment-processing-polled'] = lost.body.id as string;

    for (const [name, id] of Object.entries(scenarios)) {
      const workflowId = paymentWorkflowId(id);
      const handle = stack.api.client.workflow.getHandle(workflowId);
      await eventually(
        async () => (await handle.describe()).status.name,
        (s) => s !== 'RUNNING',
        30_000,
        250,
      );
      await exportHistory(name, workflowId);
    }
  } finally {
    await receiver.close();
    await stack.close();
  }
}

/**
 * Subscription scenarios on a one-second billing day. A subscription's workflow is one chain of
 * runs (continue-as-new); a run is recorded once it has closed, and the chain that continued as
 * new is recorded twice: its first run (ends in ContinuedAsNew) and its last (resumed from the cursor).
 */
async function recordSubscriptions(): Promise<void> {
  const stack = await startPaymentStack('record-subs', {
    billingDaySeconds: 1,
    subscriptionAuthorizationExpirySeconds: 2,
    callbackRetryInitialSeconds: 1,
    historyEventLimit: 40,
  });
  const receiver = await startCallbackReceiver([500]);
  try {
    const merchant = await createTestMerchant(stack.orm, 'Recorder');
    const subs = subscriptionClient(stack, merchant);
    const scenarios: Record<string, string> = {};
    const idOf = (r: { body: SubscriptionBody }) =>
      (r.body.id as string | undefined) ?? (r.body.details.subscription.id as string);

    const renewing = idOf(await subs.create({ cardToken: 'tok_success', callbackUrl: receiver.url }));
    const trial = idOf(
      await subs.create({
        cardToken: 'tok_success',
        phases: [{ name: 'trial', iterations: 1, amount: 0, billingIntervalDays: 1 }],
      }),
    );
    const exhausted = idOf(await subs.create({ cardToken: 'tok_decline', retryScheduleDays: [1] }));
    const hosted = await subs.create({});
    await fetch(`${hosted.body.redirectUrl as string}/pay`, { method: 'POST' });
    const expired = idOf(await subs.create({}));
    const pastDue = idOf(await subs.create({ cardToken: 'tok_insufficient_funds', retryScheduleDays: [5] }));
    const chain = idOf(await subs.create({ cardToken: 'tok_success' }));

    await subs.untilPaid(renewing, 3);
    await subs.cancel(renewing);
    scenarios['subscription-token-renewals-callbacks-cancelled'] = renewing;
    await subs.untilPaid(trial, 3);
    await subs.cancel(trial, '?notify=false');
    scenarios['subscription-trial-then-evergreen'] = trial;
    scenarios['subscription-retries-exhausted'] = exhausted;
    await subs.untilPaid(idOf(hosted), 2);
    await subs.cancel(idOf(hosted));
    scenarios['subscription-hosted-authorized'] = idOf(hosted);
    scenarios['subscription-hosted-expired'] = expired;
    await subs.cancel(pastDue, '?reason=customer_request');
    scenarios['subscription-past-due-cancelled'] = pastDue;
    // Cancelled while the customer is on the hosted page; the repeat is refused by the validator.
    const pendingCancelled = idOf(await subs.create({}));
    await subs.cancel(pendingCancelled);
    await subs.cancel(pendingCancelled);
    scenarios['subscription-hosted-cancelled-while-pending'] = pendingCancelled;

    // Declined renewal, retried, recovered.
    const recovering = idOf(
      await subs.create({ cardToken: 'tok_success', billingIntervalDays: 2, retryScheduleDays: [1] }),
    );
    await stack.sandbox('/_admin/faults', { payments: 'decline' });
    await subs.until(recovering, (s) => s.status === 'past_due');
    await stack.sandbox('/_admin/faults', {});
    await subs.until(recovering, (s) => s.status === 'active' && s.latestInvoice?.attempts === 2);
    await subs.cancel(recovering);
    scenarios['subscription-declined-retried-recovered'] = recovering;

    // A renewal whose open-and-charge step gets a garbled answer (the capture made): the invoice
    // is opened on its own and the attempt asked about by its key until the provider answers.
    const garbled = idOf(await subs.create({ cardToken: 'tok_success', billingIntervalDays: 3 }));
    await subs.untilPaid(garbled, 1);
    await stack.sandbox('/_admin/faults', { payments: 'invalid' });
    await eventually(
      () => subs.captures(garbled),
      (list) => list.length >= 2,
      20_000,
      100,
    );
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    await stack.sandbox('/_admin/faults', {});
    await subs.untilPaid(garbled, 2);
    await subs.cancel(garbled);
    scenarios['subscription-renewal-step-garbled-reconciled'] = garbled;

    // A chain of runs: continue-as-new every few periods (historyEventLimit 40).
    const workflowId = subscriptionWorkflowId(chain);
    const runs = async () => {
      const list: Array<{ runId: string; status: string; startTime: Date }> = [];
      for await (const wf of stack.api.client.workflow.list({ query: `WorkflowId = "${workflowId}"` })) {
        list.push({ runId: wf.runId, status: wf.status.name, startTime: wf.startTime });
      }
      return list.sort((a, b) => a.startTime.getTime() - b.startTime.getTime());
    };
    await eventually(runs, (l) => l.length >= 2, 60_000, 500);
    await subs.cancel(chain);
    const chainRuns = await runs();

    for (const [name, id] of Object.entries(scenarios)) {
      const handle = stack.api.client.workflow.getHandle(subscriptionWorkflowId(id));
      await eventually(
        async () => (await handle.describe()).status.name,
        (s) => s !== 'RUNNING',
        30_000,
        250,
      );
      await exportHistory(name, handle.workflowId);
    }
    await exportHistory('subscription-continued-as-new-first-run', workflowId, chainRuns[0]!.runId);
    await exportHistory('subscription-continued-as-new-last-run', workflowId, chainRuns[chainRuns.length - 1]!.runId);
  } finally {
    await receiver.close();
    await stack.close();
  }
}

/**
 * Card updates (POST /subscriptions/{id}/payment-method) of past_due subscriptions: a token,
 * charged at once and paid (then the same request again, which changes nothing); and a hosted
 * page the customer completes, after which the invoice is charged at once.
 */
async function recordCardUpdates(): Promise<void> {
  const stack = await startPaymentStack('record-cards', {
    billingDaySeconds: 1,
    subscriptionAuthorizationExpirySeconds: 30,
    callbackRetryInitialSeconds: 1,
  });
  try {
    const merchant = await createTestMerchant(stack.orm, 'Card update recorder');
    const subs = subscriptionClient(stack, merchant);
    const update = (id: string, body: unknown) =>
      call<SubscriptionBody>(stack.api.baseUrl, 'POST', `/subscriptions/${id}/payment-method`, merchant.auth, body);
    const scenarios: Record<string, string> = {};

    const byToken = await subs.create({ cardToken: 'tok_decline', billingIntervalDays: 30, retryScheduleDays: [30] });
    const tokenId = byToken.body.id as string;
    if ((await update(tokenId, { cardToken: 'tok_success' })).body.status !== 'active') throw new Error('not paid');
    await update(tokenId, { cardToken: 'tok_success' });
    await subs.cancel(tokenId);
    scenarios['subscription-card-update-past-due-token'] = tokenId;

    const byPage = await subs.create({ cardToken: 'tok_decline', billingIntervalDays: 30, retryScheduleDays: [30] });
    const pageId = byPage.body.id as string;
    const page = await update(pageId, {});
    await fetch(`${page.body.redirectUrl as string}/pay`, { method: 'POST' });
    await subs.until(pageId, (s) => s.status === 'active');
    await subs.cancel(pageId);
    scenarios['subscription-card-update-past-due-hosted'] = pageId;

    for (const [name, id] of Object.entries(scenarios)) {
      const handle = stack.api.client.workflow.getHandle(subscriptionWorkflowId(id));
      await eventually(
        async () => (await handle.describe()).status.name,
        (s) => s !== 'RUNNING',
        30_000,
        250,
      );
      await exportHistory(name, handle.workflowId);
    }
  } finally {
    await stack.close();
  }
}

/**
 * Hard declines (SUBSCRIPTION_HARD_DECLINES): a first charge declined `expired_card`, then a new
 * card charged at once; the same left without a new card until the schedule's total cancels it.
 * And a renewal the provider answered with a status nobody knows (SUBSCRIPTION_UNDECIDED_CHARGE).
 */
/**
 * SUBSCRIPTION_INVOICE_WAITS (decision 0060): a renewal awaiting authentication (reminded, then
 * authenticated), one failed on the page then retried and cancelled while waiting, one whose
 * wait a new card ends, and a first charge processing when the subscription is cancelled.
 */
async function recordInvoiceWaits(): Promise<void> {
  const stack = await startPaymentStack('record-waits', { billingDaySeconds: 1 }, undefined, undefined, {
    sandboxProcessingSeconds: 2,
  });
  try {
    const merchant = await createTestMerchant(stack.orm, 'Invoice wait recorder');
    const subs = subscriptionClient(stack, merchant);
    const update = (id: string, body: unknown) =>
      call<SubscriptionBody>(stack.api.baseUrl, 'POST', `/subscriptions/${id}/payment-method`, merchant.auth, body);
    const waiting = (id: string) =>
      subs.until(id, (s) => s.latestInvoice?.status === 'requires_action', 20_000).then((s) => s.latestInvoice);
    const press = async (url: string, action: 'authenticate' | 'fail') => {
      if ((await fetch(`${url}/${action}`, { method: 'POST' })).status !== 200) throw new Error(`${action} refused`);
    };
    const scenarios: Record<string, string> = {};

    const renewal = await subs.create({
      cardToken: 'tok_3ds_offsession',
      billingIntervalDays: 2,
      retryScheduleDays: [1, 30],
    });
    const renewalId = renewal.body.id as string;
    const asked = await waiting(renewalId);
    await eventually(
      async () => subs.mail(renewalId),
      (l) => l.some((e) => /Reminder/.test(e.subject)),
      20_000,
    );
    await press(asked.hostedUrl as string, 'authenticate');
    await subs.until(renewalId, (s) => s.status === 'active' && s.latestInvoice?.status === 'paid', 20_000);
    await subs.cancel(renewalId);
    scenarios['subscription-authentication-paid'] = renewalId;

    const failed = await subs.create({
      cardToken: 'tok_3ds_offsession',
      billingIntervalDays: 2,
      retryScheduleDays: [1, 30],
    });
    const failedId = failed.body.id as string;
    await press((await waiting(failedId)).hostedUrl as string, 'fail');
    await subs.until(
      failedId,
      (s) => s.latestInvoice?.attempts === 2 && s.latestInvoice?.status === 'requires_action',
      20_000,
    );
    await subs.cancel(failedId);
    scenarios['subscription-authentication-cancelled'] = failedId;

    const replaced = await subs.create({
      cardToken: 'tok_3ds_offsession',
      billingIntervalDays: 2,
      retryScheduleDays: [30],
    });
    const replacedId = replaced.body.id as string;
    await waiting(replacedId);
    if ((await update(replacedId, { cardToken: 'tok_success' })).body.status !== 'active') throw new Error('not paid');
    await subs.cancel(replacedId);
    scenarios['subscription-authentication-card-update'] = replacedId;

    const processing = await subs.create({ cardToken: 'tok_processing', billingIntervalDays: 30 });
    const processingId = processing.body.id as string;
    if (processing.body.status !== 'pending') throw new Error('not pending');
    await subs.cancel(processingId);
    scenarios['subscription-processing-cancelled'] = processingId;

    for (const [name, id] of Object.entries(scenarios)) {
      const handle = stack.api.client.workflow.getHandle(subscriptionWorkflowId(id));
      await eventually(
        async () => (await handle.describe()).status.name,
        (s) => s !== 'RUNNING',
        30_000,
        250,
      );
      await exportHistory(name, handle.workflowId);
    }
  } finally {
    await stack.close();
  }
}

async function recordHardDeclines(): Promise<void> {
  const stack = await startPaymentStack('record-hard', {
    billingDaySeconds: 1,
    subscriptionAuthorizationExpirySeconds: 30,
  });
  try {
    const merchant = await createTestMerchant(stack.orm, 'Hard decline recorder');
    const subs = subscriptionClient(stack, merchant);
    const update = (id: string, body: unknown) =>
      call<SubscriptionBody>(stack.api.baseUrl, 'POST', `/subscriptions/${id}/payment-method`, merchant.auth, body);
    const scenarios: Record<string, string> = {};

    const renewed = await subs.create({
      cardToken: 'tok_expired_card',
      billingIntervalDays: 30,
      retryScheduleDays: [30],
    });
    const renewedId = renewed.body.id as string;
    await eventually(
      async () => subs.mail(renewedId),
      (l) => l.some((e) => /A new card is needed/.test(e.subject)),
    );
    if ((await update(renewedId, { cardToken: 'tok_success' })).body.status !== 'active') throw new Error('not paid');
    await subs.cancel(renewedId);
    scenarios['subscription-hard-decline-new-card'] = renewedId;

    const lapsed = await subs.create({
      cardToken: 'tok_expired_card',
      billingIntervalDays: 30,
      retryScheduleDays: [1, 1],
    });
    const lapsedId = lapsed.body.id as string;
    await subs.until(lapsedId, (s) => s.status === 'cancelled', 20_000);
    scenarios['subscription-hard-decline-cancelled'] = lapsedId;

    // SUBSCRIPTION_UNDECIDED_CHARGE: a renewal answered with a status nobody knows, asked about
    // again until the fault is gone, then paid.
    const undecided = await subs.create({ cardToken: 'tok_success', billingIntervalDays: 2, retryScheduleDays: [1] });
    const undecidedId = undecided.body.id as string;
    await stack.sandbox('/_admin/faults', { payments: 'unknown_status' });
    await eventually(
      async () => (await subs.captures(undecidedId)).length,
      (n) => n >= 2,
      15_000,
    );
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    await stack.sandbox('/_admin/faults', {});
    await subs.untilPaid(undecidedId, 2, 40_000);
    await subs.cancel(undecidedId);
    scenarios['subscription-undecided-charge'] = undecidedId;

    for (const [name, id] of Object.entries(scenarios)) {
      const handle = stack.api.client.workflow.getHandle(subscriptionWorkflowId(id));
      await eventually(
        async () => (await handle.describe()).status.name,
        (s) => s !== 'RUNNING',
        30_000,
        250,
      );
      await exportHistory(name, handle.workflowId);
    }
  } finally {
    await stack.close();
  }
}

/** One run of the orphan sweeper, every kind, over one merchant (the schedule runs it over all). */
async function recordSweeps(): Promise<void> {
  const stack = await startPaymentStack('record-sweep');
  try {
    const merchant = await createTestMerchant(stack.orm, 'Sweep recorder');
    const workflowId = `sweep-record-${Date.now()}`;
    await stack.worker.client.workflow.execute(sweepOrphansWorkflow, {
      taskQueue: stack.taskQueue,
      workflowId,
      args: [{ graceSeconds: 1, pageSize: 10, maxRows: 100, merchantId: merchant.merchantId }],
    });
    await exportHistory('sweep-orphans', workflowId);
  } finally {
    await stack.close();
  }
}

/**
 * Disputes of `tok_dispute` payments (the sandbox disputes them at once; evidence due in 6 s):
 * evidence sent then won (a callback answered 500 once), accepted, and one left unanswered
 * (the reminder, then lost at the deadline); and a sweep of every kind, disputes included.
 */
async function recordDisputes(): Promise<void> {
  const stack = await startPaymentStack(
    'record-disputes',
    { callbackRetryInitialSeconds: 1 },
    undefined,
    {},
    { sandbox: { disputeSeconds: 0.2, disputeEvidenceSeconds: 6 } },
  );
  const receiver = await startCallbackReceiver([500]);
  try {
    const merchant = await createTestMerchant(stack.orm, 'Dispute recorder');
    const api = (method: string, route: string, body?: unknown) =>
      call(stack.api.baseUrl, method, route, merchant.auth, body);
    const disputed = async (name: string): Promise<{ id: string; providerDisputeId: string }> => {
      const payment = await api('POST', '/payments', {
        amount: 10,
        currency: 'USD',
        externalId: `${name}-${Date.now()}`,
        customer: { email: 'r@example.com' },
        cardToken: 'tok_dispute',
        callbackUrl: receiver.url,
      });
      const listed = await eventually(
        () => api('GET', `/disputes?paymentId=${payment.body.id as string}`),
        (r) => (r.body.disputes as unknown[] | undefined)?.length === 1,
      );
      return (listed.body.disputes as Array<{ id: string; providerDisputeId: string }>)[0]!;
    };
    const scenarios: Record<string, string> = {};
    const won = await disputed('won');
    await api('POST', `/disputes/${won.id}/evidence`, { text: 'Receipt.', submit: true });
    await stack.sandbox(`/_admin/disputes/${won.providerDisputeId}/close`, { status: 'won' });
    scenarios['dispute-evidence-won'] = won.id;
    const accepted = await disputed('accepted');
    await api('POST', `/disputes/${accepted.id}/accept`);
    scenarios['dispute-accepted'] = accepted.id;
    scenarios['dispute-deadline-lost'] = (await disputed('lost')).id;

    // A sweep since sweep-disputes-v1: every kind, disputes last (over this merchant).
    const sweepId = `sweep-record-disputes-${Date.now()}`;
    await stack.worker.client.workflow.execute(sweepOrphansWorkflow, {
      taskQueue: stack.taskQueue,
      workflowId: sweepId,
      args: [{ graceSeconds: 1, pageSize: 10, maxRows: 100, merchantId: merchant.merchantId }],
    });
    await exportHistory('sweep-orphans-with-disputes', sweepId);

    for (const [name, id] of Object.entries(scenarios)) {
      const handle = stack.api.client.workflow.getHandle(disputeWorkflowId(id));
      await eventually(
        async () => (await handle.describe()).status.name,
        (s) => s !== 'RUNNING',
        30_000,
        250,
      );
      await exportHistory(name, handle.workflowId);
    }
  } finally {
    await receiver.close();
    await stack.close();
  }
}

/**
 * Issue 42 gaps (decision 0059's amendment): a dispute whose processor answers a status nobody
 * knows (evidence sent, then decided, meanwhile) past WORKFLOW_STUCK_AFTER_SECONDS: marked Stuck,
 * then decided once the fault is gone (dispute-until-known-v1).
 */
async function recordGaps(): Promise<void> {
  const stack = await startPaymentStack(
    'record-gaps',
    { stuckAfterSeconds: 2 },
    undefined,
    {},
    { sandbox: { disputeSeconds: 0.2, disputeEvidenceSeconds: 3600 } },
  );
  try {
    const merchant = await createTestMerchant(stack.orm, 'Gaps recorder');
    const api = (method: string, route: string, body?: unknown) =>
      call(stack.api.baseUrl, method, route, merchant.auth, body);
    const payment = await api('POST', '/payments', {
      amount: 10,
      currency: 'USD',
      externalId: `gaps-dispute-${Date.now()}`,
      customer: { email: 'r@example.com' },
      cardToken: 'tok_dispute',
    });
    const listed = await eventually(
      () => api('GET', `/disputes?paymentId=${payment.body.id as string}`),
      (r) => (r.body.disputes as unknown[] | undefined)?.length === 1,
    );
    const dispute = (listed.body.disputes as Array<{ id: string; providerDisputeId: string }>)[0]!;
    const workflowId = disputeWorkflowId(dispute.id);
    await eventually(
      async () => (await stack.api.client.workflow.getHandle(workflowId).fetchHistory()).events?.length ?? 0,
      (n) => n > 10,
      10_000,
      250,
    );
    await stack.sandbox('/_admin/faults', { disputes: 'unknown_status' });
    await api('POST', `/disputes/${dispute.id}/evidence`, { text: 'Receipt.', submit: true });
    await new Promise((r) => setTimeout(r, 4000));
    await stack.sandbox(`/_admin/disputes/${dispute.providerDisputeId}/close`, { status: 'won' });
    await new Promise((r) => setTimeout(r, 1000));
    await stack.sandbox('/_admin/faults', {});
    const handle = stack.api.client.workflow.getHandle(workflowId);
    await eventually(
      async () => (await handle.describe()).status.name,
      (s) => s !== 'RUNNING',
      60_000,
      250,
    );
    await exportHistory('dispute-unknown-status-stuck-then-decided', workflowId);
  } finally {
    await stack.close();
  }
}

/**
 * Never fail closed (decision 0059): a payment and a refund answered with a status nobody knows
 * past WORKFLOW_STUCK_AFTER_SECONDS (marked Stuck, then settled once the fault is gone); a
 * payment, a refund and a subscription whose workflow was terminated, revived by the sweeper's
 * live pass (the new run's history); and that sweep run.
 */
async function recordNeverFailClosed(): Promise<void> {
  const stack = await startPaymentStack('record-never-fail', { stuckAfterSeconds: 2 });
  const faults = (body: Record<string, string>) => stack.sandbox('/_admin/faults', body);
  try {
    const merchant = await createTestMerchant(stack.orm, 'Never-fail recorder');
    const api = (method: string, path: string, body?: Record<string, unknown>) =>
      call(stack.api.baseUrl, method, path, merchant.auth, body);
    const pay = (name: string, extra: Record<string, unknown>) =>
      api('POST', '/payments', {
        amount: 10,
        currency: 'USD',
        externalId: `${name}-${Date.now()}`,
        customer: { email: 'r@example.com' },
        ...extra,
      });
    const settledWorkflow = async (workflowId: string) =>
      eventually(
        async () => (await stack.api.client.workflow.getHandle(workflowId).describe()).status.name,
        (s) => s !== 'RUNNING',
        30_000,
        250,
      );
    const terminate = (workflowId: string) =>
      stack.api.client.workflow.getHandle(workflowId).terminate('recording: the workflow ended under a live record');

    // Stuck on an unknown status, then settled.
    await faults({ payments: 'unknown_status' });
    const stuckPayment = await pay('stuck', { cardToken: 'tok_success' });
    const stuckPaymentId = (stuckPayment.body.details as { payment: { id: string } }).payment.id;
    await new Promise((r) => setTimeout(r, 4000));
    await faults({});
    const paid = await pay('paid', { cardToken: 'tok_success' });
    await faults({ refunds: 'unknown_status' });
    const stuckRefund = await api('POST', `/payments/${paid.body.id as string}/refund`, {
      externalId: `rf-stuck-${Date.now()}`,
      amount: 2,
    });
    const stuckRefundId = (stuckRefund.body.details as { refund: { id: string } }).refund.id;
    await new Promise((r) => setTimeout(r, 4000));
    await faults({});
    await settledWorkflow(paymentWorkflowId(stuckPaymentId));
    await exportHistory('payment-unknown-status-stuck-then-settled', paymentWorkflowId(stuckPaymentId));
    await settledWorkflow(refundWorkflowId(stuckRefundId));
    await exportHistory('refund-unknown-status-stuck-then-settled', refundWorkflowId(stuckRefundId));

    // Workflows ended under live records, revived by the sweeper.
    const hosted = await pay('revived', {});
    await terminate(paymentWorkflowId(hosted.body.id as string));
    const paid2 = await pay('paid2', { cardToken: 'tok_success' });
    await faults({ refunds: 'unknown_status' });
    const pending = await api('POST', `/payments/${paid2.body.id as string}/refund`, {
      externalId: `rf-revived-${Date.now()}`,
      amount: 3,
    });
    const pendingId = (pending.body.details as { refund: { id: string } }).refund.id;
    await terminate(refundWorkflowId(pendingId));
    await faults({});
    const sub = await api('POST', '/subscriptions', {
      amount: 3,
      currency: 'USD',
      billingIntervalDays: 30,
      externalId: `sub-revived-${Date.now()}`,
      cardToken: 'tok_success',
      customer: { email: 'r@example.com' },
    });
    await terminate(subscriptionWorkflowId(sub.body.id as string));
    const sweepId = `sweep-live-record-${Date.now()}`;
    await stack.worker.client.workflow.execute(sweepOrphansWorkflow, {
      taskQueue: stack.taskQueue,
      workflowId: sweepId,
      args: [
        {
          graceSeconds: 0,
          pageSize: 10,
          maxRows: 100,
          merchantId: merchant.merchantId,
          liveKinds: ['payments', 'refunds', 'subscriptions'],
        },
      ],
    });
    await exportHistory('sweep-orphans-live', sweepId);
    await fetch(`${hosted.body.redirectUrl as string}/pay`, { method: 'POST' });
    await settledWorkflow(paymentWorkflowId(hosted.body.id as string));
    await exportHistory('payment-revived-hosted-paid', paymentWorkflowId(hosted.body.id as string));
    await settledWorkflow(refundWorkflowId(pendingId));
    await exportHistory('refund-revived-settled', refundWorkflowId(pendingId));
    await api('DELETE', `/subscriptions/${sub.body.id as string}?notify=false`);
    await settledWorkflow(subscriptionWorkflowId(sub.body.id as string));
    await exportHistory('subscription-revived-cancelled', subscriptionWorkflowId(sub.body.id as string));
  } finally {
    await stack.close();
  }
}

/**
 * Subscriptions lost while collecting, revived by the live sweep from their record (decision 0061):
 * an attempt in doubt the provider never received (`subscription-undecided-not-found-v1`), a
 * cancellation the lost run accepted (Update-with-Start), an authentication wait taken up.
 */
async function recordRevivedCollections(): Promise<void> {
  const stack = await startPaymentStack('record-revived', { billingDaySeconds: 1 });
  const faults = (body: Record<string, string>) => stack.sandbox('/_admin/faults', body);
  try {
    const merchant = await createTestMerchant(stack.orm, 'Revived collections recorder');
    const subs = subscriptionClient(stack, merchant);
    const terminate = (id: string) =>
      stack.api.client.workflow
        .getHandle(subscriptionWorkflowId(id))
        .terminate('recording: the workflow ended under a live record');
    const settled = (id: string) =>
      eventually(
        async () => (await stack.api.client.workflow.getHandle(subscriptionWorkflowId(id)).describe()).status.name,
        (s) => s !== 'RUNNING',
        30_000,
        250,
      );
    const sweepLive = () =>
      stack.worker.client.workflow.execute(sweepOrphansWorkflow, {
        taskQueue: stack.taskQueue,
        workflowId: `sweep-live-revived-${Date.now()}`,
        args: [
          {
            graceSeconds: 0,
            pageSize: 10,
            maxRows: 100,
            merchantId: merchant.merchantId,
            liveKinds: ['subscriptions'],
          },
        ],
      });

    // An attempt in doubt: the soft-declined renewal's retry marked sent, never received.
    const doubt = await subs.create({ cardToken: 'tok_success', billingIntervalDays: 2, retryScheduleDays: [30] });
    const doubtId = doubt.body.id as string;
    await faults({ payments: 'decline' });
    const pastDue = await subs.until(doubtId, (s) => s.status === 'past_due', 20_000);
    await faults({});
    await terminate(doubtId);
    await stack.orm.em
      .getConnection()
      .execute('update invoices set provider_call_sent_at = now() where id = ?', [pastDue.latestInvoice.id as string]);

    // A cancellation accepted while the processor was down, the run lost before it finished.
    const cancelled = await subs.create({
      cardToken: 'tok_3ds_offsession',
      billingIntervalDays: 2,
      retryScheduleDays: [30],
    });
    const cancelledId = cancelled.body.id as string;
    await subs.until(cancelledId, (s) => s.latestInvoice?.status === 'requires_action', 20_000);
    await faults({ payments: 'unavailable' });
    await subs.cancel(cancelledId);
    await terminate(cancelledId);
    await faults({});

    // An authentication wait taken up, then authenticated.
    const waiting = await subs.create({
      cardToken: 'tok_3ds_offsession',
      billingIntervalDays: 2,
      retryScheduleDays: [30],
    });
    const waitingId = waiting.body.id as string;
    const asked = await subs.until(waitingId, (s) => s.latestInvoice?.status === 'requires_action', 20_000);
    await terminate(waitingId);

    await sweepLive();
    await subs.until(doubtId, (s) => s.status === 'active', 30_000);
    await subs.cancel(doubtId);
    await settled(doubtId);
    await exportHistory('subscription-revived-in-doubt-paid', subscriptionWorkflowId(doubtId));
    await subs.until(cancelledId, (s) => s.status === 'cancelled', 30_000);
    await settled(cancelledId);
    await exportHistory('subscription-revived-cancel-accepted', subscriptionWorkflowId(cancelledId));
    await fetch(`${asked.latestInvoice.hostedUrl as string}/authenticate`, { method: 'POST' });
    await eventually(
      () => subs.invoices(waitingId),
      (list) => list.some((i) => i.id === asked.latestInvoice.id && i.status === 'paid'),
      30_000,
      250,
    );
    await subs.cancel(waitingId);
    await settled(waitingId);
    await exportHistory('subscription-revived-authenticated', subscriptionWorkflowId(waitingId));
  } finally {
    await stack.close();
  }
}

/**
 * Subscriptions never fail closed (decision 0062), WORKFLOW_STUCK_AFTER_SECONDS 2 s:
 * - a renewal answered with a status nobody knows past it: marked Stuck, then paid once the fault
 *   is gone, the mark cleared (subscription-stuck-v1);
 * - a DELETE after an unreadable answer about an attempt waiting for authentication: the attempt
 *   cancelled at the processor first, then the invoice voided (subscription-undecided-cancel-v1;
 *   the unreadable answer marks the run Stuck meanwhile, the cancellation clears it).
 */
async function recordSubscriptionStuck(): Promise<void> {
  const stack = await startPaymentStack('record-sub-stuck', { billingDaySeconds: 1, stuckAfterSeconds: 2 });
  try {
    const merchant = await createTestMerchant(stack.orm, 'Subscription stuck recorder');
    const subs = subscriptionClient(stack, merchant);
    const stuckOf = async (id: string) =>
      (await stack.api.client.workflow.getHandle(subscriptionWorkflowId(id)).describe()).typedSearchAttributes.get(
        StuckKey,
      );
    const scenarios: Record<string, string> = {};

    const renewal = await subs.create({ cardToken: 'tok_success', billingIntervalDays: 2, retryScheduleDays: [1] });
    const renewalId = renewal.body.id as string;
    await stack.sandbox('/_admin/faults', { payments: 'unknown_status' });
    await eventually(
      () => stuckOf(renewalId),
      (v) => v !== undefined,
      20_000,
      250,
    );
    await stack.sandbox('/_admin/faults', {});
    await subs.untilPaid(renewalId, 2, 40_000);
    await eventually(
      () => stuckOf(renewalId),
      (v) => v === undefined,
      10_000,
      250,
    );
    await subs.cancel(renewalId);
    scenarios['subscription-undecided-stuck-then-paid'] = renewalId;

    const waiting = await subs.create({
      cardToken: 'tok_3ds_offsession',
      billingIntervalDays: 2,
      retryScheduleDays: [30],
    });
    const waitingId = waiting.body.id as string;
    await subs.until(
      waitingId,
      (b) => b.status === 'past_due' && (b.latestInvoice as { status?: string } | null)?.status === 'requires_action',
      15_000,
    );
    // The next question about the attempt (10 s after it asked) gets an answer nobody can read.
    await stack.sandbox('/_admin/faults', { payments: 'invalid' });
    await new Promise((resolve) => setTimeout(resolve, 13_000));
    await stack.sandbox('/_admin/faults', {});
    await subs.cancel(waitingId);
    await subs.until(waitingId, (b) => b.status === 'cancelled', 30_000);
    scenarios['subscription-undecided-cancel-after-unreadable'] = waitingId;

    for (const [name, id] of Object.entries(scenarios)) {
      const handle = stack.api.client.workflow.getHandle(subscriptionWorkflowId(id));
      await eventually(
        async () => (await handle.describe()).status.name,
        (st) => st !== 'RUNNING',
        30_000,
        250,
      );
      await exportHistory(name, handle.workflowId);
    }
  } finally {
    await stack.close();
  }
}

/**
 * The frozen legacy subscription workflow as it ran before fd55be4 (test/fixtures/legacy-subscription:
 * `await allHandlersFinished()`, a no-op, where legacy.ts now drains its handlers behind
 * `legacy-handlers-drained-v1`; decision 0082), run by a worker of a fixture bundle under the shipped
 * type name. A merchant cancel (`notify=false`, no callbackUrl: nothing left to send) reaches
 * `finish()` with the cancel Update handler still running.
 */
async function recordLegacyHandlers(): Promise<void> {
  const fixture = await buildWorkflowBundle({
    workflowsPath: path.resolve(__dirname, '../test/fixtures/legacy-subscription'),
    outPath: path.join(testStack().dir, 'legacy-subscription-fixture.js'),
  });
  const stack = await startPaymentStack('record-legacy', {}, 1500, {}, { workflowBundlePath: fixture.codePath });
  let shipped: TestWorker | undefined;
  try {
    const merchant = await createTestMerchant(stack.orm, 'Recorder');
    const subs = subscriptionClient(stack, merchant);
    const created = await subs.create({ cardToken: 'tok_success', billingIntervalDays: 30 });
    const id = (created.body.id as string | undefined) ?? (created.body.details.subscription.id as string);
    await subs.untilPaid(id, 1);
    // The first period's emails sent (their activities completed): nothing pending at the cancel.
    await eventually(
      async () => subs.mail(id).length,
      (n) => n > 0,
      20_000,
      100,
    );
    await new Promise((r) => setTimeout(r, 3000));
    const cancelled = await subs.cancel(id, '?notify=false');
    console.log(`legacy cancel answered ${cancelled.status}`);
    const handle = stack.api.client.workflow.getHandle(subscriptionWorkflowId(id));
    await eventually(
      async () => (await handle.describe()).status.name,
      (s) => s !== 'RUNNING',
      30_000,
      250,
    );
    await exportHistory('subscription-legacy-cancel-handler-running', subscriptionWorkflowId(id));

    // A legacy run that goes on under the shipped code: its cancel reaches the patched drain live
    // and records the `legacy-handlers-drained-v1` marker (the patched branch, in the replay set).
    const goingOn = await subs.create({ cardToken: 'tok_success', billingIntervalDays: 30 });
    const goingOnId = (goingOn.body.id as string | undefined) ?? (goingOn.body.details.subscription.id as string);
    await subs.untilPaid(goingOnId, 1);
    await new Promise((r) => setTimeout(r, 3000));
    await stack.worker.stop();
    shipped = await startTestWorker(stack.orm, {
      taskQueue: stack.taskQueue,
      providers: stack.providers,
      publicBaseUrl: stack.api.baseUrl,
    });
    const goingOnCancel = await subs.cancel(goingOnId, '?notify=false');
    console.log(`legacy cancel under the shipped code answered ${goingOnCancel.status}`);
    const goingOnHandle = stack.api.client.workflow.getHandle(subscriptionWorkflowId(goingOnId));
    await eventually(
      async () => (await goingOnHandle.describe()).status.name,
      (s) => s !== 'RUNNING',
      30_000,
      250,
    );
    await exportHistory('subscription-legacy-cancel-handlers-drained', subscriptionWorkflowId(goingOnId));
  } finally {
    await shipped?.stop();
    await stack.close();
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);

/**
 * Deliveries on their own queue (issue 43, decision 0069): a payment, a refund and a subscription
 * whose runs hand their events over (patch event-delivery-queue-v1), and the merchant's delivery
 * workflow delivering them to a callbackUrl that fails once and to a webhook endpoint, woken by
 * the kicker, ended once idle.
 */
async function recordEventDeliveries(): Promise<void> {
  const stack = await startPaymentStack('record-deliveries', { callbackRetryInitialSeconds: 1, billingDaySeconds: 1 });
  const receiver = await startCallbackReceiver([500]);
  const endpointReceiver = await startCallbackReceiver();
  try {
    const merchant = await createTestMerchant(stack.orm, 'Recorder');
    const api = (method: string, path: string, body?: unknown) =>
      call(stack.api.baseUrl, method, path, merchant.auth, body);
    await api('POST', '/webhook-endpoints', { url: endpointReceiver.url, enabledEvents: ['payment.*', 'refund.*'] });
    const payment = await api('POST', '/payments', {
      amount: 100,
      currency: 'USD',
      externalId: `deliveries-${Date.now()}`,
      customer: { email: 'r@example.com' },
      cardToken: 'tok_success',
      callbackUrl: receiver.url,
    });
    const paymentId = payment.body.id as string;
    const refund = await api('POST', `/payments/${paymentId}/refund`, { externalId: `r-${Date.now()}`, amount: 100 });
    const refundId = refund.body.id as string;
    const subs = subscriptionClient(stack, merchant);
    const created = await subs.create({ cardToken: 'tok_success', callbackUrl: receiver.url });
    const subscriptionId = created.body.id as string;
    await subs.untilPaid(subscriptionId, 2);
    await subs.cancel(subscriptionId);
    // The payment's two events, the refund's two, the subscription's: each to the callbackUrl
    // (the first failing once), the payment's and refund's to the endpoint too.
    await eventually(
      async () => endpointReceiver.received.length,
      (n) => n >= 3,
      30_000,
      250,
    );
    await eventually(
      async () => receiver.received.length,
      (n) => n >= 6,
      30_000,
      250,
    );
    const workflowIds: Array<[string, string]> = [
      ['payment-events-handed-to-delivery-queue', paymentWorkflowId(paymentId)],
      ['refund-events-handed-to-delivery-queue', refundWorkflowId(refundId)],
      ['subscription-events-handed-to-delivery-queue', subscriptionWorkflowId(subscriptionId)],
    ];
    for (const [name, workflowId] of workflowIds) {
      const handle = stack.api.client.workflow.getHandle(workflowId);
      await eventually(
        async () => (await handle.describe()).status.name,
        (s) => s !== 'RUNNING',
        30_000,
        250,
      );
      await exportHistory(name, workflowId);
    }
    // The delivery workflow ends a minute after its last delivery.
    const deliveries = stack.api.client.workflow.getHandle(eventDeliveriesWorkflowId(merchant.merchantId));
    await eventually(
      async () => (await deliveries.describe()).status.name,
      (s) => s !== 'RUNNING',
      120_000,
      500,
    );
    await exportHistory('event-deliveries-retried-then-idle', deliveries.workflowId);
  } finally {
    await endpointReceiver.close();
    await receiver.close();
    await stack.close();
  }
}

/**
 * A DELETE recorded in PostgreSQL whose Update no run took (decision 0076): the renewal's invoice
 * step finds the intent, applies the cancellation and the run follows its outbox
 * (subscription-cancel-intent-v1).
 */
async function recordCancelIntent(): Promise<void> {
  const stack = await startPaymentStack('record-cancel-intent', { billingDaySeconds: 1 });
  try {
    const merchant = await createTestMerchant(stack.orm, 'Cancel intent recorder');
    const subs = subscriptionClient(stack, merchant);
    const created = await subs.create({ cardToken: 'tok_success', billingIntervalDays: 2 });
    const id = created.body.id as string;
    // As the API records it before asking the workflow; the Update itself is never sent.
    await recordCancelIntentOf(stack.orm.em.fork(), id, { reason: 'merchant_request', notify: true });
    await subs.until(id, (s: SubscriptionBody) => s.status === 'cancelled', 20_000);
    await stack.api.client.workflow.getHandle(subscriptionWorkflowId(id)).result();
    await exportHistory('subscription-cancel-intent-at-renewal', subscriptionWorkflowId(id));
  } finally {
    await stack.close();
  }
}

/**
 * Runs that stay young (issue 44 item 1, decision 0084): a run handing over at the age bound (30
 * billing days, before its 40-day renewal), a run handing over on the operator's `handOver`
 * signal, and a legacy run (the fixture bundle, then the shipped worker) handing over into the
 * current code on it (legacy-hand-over-v1). Each the first run's history.
 */
async function recordRunAge(): Promise<void> {
  const stack = await startPaymentStack('record-run-age', { billingDaySeconds: 1 });
  try {
    const merchant = await createTestMerchant(stack.orm, 'Run age recorder');
    const subs = subscriptionClient(stack, merchant);
    const aged = (await subs.create({ cardToken: 'tok_success', billingIntervalDays: 40 })).body.id as string;
    const signalled = (await subs.create({ cardToken: 'tok_success', billingIntervalDays: 3650 })).body.id as string;
    await subs.untilPaid(signalled, 1);
    const signalledFirst = await stack.api.client.workflow.getHandle(subscriptionWorkflowId(signalled)).describe();
    await stack.api.client.workflow.getHandle(subscriptionWorkflowId(signalled)).signal(handOverSignal);
    await firstRunHandedOver(stack, signalled, signalledFirst.runId, 20_000);
    await exportHistory('subscription-hand-over-signal', subscriptionWorkflowId(signalled), signalledFirst.runId);
    const agedFirst = await stack.api.client.workflow.getHandle(subscriptionWorkflowId(aged)).describe();
    await firstRunHandedOver(stack, aged, agedFirst.runId, 40_000);
    await exportHistory('subscription-run-age-hand-over', subscriptionWorkflowId(aged), agedFirst.runId);
    await subs.cancel(aged, '?notify=false');
    await subs.cancel(signalled, '?notify=false');
  } finally {
    await stack.close();
  }

  const fixture = await buildWorkflowBundle({
    workflowsPath: path.resolve(__dirname, '../test/fixtures/legacy-subscription'),
    outPath: path.join(testStack().dir, 'legacy-subscription-fixture.js'),
  });
  const legacy = await startPaymentStack(
    'record-legacy-hand-over',
    { billingDaySeconds: 1 },
    1500,
    {},
    { workflowBundlePath: fixture.codePath },
  );
  let shipped: TestWorker | undefined;
  try {
    const merchant = await createTestMerchant(legacy.orm, 'Legacy hand-over recorder');
    const subs = subscriptionClient(legacy, merchant);
    const created = await subs.create({ cardToken: 'tok_success', billingIntervalDays: 30 });
    const id = (created.body.id as string | undefined) ?? (created.body.details.subscription.id as string);
    await subs.untilPaid(id, 1);
    await new Promise((r) => setTimeout(r, 3000));
    await legacy.worker.stop();
    shipped = await startTestWorker(legacy.orm, {
      taskQueue: legacy.taskQueue,
      providers: legacy.providers,
      publicBaseUrl: legacy.api.baseUrl,
      billingDaySeconds: 1,
    });
    const first = await legacy.api.client.workflow.getHandle(subscriptionWorkflowId(id)).describe();
    await legacy.api.client.workflow.getHandle(subscriptionWorkflowId(id)).signal(handOverSignal);
    await firstRunHandedOver(legacy, id, first.runId, 20_000);
    await exportHistory('subscription-legacy-hand-over', subscriptionWorkflowId(id), first.runId);
    await subs.cancel(id, '?notify=false');
  } finally {
    await shipped?.stop();
    await legacy.close();
  }
}

/**
 * Test clocks (decision 0090): a monthly subscription renewed and one declined on retries, on a
 * clock advanced 40 days (each subscription's run, with its `testClockTime` Updates), and the
 * clock's advance run.
 */
async function recordTestClocks(): Promise<void> {
  const stack = await startPaymentStack('record-test-clocks', { billingDaySeconds: 1 });
  try {
    const merchant = await createTestMerchant(stack.orm, 'Test clock recorder');
    const subs = subscriptionClient(stack, merchant);
    const api = (method: string, route: string, body?: unknown) =>
      call<SubscriptionBody>(stack.api.baseUrl, method, route, merchant.auth, body);
    const start = Date.parse('2027-01-01T00:00:00.000Z');
    const clock = (await api('POST', '/test-clocks', { frozenTime: new Date(start).toISOString() })).body;
    const renewed = (await subs.create({ cardToken: 'tok_success', billingIntervalDays: 30, testClock: clock.id }))
      .body;
    const declined = (
      await subs.create({ cardToken: 'tok_renewal_insufficient_funds', billingIntervalDays: 30, testClock: clock.id })
    ).body;
    await api('POST', `/test-clocks/${clock.id}/advance`, {
      frozenTime: new Date(start + 40 * 86_400_000).toISOString(),
    });
    await eventually(
      () => api('GET', `/test-clocks/${clock.id}`).then((r) => r.body),
      (c) => c.status === 'ready',
      60_000,
    );
    await subs.cancel(renewed.id as string, '?notify=false');
    await exportHistory('subscription-test-clock-renewals', subscriptionWorkflowId(renewed.id as string));
    await exportHistory('subscription-test-clock-declines', subscriptionWorkflowId(declined.id as string));
    await exportHistory('test-clock-advance', testClockWorkflowId(clock.id as string));
  } finally {
    await stack.close();
  }
}

async function firstRunHandedOver(
  stack: Awaited<ReturnType<typeof startPaymentStack>>,
  id: string,
  runId: string,
  timeoutMs: number,
): Promise<void> {
  const handle = stack.api.client.workflow.getHandle(subscriptionWorkflowId(id), runId);
  const status = await eventually(
    async () => (await handle.describe()).status.name,
    (s) => s !== 'RUNNING',
    timeoutMs,
    250,
  );
  if (status !== 'CONTINUED_AS_NEW') throw new Error(`run ${runId} of ${id} ended ${status}`);
}

/**
 * The sweeper after its patches were deprecated (decision 0084's calendar): the schedule's
 * arguments (every kind, every live kind) over one merchant. Its deprecated markers prove the next
 * step, removing the `deprecatePatch` calls.
 */
async function recordSweepsDeprecated(): Promise<void> {
  const stack = await startPaymentStack('record-sweep-deprecated');
  try {
    const merchant = await createTestMerchant(stack.orm, 'Sweep recorder');
    const workflowId = `sweep-deprecated-record-${Date.now()}`;
    await stack.worker.client.workflow.execute(sweepOrphansWorkflow, {
      taskQueue: stack.taskQueue,
      workflowId,
      args: [{ ...SWEEP_ARGS, graceSeconds: 1, merchantId: merchant.merchantId }],
    });
    await exportHistory('sweep-orphans.deprecated-patches', workflowId);
  } finally {
    await stack.close();
  }
}

/**
 * Bugs park (issue 44 item 5, decision 0077 amended): a refund whose local provider attempt hit a
 * bug (a TypeError, before the provider was asked) parked its call (local-activity-bug-park-v1,
 * `Stuck: activity_bug`), asked again a minute later, then settled. A worker with the product's
 * activities and interceptors whose attemptProviderRefund fails its first call.
 */
async function recordActivityBugs(): Promise<void> {
  const stack = await startPaymentStack('record-activity-bugs');
  let worker: OverriddenWorker | undefined;
  try {
    const merchant = await createTestMerchant(stack.orm, 'Activity bug recorder');
    await stack.worker.stop();
    let calls = 0;
    worker = await startWorkerWithOverrides(stack, (real) => ({
      attemptProviderRefund: async (refundId: string) => {
        if (++calls === 1) {
          const settings = undefined as unknown as { refundReason: string };
          settings.refundReason.trim(); // a TypeError
        }
        return real.attemptProviderRefund(refundId);
      },
    }));
    const paid = await call(stack.api.baseUrl, 'POST', '/payments', merchant.auth, {
      amount: 10,
      currency: 'USD',
      externalId: `bug-${Date.now()}`,
      customer: { email: 'r@example.com' },
      cardToken: 'tok_success',
    });
    const refunded = await call(
      stack.api.baseUrl,
      'POST',
      `/payments/${paid.body.id as string}/refund`,
      merchant.auth,
      {
        externalId: `bug-refund-${Date.now()}`,
        amount: 4,
      },
    );
    const handle = stack.api.client.workflow.getHandle(refundWorkflowId(refunded.body.id as string));
    await handle.result();
    await exportHistory('refund-local-attempt-bug-parked', handle.workflowId);
  } finally {
    await worker?.stop();
    await stack.close();
  }
}

/**
 * CUSTOMER_CHARGE_DEFAULT (decision 0088): a customer's subscription waiting for a new card after
 * its round failed is woken by an attach (the `customerCard` signal) and charges the new card at
 * once; one retrying a soft decline only notes the signal, and its retry charges as scheduled.
 */
async function recordCustomerCards(): Promise<void> {
  const stack = await startPaymentStack('record-customer-cards', { billingDaySeconds: 1 });
  try {
    const merchant = await createTestMerchant(stack.orm, 'Customer card recorder');
    const subs = subscriptionClient(stack, merchant);
    const api = (method: string, route: string, body?: unknown) =>
      call<Record<string, unknown>>(stack.api.baseUrl, method, route, merchant.auth, body);
    const customerWith = async (cardToken: string) => {
      const customer = await api('POST', '/customers', {
        externalId: `rec-cust-${Date.now()}`,
        email: 'r@example.com',
      });
      const id = customer.body.id as string;
      await api('POST', `/customers/${id}/payment-methods`, { cardToken });
      return id;
    };
    const scenarios: Record<string, string> = {};

    const lostCustomer = await customerWith('tok_renewal_lost_card');
    const waiting = (
      await subs.create({
        customer: undefined,
        customerId: lostCustomer,
        billingIntervalDays: 3,
        retryScheduleDays: [60],
      })
    ).body.id as string;
    await eventually(
      async () => subs.mail(waiting),
      (l) => l.some((e) => /A new card is needed/.test(e.subject)),
    );
    await api('POST', `/customers/${lostCustomer}/payment-methods`, { cardToken: 'tok_success' });
    await subs.untilPaid(waiting, 2);
    await subs.cancel(waiting);
    scenarios['subscription-customer-card-ends-wait'] = waiting;

    // A soft decline's retries: the signal is noted, the retry (its schedule) charges as usual.
    const poorCustomer = await customerWith('tok_renewal_insufficient_funds');
    const retrying = (
      await subs.create({
        customer: undefined,
        customerId: poorCustomer,
        billingIntervalDays: 2,
        retryScheduleDays: [2],
      })
    ).body.id as string;
    await subs.until(retrying, (b) => b.status === 'past_due');
    await api('POST', `/customers/${poorCustomer}/payment-methods`, { cardToken: 'tok_success' });
    await eventually(
      async () => subs.invoices(retrying),
      (list) => list.some((i) => i.periodIndex === 1 && i.attempts >= 2),
    );
    await subs.cancel(retrying);
    scenarios['subscription-customer-card-while-retrying'] = retrying;

    for (const [name, id] of Object.entries(scenarios)) {
      const handle = stack.api.client.workflow.getHandle(subscriptionWorkflowId(id));
      await eventually(
        async () => (await handle.describe()).status.name,
        (st) => st !== 'RUNNING',
        30_000,
        250,
      );
      await exportHistory(name, handle.workflowId);
    }
  } finally {
    await stack.close();
  }
}

/** Card setup pages whose webhook never came (decision 0089): one kept after a look found it open, one declined. */
async function recordSetupPages(): Promise<void> {
  const stack = await startPaymentStack('record-setup-pages', { setupPagePollSeconds: 1 });
  try {
    const merchant = await createTestMerchant(stack.orm, 'Setup page recorder');
    const api = (method: string, route: string, body?: unknown) =>
      call<Record<string, unknown>>(stack.api.baseUrl, method, route, merchant.auth, body);
    const page = async (name: string) => {
      const customer = await api('POST', '/customers', {
        externalId: `rec-setup-${name}-${Date.now()}`,
        email: 'r@example.com',
      });
      const res = await api('POST', `/customers/${customer.body.id as string}/payment-methods/setup`, {});
      const handle = stack.api.client.workflow.getHandle(setupPageWorkflowId(res.body.paymentMethodId as string));
      return { handle, transactionId: (res.body.redirectUrl as string).split('/').pop()! };
    };
    const kept = await page('kept');
    // Looked at once while still open, then completed at the processor without a webhook.
    await eventually(
      async () =>
        ((await kept.handle.fetchHistory()).events ?? []).filter((e) => e.activityTaskCompletedEventAttributes).length,
      (looks) => looks >= 1,
    );
    stack.sandboxStore.checkoutAct(kept.transactionId, 'pay');
    await kept.handle.result();
    await exportHistory('setupPage-kept-without-webhook', kept.handle.workflowId);

    const declined = await page('declined');
    stack.sandboxStore.checkoutAct(declined.transactionId, 'decline');
    await declined.handle.result();
    await exportHistory('setupPage-declined', declined.handle.workflowId);
  } finally {
    await stack.close();
  }
}
