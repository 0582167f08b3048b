import { eventually } from '../helpers/http';
import { createTestMerchant, startPaymentStack, type PaymentStack, type TestMerchant } from '../helpers/stack';
import { sleep, subscriptionClient, succeededByInvoice } from '../helpers/subscriptions';
import { subscriptionWorkflowId } from '../../workflows/subscriptionApi';
import { StuckKey } from '../../workflows/searchAttributes';
import { freeLoopbackPort } from '../../dev/infra/ports';
import { createLogger } from '../../src/logger';
import { renderApiMetrics } from '../../src/metrics/api';
import { startMetricsServer, type MetricsServer } from '../../src/metrics/server';
import { STUCK_WORKFLOW_TYPES, registerStuckWorkflowGauge, stuckQuery } from '../../src/metrics/stuckWorkflows';
import { scrape, sumOf } from '../../src/metrics/text';

/**
 * Never fail closed (issue 42 item 6), subscriptions: a charge answered with a status nobody
 * knows (the sandbox's `unknown_status` fault: the charge is made, every answer about it says
 * `on_hold`) keeps the invoice open and the subscription where it is; the workflow keeps
 * asking about that same attempt and never fails; once the fault is gone the capture pays the
 * invoice exactly once and renewals go on. A one-second billing day. Unanswered past
 * WORKFLOW_STUCK_AFTER_SECONDS (2 s here), the run is marked `Stuck` and counted by the
 * `workflows_stuck` gauge until the answer is known (decision 0062).
 */
