import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { MikroORM } from '@mikro-orm/postgresql';
import { migrate } from '../../src/db/orm';
import { DeliveryJob, Invoice, Payment, Refund } from '../../src/db/entities';
import { freeLoopbackPort } from '../../dev/infra/ports';
import { stopProcess } from '../../dev/infra/processes';
import { startMailCatcher, type MailCatcher } from '../../dev/mail/catcher';
import { createSandbox, type RunningSandbox } from '../../dev/sandbox/server';
import { scrape, sumOf, type Sample } from '../../src/metrics/text';
import { testStack } from '../setup/stackInfo';
import { startCallbackReceiver } from '../helpers/callbackReceiver';
import { call, eventually } from '../helpers/http';
import { paymentRow } from '../helpers/records';
import {
  createTestMerchant,
  openTestOrm,
  SANDBOX_API_KEY,
  SANDBOX_WEBHOOK_SECRET,
  uniqueTaskQueue,
  type TestMerchant,
} from '../helpers/stack';

const ROOT = path.resolve(__dirname, '../..');

/**
 * The metrics endpoints of the real processes (src/main/api.ts and src/main/worker.ts as child
 * processes): scraped before and after real payments, refunds, renewals, callbacks and emails;
 * every counter moved by exactly what the ledger (PostgreSQL, the sandbox) shows. The processes
 * use a database of their own, so nothing another test file does (an orphan another sweeper
 * run starts on this task queue) can move these counters.
 */
describe('metrics endpoints of the API and worker processes', () => {
  const BILLING_DAY_S = 2;
  let admin: MikroORM;
  let orm: MikroORM;
  let database: string;
  let dataDir: string;
  let sandbox: RunningSandbox;
  let mail: MailCatcher;
  let receiver: Awaited<ReturnType<typeof startCallbackReceiver>>;
  let api: ChildProcess;
  let worker: ChildProcess;
  let apiUrl: string;
  let apiMetrics: string;
  let workerMetrics: string;
  let merchant: TestMerchant;

  const logOf = (name: string) => path.join(dataDir, `${name}.log`);
  const spawnEntry = (name: 'api' | 'worker', env: NodeJS.ProcessEnv): ChildProcess => {
    const out = fs.openSync(logOf(name), 'a');
    const child = spawn(process.execPath, ['--import', 'tsx', `src/main/${name}.ts`], {
      cwd: ROOT,
      env,
      stdio: ['ignore', out, out],
    });
    fs.closeSync(out);
    return child;
  };
  const post = (p: string, body: unknown) => call(apiUrl, 'POST', p, merchant.auth, body);
  const get = (p: string) => call(apiUrl, 'GET', p, merchant.auth);
  const faults = (state: Record<string, unknown>) =>
    fetch(`${sandbox.url}/_admin/faults`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(state),
    });
  let counter = 0;
  const pay = (cardToken: string, extra: Record<string, unknown> = {}) =>
    post('/payments', {
      amount: 10,
      currency: 'USD',
      externalId: `metrics-${Date.now()}-${++counter}`,
      customer: { email: 'customer@example.com' },
      cardToken,
      callbackUrl: receiver.url,
      ...extra,
    });

  beforeAll(async () => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'metrics-'));
    admin = await openTestOrm();
    database = `metrics_${process.pid}_${Date.now()}`;
    await admin.em.getConnection().execute(`create database "${database}"`);
    const url = new URL(testStack().databaseUrl);
    url.pathname = `/${database}`;
    orm = await openTestOrm(url.toString());
    await migrate(orm);

    sandbox = await createSandbox({ apiKey: SANDBOX_API_KEY, webhookSecret: SANDBOX_WEBHOOK_SECRET }).listen(0);
    mail = await startMailCatcher({ port: 0, dir: path.join(dataDir, 'mail') });
    receiver = await startCallbackReceiver([500]); // the first callback fails once
    const [port, metricsPort, workerMetricsPort] = [
      await freeLoopbackPort(),
      await freeLoopbackPort(),
      await freeLoopbackPort(),
    ];
    apiUrl = `http://127.0.0.1:${port}`;
    apiMetrics = `http://127.0.0.1:${metricsPort}/metrics`;
    workerMetrics = `http://127.0.0.1:${workerMetricsPort}/metrics`;
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      DATA_DIR: dataDir,
      DATABASE_URL: url.toString(),
      TEMPORAL_ADDRESS: testStack().temporalAddress,
      TEMPORAL_TASK_QUEUE: uniqueTaskQueue('metrics'),
      SANDBOX_URL: sandbox.url,
      SANDBOX_API_KEY,
      SANDBOX_WEBHOOK_SECRET,
      PUBLIC_BASE_URL: apiUrl,
      SMTP_URL: `smtp://127.0.0.1:${mail.port}`,
      HOST: '127.0.0.1',
      PORT: String(port),
      METRICS_HOST: '127.0.0.1',
      METRICS_PORT: String(metricsPort),
      WORKER_METRICS_PORT: String(workerMetricsPort),
      BILLING_DAY_SECONDS: String(BILLING_DAY_S),
      CALLBACK_RETRY_INITIAL_SECONDS: '1',
      PROVIDER_TIMEOUT_MS: '3000',
      WORKER_VERSIONING: 'false',
      WORKFLOW_BUNDLE_PATH: testStack().workflowBundlePath,
      LOG_LEVEL: 'warn',
    };
    api = spawnEntry('api', env);
    worker = spawnEntry('worker', env);
    merchant = await createTestMerchant(orm, 'Metrics merchant');
    await eventually(
      () =>
        fetch(`${apiUrl}/readyz`).then(
          (r) => r.status,
          () => 0,
        ),
      (s) => s === 200,
      60_000,
      250,
    );
    // The worker polls once its workflows load: a first payment settles.
    const warm = await eventually(
      () => pay('tok_success'),
      (r) => r.status === 200 && (r.body as { status?: string }).status === 'succeeded',
      60_000,
      500,
    );
    expect(warm.status).toBe(200);
  }, 120_000);

  afterAll(async () => {
    await Promise.all([api, worker].filter(Boolean).map((child) => stopProcess(child, 15_000)));
    await receiver?.close();
    await mail?.close();
    await sandbox?.close();
    await orm?.close();
    await admin?.em.getConnection().execute(`drop database if exists "${database}" with (force)`);
    await admin?.close();
    if (process.env.KEEP_METRICS_LOGS) process.stdout.write(`logs kept in ${dataDir}\n`);
    else fs.rmSync(dataDir, { recursive: true, force: true });
  });

  const delta = (before: Sample[], after: Sample[], name: string, labels: Record<string, string> = {}) =>
    sumOf(after, name, labels) - sumOf(before, name, labels);

  it('API: requests by route template, method and status; error codes; auth failures; process metrics', async () => {
    const before = await scrape(apiMetrics);
    const missing = `pay_${'0'.repeat(26)}`;
    expect((await get(`/payments/${missing}`)).status).toBe(404);
    expect((await get(`/payments/${missing}`)).status).toBe(404);
    expect((await call(apiUrl, 'GET', `/refunds/${missing}`, undefined)).status).toBe(401);
    expect((await call(apiUrl, 'GET', `/refunds/${missing}`, 'Basic bm9wZTpub3Bl')).status).toBe(401);
    expect((await get('/no/such/route/abc123')).status).toBe(404);
    expect((await post('/payments', { amount: 'ten' })).status).toBe(400);
    const after = await scrape(apiMetrics);

    const count = 'http_request_duration_seconds_count';
    expect(delta(before, after, count, { method: 'GET', route: '/payments/:paymentId', status: '404' })).toBe(2);
    expect(delta(before, after, count, { method: 'GET', route: '/refunds/:refundId', status: '401' })).toBe(2);
    expect(delta(before, after, count, { method: 'POST', route: '/payments', status: '400' })).toBe(1);
    expect(delta(before, after, count, { route: 'unmatched', status: '404' })).toBe(1);
    // Never a raw path: ids and unknown paths stay out of the labels.
    expect(after.filter((s) => JSON.stringify(s.labels).includes(missing))).toEqual([]);
    expect(after.filter((s) => JSON.stringify(s.labels).includes('abc123'))).toEqual([]);
    // The histogram has its buckets (+Inf equals the count).
    const labels = { method: 'GET', route: '/payments/:paymentId', status: '404' };
    expect(sumOf(after, 'http_request_duration_seconds_bucket', { ...labels, le: '+Inf' })).toBe(
      sumOf(after, count, labels),
    );

    expect(delta(before, after, 'http_errors_total', { code: 'not_found' })).toBe(3);
    expect(delta(before, after, 'http_errors_total', { code: 'unauthorized' })).toBe(2);
    expect(delta(before, after, 'http_errors_total', { code: 'validation_error' })).toBe(1);
    expect(delta(before, after, 'http_auth_failures_total', { code: 'unauthorized' })).toBe(2);
    expect(sumOf(after, 'http_requests_in_flight')).toBe(0);
    expect(sumOf(after, 'process_resident_memory_bytes')).toBeGreaterThan(0);
    expect(after.some((s) => s.name === 'nodejs_eventloop_lag_seconds')).toBe(true);
    // Nothing stuck in this database.
    expect(sumOf(after, 'payments_stuck_created')).toBe(0);
    expect(sumOf(after, 'refunds_stuck_pending')).toBe(0);
    expect(after.filter((s) => s.name === 'payments_stuck_created').map((s) => s.labels.environment)).toEqual(
      expect.arrayContaining(['test', 'live']),
    );
    // Workflows marked Stuck, counted from Temporal (the test server is shared: only the series).
    expect(
      after
        .filter((s) => s.name === 'workflows_stuck')
        .map((s) => s.labels.workflow)
        .sort(),
    ).toEqual(['dispute', 'payment', 'refund', 'subscription']);
  });

  it('API: /metrics only on its own port, not on the API port; nothing else on the metrics port', async () => {
    expect((await fetch(`${apiUrl}/metrics`)).status).toBe(404);
    expect((await fetch(apiMetrics.replace('/metrics', '/other'))).status).toBe(404);
    const res = await fetch(apiMetrics);
    expect(res.headers.get('content-type')).toMatch(/^text\/plain/);
  });

  /**
   * A row as a lost workflow would leave it, inserted (never sent to the provider) and deleted
   * after: the worker's sweeper may give it a run meanwhile (decision 0059), which finds nothing
   * at the provider and so changes neither the row nor the money metrics the worker test counts.
   */
  const insertStuck = async (overrides: Partial<Payment>): Promise<Payment> => {
    const em = orm.em.fork();
    const row = paymentRow(em, merchant.merchantId, { externalId: `stuck-${Date.now()}`, ...overrides });
    await em.flush();
    return row;
  };

  it('API: payments stuck created past their expiry are counted by the backlog gauge', async () => {
    // As a lost workflow would leave it: still created an hour past its expiry (own database).
    const stuck = await insertStuck({ expiresAt: new Date(Date.now() - 3_600_000) });
    const sql = orm.em.getConnection();
    try {
      // The gauge is cached for 15 s at most.
      const after = await eventually(
        () => scrape(apiMetrics),
        (s) => sumOf(s, 'payments_stuck_created', { environment: 'test' }) === 1,
        20_000,
        500,
      );
      expect(sumOf(after, 'payments_stuck_created', { environment: 'live' })).toBe(0);
    } finally {
      await sql.execute(`delete from payments where id = ?`, [stuck.id]);
    }
  }, 30_000);

  it('API: payments processing for over 7 days are counted by the processing backlog gauge', async () => {
    // The processor has not decided in 8 days (own database); its expiry does not apply.
    const stuck = await insertStuck({ status: 'processing', createdAt: new Date(Date.now() - 8 * 86_400_000) });
    const sql = orm.em.getConnection();
    try {
      const after = await eventually(
        () => scrape(apiMetrics),
        (s) => sumOf(s, 'payments_stuck_processing', { environment: 'test' }) === 1,
        25_000,
        500,
      );
      expect(sumOf(after, 'payments_stuck_processing', { environment: 'live' })).toBe(0);
      expect(sumOf(after, 'payments_stuck_created')).toBe(0);
    } finally {
      await sql.execute(`delete from payments where id = ?`, [stuck.id]);
    }
  }, 35_000);

  it('API: subscription invoices processing for over 7 days are counted by their own backlog gauge', async () => {
    const sub = await post('/subscriptions', {
      amount: 3,
      currency: 'USD',
      billingIntervalDays: 30,
      externalId: `sub-stuck-${Date.now()}`,
      cardToken: 'tok_success',
    });
    expect(sub.body).toMatchObject({ status: 'active' });
    const subId = (sub.body as { id: string }).id;
    expect((await call(apiUrl, 'DELETE', `/subscriptions/${subId}?notify=false`, merchant.auth)).status).toBe(200);
    const sql = orm.em.getConnection();
    // Its invoice as one the processor has not decided in 8 days would be (own database).
    await sql.execute(
      `update invoices set status = 'processing', updated_at = now() - interval '8 days' where subscription_id = ?`,
      [subId],
    );
    try {
      const after = await eventually(
        () => scrape(apiMetrics),
        (s) => sumOf(s, 'invoices_stuck_processing', { environment: 'test' }) === 1,
        25_000,
        500,
      );
      expect(sumOf(after, 'invoices_stuck_processing', { environment: 'live' })).toBe(0);
      expect(sumOf(after, 'payments_stuck_processing')).toBe(0);
      // One that became processing a day ago is not stuck yet.
      await sql.execute(`update invoices set updated_at = now() - interval '1 day' where subscription_id = ?`, [subId]);
      await eventually(
        () => scrape(apiMetrics),
        (s) => sumOf(s, 'invoices_stuck_processing', { environment: 'test' }) === 0,
        25_000,
        500,
      );
    } finally {
      await sql.execute(`update invoices set status = 'paid' where subscription_id = ?`, [subId]);
    }
  }, 70_000);

  it('worker: the SDK metrics and ours on one endpoint; money movements counted once each', async () => {
    const before = await scrape(workerMetrics);
    // The Temporal SDK's own metrics, in seconds.
    for (const name of [
      'temporal_workflow_task_schedule_to_start_latency_bucket',
      'temporal_workflow_task_execution_latency_bucket',
      'temporal_activity_execution_latency_bucket',
      'temporal_worker_task_slots_available',
      'temporal_sticky_cache_size',
    ]) {
      expect({ name, present: before.some((s) => s.name === name) }).toEqual({ name, present: true });
    }

    // Payments: two captured, one declined, one refused outright (an unknown token).
    const paid = [await pay('tok_success'), await pay('tok_success')];
    for (const r of paid) expect(r.body).toMatchObject({ status: 'succeeded' });
    expect((await pay('tok_decline')).body).toMatchObject({ status: 'failed' });
    expect((await pay('tok_unknown_card')).status).toBe(400);

    // An ambiguous attempt (the sandbox acts, then answers garbage), reconciled once it answers again.
    await faults({ payments: 'invalid' });
    const ambiguous = await pay('tok_success');
    // 502 provider_invalid_response, the payment in its details: the outcome follows.
    expect(ambiguous.status).toBe(502);
    const ambiguousId = (ambiguous.body as { details: { payment: { id: string } } }).details.payment.id;
    await eventually(
      () => scrape(workerMetrics),
      (s) => delta(before, s, 'provider_ambiguous_outcomes_total', { reason: 'invalid_response' }) === 1,
      20_000,
      250,
    );
    await faults({});
    await eventually(
      () => get(`/payments/${ambiguousId}`),
      (r) => (r.body as { status?: string }).status === 'succeeded',
      30_000,
      250,
    );

    // Refunds: one succeeded, one declined by the provider.
    const paymentIds = paid.map((r) => (r.body as { id: string }).id);
    const refunded = await post(`/payments/${paymentIds[0]}/refund`, { externalId: `re-${Date.now()}`, amount: 4 });
    expect(refunded.body).toMatchObject({ status: 'succeeded' });
    await faults({ refunds: 'fail' });
    const declined = await post(`/payments/${paymentIds[1]}/refund`, { externalId: `re-${Date.now()}-2` });
    expect(declined.body).toMatchObject({ status: 'failed' });
    await faults({});

    // A subscription: charged at once, renewed every BILLING_DAY_S; one renewal declined, then cancelled.
    const sub = await post('/subscriptions', {
      amount: 5,
      currency: 'USD',
      billingIntervalDays: 1,
      externalId: `sub-${Date.now()}`,
      customer: { email: 'subscriber@example.com' },
      cardToken: 'tok_success',
    });
    expect(sub.body).toMatchObject({ status: 'active' });
    const subId = (sub.body as { id: string }).id;
    const invoices = () => orm.em.fork().find(Invoice, { subscription: subId });
    await eventually(invoices, (list) => list.filter((i) => i.status === 'paid').length >= 2, 30_000, 200);
    await faults({ payments: 'decline' });
    await eventually(invoices, (list) => list.some((i) => i.status === 'open' && i.attempts >= 1), 30_000, 200);
    await faults({});
    expect((await call(apiUrl, 'DELETE', `/subscriptions/${subId}`, merchant.auth)).status).toBe(200);

    // Everything recorded has reached its metric: callbacks delivered, emails sent.
    const em = () => orm.em.fork();
    await eventually(
      async () =>
        (await em().count(DeliveryJob, { status: 'pending' })) +
        Number(
          (
            await orm.em
              .getConnection()
              .execute<Array<{ n: number }>>(`select count(*)::int as n from emails where sent_at is null`)
          )[0]!.n,
        ),
      (n) => n === 0,
      30_000,
      250,
    );
    const after = await scrape(workerMetrics);

    // The ledger, from this process's own database (the warm-up payment was before `before`).
    const settled = await em().find(Payment, { merchant: merchant.merchantId });
    const succeeded = settled.filter((p) => ['succeeded', 'partially_refunded', 'refunded'].includes(p.status));
    expect(succeeded).toHaveLength(4); // warm-up + 2 + the reconciled one
    expect(delta(before, after, 'payments_total', { outcome: 'succeeded' })).toBe(3);
    expect(delta(before, after, 'payments_total', { outcome: 'failed' })).toBe(1);
    expect(delta(before, after, 'payments_total', { outcome: 'rejected' })).toBe(1);
    expect(delta(before, after, 'payments_total', { outcome: 'voided' })).toBe(0);

    const refunds = await em().find(Refund, { merchant: merchant.merchantId });
    expect(refunds.map((r) => r.status).sort()).toEqual(['failed', 'succeeded']);
    expect(delta(before, after, 'refunds_total', { outcome: 'succeeded' })).toBe(1);
    expect(delta(before, after, 'refunds_total', { outcome: 'failed' })).toBe(1);

    const list = await invoices();
    const paidInvoices = list.filter((i) => i.status === 'paid').length;
    // Declined attempts: every attempt of an unpaid invoice, all but the last of a paid one.
    const declinedAttempts = list.reduce((n, i) => n + i.attempts - (i.status === 'paid' ? 1 : 0), 0);
    expect(paidInvoices).toBeGreaterThanOrEqual(2);
    expect(declinedAttempts).toBeGreaterThanOrEqual(1);
    expect(delta(before, after, 'subscription_charges_total', { outcome: 'succeeded' })).toBe(paidInvoices);
    expect(delta(before, after, 'subscription_charges_total', { outcome: 'failed' })).toBe(declinedAttempts);

    // Callbacks: every attempt counted (the receiver failed the first one once). This database
    // has no webhook endpoints: every delivery job is a callback's.
    const jobs = await em().find(DeliveryJob, {});
    const delivered = jobs.filter((j) => j.status === 'succeeded').length;
    const attempts = jobs.reduce((n, j) => n + j.attempts, 0);
    expect(sumOf(after, 'merchant_callback_deliveries_total', { outcome: 'delivered' })).toBe(delivered);
    expect(sumOf(after, 'merchant_callback_deliveries_total', { outcome: 'failed' })).toBe(attempts - delivered);
    expect(attempts - delivered).toBeGreaterThanOrEqual(1);
    expect(receiver.received.length).toBe(attempts);

    // Emails: every one sent (receipts, the decline notice, the cancellation).
    const sent = (
      await orm.em
        .getConnection()
        .execute<Array<{ n: number }>>(`select count(*)::int as n from emails where sent_at is not null`)
    )[0]!.n;
    expect(sent).toBeGreaterThanOrEqual(3);
    expect(sumOf(after, 'emails_total', { outcome: 'sent' })).toBe(sent);
    expect(sumOf(after, 'emails_total', { outcome: 'failed' })).toBe(0);

    // Provider calls: timed by operation; the garbage answers counted as errors of their kind.
    expect(
      delta(before, after, 'provider_call_duration_seconds_count', {
        processor: 'sandbox',
        operation: 'createPayment',
      }),
    ).toBeGreaterThanOrEqual(5);
    expect(
      delta(before, after, 'provider_call_errors_total', { processor: 'sandbox', kind: 'invalid_response' }),
    ).toBeGreaterThanOrEqual(1);
    expect(delta(before, after, 'provider_call_errors_total', { kind: 'rejected' })).toBe(1);
  }, 180_000);
});