describe('subscriptions: answers the code does not know', () => {
  const DAY_MS = 1000;
  let stack: PaymentStack;
  let merchant: TestMerchant;
  let subs: ReturnType<typeof subscriptionClient>;

  const STUCK_AFTER_SECONDS = 2;
  let metrics: MetricsServer | null;
  let metricsUrl: string;

  const describeRun = (id: string) => stack.api.client.workflow.getHandle(subscriptionWorkflowId(id)).describe();
  const workflowStatus = async (id: string) => (await describeRun(id)).status.name;
  const stuckOf = async (id: string) => (await describeRun(id)).typedSearchAttributes.get(StuckKey);
  /** The gauge's query, for this one run (Temporal's visibility catches up shortly). */
  const countedStuck = async (id: string) =>
    (
      await stack.api.client.workflow.count(
        `${stuckQuery(STUCK_WORKFLOW_TYPES.subscription)} AND WorkflowId = '${subscriptionWorkflowId(id)}'`,
      )
    ).count;
  /** `workflows_stuck{workflow="subscription"}` as the API's /metrics answers it (cached 15 s). */
  const gauge = async () => sumOf(await scrape(metricsUrl), 'workflows_stuck', { workflow: 'subscription' });

  beforeAll(async () => {
    stack = await startPaymentStack('subunknown', {
      billingDaySeconds: DAY_MS / 1000,
      subscriptionAuthorizationExpirySeconds: 4,
      stuckAfterSeconds: STUCK_AFTER_SECONDS,
    });
    merchant = await createTestMerchant(stack.orm, 'Unknown answers merchant');
    subs = subscriptionClient(stack, merchant);
    // The API process's metrics endpoint, as src/main/api.ts serves it.
    registerStuckWorkflowGauge(stack.api.client, createLogger('silent', 'metrics'));
    const port = await freeLoopbackPort();
    metrics = await startMetricsServer({ host: '127.0.0.1', port, report: () => {}, render: renderApiMetrics });
    metricsUrl = `http://127.0.0.1:${port}/metrics`;
  });
  afterEach(() => stack.sandbox('/_admin/faults', {}));
  afterAll(async () => {
    await metrics?.close();
    await stack.close();
  });

  it('a renewal unanswered past the stuck time: marked Stuck and counted while the fault lasts, cleared once paid', async () => {
    const created = await subs.create({ cardToken: 'tok_success', billingIntervalDays: 2, retryScheduleDays: [1] });
    expect(created.body.status).toBe('active');
    const id = created.body.id as string;
    await stack.sandbox('/_admin/faults', { payments: 'unknown_status' });
    const renewal = await eventually(
      async () => (await subs.invoices(id))[1],
      (i) => i !== undefined,
      15_000,
    );

    // Unanswered for longer than the stuck time: the run is marked with the answer's type.
    const stuck = await eventually(
      () => stuckOf(id),
      (v) => v !== undefined,
      20_000,
      250,
    );
    expect(stuck).toBe('invalid_response');
    expect(await workflowStatus(id)).toBe('RUNNING');
    expect((await subs.get(id)).body.status).toBe('active');
    expect((await subs.invoices(id)).find((i) => i.id === renewal!.id)).toMatchObject({ status: 'open', attempts: 0 });
    expect(
      await eventually(
        () => countedStuck(id),
        (n) => n === 1,
        10_000,
        250,
      ),
    ).toBe(1);
    // Counted by the gauge while the fault lasts.
    const during = await eventually(gauge, (n) => n >= 1, 20_000, 500);
    expect(during).toBeGreaterThanOrEqual(1);
    // Still stuck (the provider is asked again about the same attempt, nothing else is charged).
    expect(await stuckOf(id)).toBe('invalid_response');
    expect((await subs.captures(id)).filter((c) => c.metadata.invoiceId === renewal!.id)).toHaveLength(1);

    // The fault is gone: the same attempt pays the invoice, once; the mark is cleared.
    await stack.sandbox('/_admin/faults', {});
    const paid = await eventually(
      async () => (await subs.invoices(id)).find((i) => i.id === renewal!.id),
      (i) => i?.status === 'paid',
      40_000,
    );
    expect(paid!.attempts).toBe(1);
    expect(
      await eventually(
        () => stuckOf(id),
        (v) => v === undefined,
        10_000,
        100,
      ),
    ).toBeUndefined();
    expect(
      await eventually(
        () => countedStuck(id),
        (n) => n === 0,
        10_000,
        250,
      ),
    ).toBe(0);
    // The gauge drops (its cache is 15 s).
    expect(await eventually(gauge, (n) => n < during, 30_000, 1_000)).toBeLessThan(during);
    expect(await workflowStatus(id)).toBe('RUNNING');
    await subs.cancel(id);
    const captures = await subs.captures(id);
    expect(captures.filter((c) => c.metadata.invoiceId === renewal!.id)).toHaveLength(1);
    for (const count of succeededByInvoice(captures).values()) expect(count).toBe(1);
  }, 120_000);

  it('a renewal answered with an unknown status: the subscription survives, then renews normally', async () => {
    const created = await subs.create({ cardToken: 'tok_success', billingIntervalDays: 2, retryScheduleDays: [1] });
    expect(created.body.status).toBe('active');
    const id = created.body.id as string;
    await stack.sandbox('/_admin/faults', { payments: 'unknown_status' });

    // The renewal's charge is made at the sandbox (captured underneath), but its answer is unknown.
    const renewal = await eventually(
      async () => (await subs.invoices(id))[1],
      (i) => i !== undefined,
      15_000,
    );
    await eventually(
      () => subs.captures(id),
      (c) => c.some((e) => e.metadata.invoiceId === renewal!.id),
      15_000,
    );
    await sleep(3 * DAY_MS);
    // Kept where it was: the invoice open with no attempt recorded, the subscription active, the
    // workflow running; no other attempt of that invoice was made.
    const waiting = (await subs.invoices(id)).find((i) => i.id === renewal!.id)!;
    expect(waiting).toMatchObject({ status: 'open', attempts: 0, declineType: null });
    expect((await subs.get(id)).body).toMatchObject({ status: 'active' });
    expect(await workflowStatus(id)).toBe('RUNNING');
    expect((await subs.captures(id)).filter((c) => c.metadata.invoiceId === renewal!.id)).toHaveLength(1);

    // The fault is gone: the same attempt is asked about again and pays the invoice, once.
    await stack.sandbox('/_admin/faults', {});
    const paid = await eventually(
      async () => (await subs.invoices(id)).find((i) => i.id === renewal!.id),
      (i) => i?.status === 'paid',
      40_000,
    );
    expect(paid!.attempts).toBe(1);
    // Renewals go on as usual.
    await subs.untilPaid(id, 4, 20_000);
    expect((await subs.get(id)).body.status).toBe('active');
    expect(await workflowStatus(id)).toBe('RUNNING');

    const cancelled = await subs.cancel(id);
    expect(cancelled.body.status).toBe('cancelled');
    const captures = await subs.captures(id);
    expect(captures.filter((c) => c.metadata.invoiceId === renewal!.id)).toHaveLength(1);
    for (const count of succeededByInvoice(captures).values()) expect(count).toBe(1);
  }, 120_000);

  it('a first charge answered with an unknown status: the create answers, and the subscription activates later', async () => {
    await stack.sandbox('/_admin/faults', { payments: 'unknown_status' });
    const created = await subs.create({ cardToken: 'tok_success', billingIntervalDays: 30 });
    // Never a 500: the outcome follows.
    expect(created.status).not.toBe(500);
    const id = (created.body.id ?? (created.body.details as { subscription?: { id: string } })?.subscription?.id) as
      string | undefined;
    expect(created.body).toMatchObject({
      code: 'provider_invalid_response',
      details: { subscription: { status: 'created' } },
    });
    expect(id).toEqual(expect.any(String));
    await sleep(2 * DAY_MS);
    expect((await subs.get(id!)).body.status).toBe('created');
    expect(await workflowStatus(id!)).toBe('RUNNING');
    await stack.sandbox('/_admin/faults', {});
    const active = await subs.until(id!, (s) => s.status === 'active', 40_000);
    expect(active.latestInvoice).toMatchObject({ status: 'paid', attempts: 1 });
    expect((await subs.captures(id!)).map((c) => c.status)).toEqual(['succeeded']);
    await subs.cancel(id!);
  }, 90_000);

  it('DELETE while the charge is undecided takes effect; a capture found then is recorded, not lost', async () => {
    const created = await subs.create({ cardToken: 'tok_success', billingIntervalDays: 2, retryScheduleDays: [1] });
    const id = created.body.id as string;
    await stack.sandbox('/_admin/faults', { payments: 'unknown_status' });
    await eventually(
      async () => (await subs.captures(id)).length,
      (n) => n >= 2,
      15_000,
    );
    await sleep(DAY_MS);
    // The cancellation asks the provider about the undecided attempt: it can tell once the fault is gone.
    const cancelling = subs.cancel(id);
    await sleep(2 * DAY_MS);
    await stack.sandbox('/_admin/faults', {});
    expect((await cancelling).status).not.toBe(500);
    await subs.until(id, (s) => s.status === 'cancelled', 30_000);
    const invoices = await subs.invoices(id);
    expect(invoices.map((i) => i.status)).toEqual(['paid', 'paid']);
    expect(await workflowStatus(id)).toBe('COMPLETED');
    // Answered (the capture found by the cancellation): no Stuck mark left on the run.
    expect(await stuckOf(id)).toBeUndefined();
  }, 90_000);

  it('the card authorization while the merchant’s provider configuration is gone: retried, then it goes on', async () => {
    const created = await subs.create({ billingIntervalDays: 30 });
    expect(created.body).toMatchObject({ status: 'pending', redirectUrl: expect.any(String) });
    const id = created.body.id as string;
    const processor = created.body.processor as string;
    const setProcessor = (name: string) =>
      stack.orm.em.getConnection().execute(`update subscriptions set processor = ? where id = ?`, [name, id]);
    // The configuration is removed, then the customer authorizes the card on the page: checking
    // it (the webhook) and, later, the expiry's close cannot reach any provider.
    await setProcessor('retired');
    expect((await fetch(`${created.body.redirectUrl as string}/pay`, { method: 'POST' })).status).toBeLessThan(400);
    // Unanswered past the stuck time: the run is marked with the failure's type.
    expect(
      await eventually(
        () => stuckOf(id),
        (v) => v !== undefined,
        20_000,
        250,
      ),
    ).toBe('provider_not_configured');
    await sleep(2 * DAY_MS);
    expect((await subs.get(id)).body.status).toBe('pending');
    expect(await workflowStatus(id)).toBe('RUNNING');
    // Configured again: the authorization is found and billing starts.
    await setProcessor(processor);
    const active = await subs.until(id, (s) => s.status === 'active', 40_000);
    expect(active.latestInvoice).toMatchObject({ status: 'paid', attempts: 1 });
    expect(
      await eventually(
        () => stuckOf(id),
        (v) => v === undefined,
        10_000,
        100,
      ),
    ).toBeUndefined();
    await subs.cancel(id);
  }, 90_000);
});
