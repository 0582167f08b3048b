import path from 'node:path';
import { buildWorkflowBundle } from '../../src/workflowBundle';
import { subscriptionWorkflowId } from '../../workflows/subscriptionApi';
import { runCli } from '../helpers/cli';
import { eventually } from '../helpers/http';
import {
  createTestMerchant,
  startPaymentStack,
  startTestWorker,
  type TestWorker,
  type PaymentStack,
  type TestMerchant,
} from '../helpers/stack';
import { subscriptionClient, succeededByInvoice } from '../helpers/subscriptions';
import { testStack } from '../setup/stackInfo';

/**
 * Runs that stay young (issue 44 item 1, decision 0084): a subscription run hands over
 * (continue-as-new) once it is 30 billing days old, whatever its interval, and an operator's
 * `workflows:hand-over` makes a run hand over at once. One billing day is one second here.
 */
/** The subscription's runs, oldest first, as visibility lists them. */
async function runsOf(stack: PaymentStack, id: string) {
  const runs: Array<{ runId: string; status: string; startTime: Date; closeTime?: Date }> = [];
  for await (const wf of stack.api.client.workflow.list({ query: `WorkflowId = "${subscriptionWorkflowId(id)}"` })) {
    runs.push({ runId: wf.runId, status: wf.status.name, startTime: wf.startTime, closeTime: wf.closeTime });
  }
  return runs.sort((a, b) => a.startTime.getTime() - b.startTime.getTime());
}

/** `workflows:hand-over` against one stack's task queue. */
const handOverCli = (stack: PaymentStack) =>
  runCli(['workflows:hand-over', '--older-than-days', '0'], {
    TEMPORAL_ADDRESS: testStack().temporalAddress,
    TEMPORAL_TASK_QUEUE: stack.taskQueue,
  });

describe('subscription run age (1 s billing day)', () => {
  const DAY_MS = 1000;
  let stack: PaymentStack;
  let merchant: TestMerchant;
  let subs: ReturnType<typeof subscriptionClient>;

  beforeAll(async () => {
    stack = await startPaymentStack('runage', { billingDaySeconds: DAY_MS / 1000 });
    merchant = await createTestMerchant(stack.orm, 'Run age merchant');
    subs = subscriptionClient(stack, merchant);
  });
  afterAll(() => stack.close());

  it('a run with a 40-day interval hands over after 30 billing days without a renewal, then renews on its date once', async () => {
    const created = await subs.create({
      amount: 12,
      currency: 'USD',
      billingIntervalDays: 40,
      cardToken: 'tok_success',
    });
    expect(created.status).toBe(200);
    const id = created.body.id as string;
    const renewalAt = Date.parse(created.body.currentPeriodEnd);

    // The first run continues as new at the age bound (30 days), long before its renewal (40).
    const runs = await eventually(
      () => runsOf(stack, id),
      (list) => list.some((r) => r.status === 'CONTINUED_AS_NEW'),
      38 * DAY_MS,
      500,
    );
    const first = runs.find((r) => r.status === 'CONTINUED_AS_NEW')!;
    expect(first.closeTime!.getTime() - first.startTime.getTime()).toBeGreaterThanOrEqual(30 * DAY_MS - 500);
    expect(Date.now()).toBeLessThan(renewalAt);
    // Nothing was billed for it: one invoice, one capture.
    expect((await subs.invoices(id)).map((i) => i.status)).toEqual(['paid']);
    expect(await subs.captures(id)).toHaveLength(1);

    // The next run renews on the date the first run would have: one charge, the periods adjacent.
    await subs.untilPaid(id, 2, 20 * DAY_MS);
    const invoices = await subs.invoices(id);
    expect(invoices[1]!.periodStart.getTime()).toBe(invoices[0]!.periodEnd.getTime());
    expect(invoices[1]!.periodStart.getTime()).toBe(renewalAt);
    const byInvoice = succeededByInvoice(await subs.captures(id));
    expect(byInvoice.size).toBe(2);
    expect([...byInvoice.values()].every((n) => n === 1)).toBe(true);
    expect((await subs.cancel(id)).status).toBe(200);
  });

  it('workflows:hand-over signals running subscription runs; each continues as new at once and bills on', async () => {
    const created = await subs.create({
      amount: 5,
      currency: 'USD',
      billingIntervalDays: 3650,
      cardToken: 'tok_success',
    });
    expect(created.status).toBe(200);
    const id = created.body.id as string;
    // Listed by visibility once running.
    await eventually(
      () => runsOf(stack, id),
      (list) => list.length === 1,
      10_000,
      200,
    );

    const cli = await handOverCli(stack);
    expect(cli.code).toBe(0);
    expect(cli.json.handOver.signalled).toBeGreaterThanOrEqual(1);
    expect(cli.json.handOver.found).toBe(cli.json.handOver.signalled + cli.json.handOver.gone);

    const runs = await eventually(
      () => runsOf(stack, id),
      (list) => list.length >= 2 && list[0]!.status === 'CONTINUED_AS_NEW',
      10_000,
      200,
    );
    // Handed over on the signal, well before the age bound.
    expect(runs[0]!.closeTime!.getTime() - runs[0]!.startTime.getTime()).toBeLessThan(30 * DAY_MS);
    expect(runs[runs.length - 1]!.status).toBe('RUNNING');
    expect((await subs.get(id)).body).toMatchObject({ status: 'active' });
    expect(await subs.captures(id)).toHaveLength(1);

    // A bad argument is a usage error.
    const bad = await runCli(['workflows:hand-over', '--older-than-days', 'x'], {
      TEMPORAL_ADDRESS: testStack().temporalAddress,
    });
    expect(bad.code).toBe(2);
    expect(bad.json.error.code).toBe('usage');
    expect((await subs.cancel(id)).status).toBe(200);
  });
});

/**
 * A legacy run (started before subscription-steps-v2: the fixture bundle runs that code) going on
 * under the shipped worker: the hand-over signal continues it as new into the current code at
 * once (legacy-hand-over-v1), and the next run renews on the legacy run's date.
 */
describe('legacy subscription run hand-over', () => {
  const DAY_MS = 1000;
  let stack: PaymentStack;
  let shipped: TestWorker | undefined;

  beforeAll(async () => {
    const fixture = await buildWorkflowBundle({
      workflowsPath: path.resolve(__dirname, '../fixtures/legacy-subscription'),
      outPath: path.join(testStack().dir, 'legacy-subscription-runage.js'),
    });
    stack = await startPaymentStack(
      'runagelegacy',
      { billingDaySeconds: DAY_MS / 1000 },
      undefined,
      {},
      {
        workflowBundlePath: fixture.codePath,
      },
    );
  });
  afterAll(async () => {
    await shipped?.stop();
    await stack.close();
  });

  it('hands a legacy run over into the current code on workflows:hand-over; it renews on its date once', async () => {
    const subs = subscriptionClient(stack, await createTestMerchant(stack.orm, 'Legacy hand-over merchant'));
    const created = await subs.create({
      amount: 7,
      currency: 'USD',
      billingIntervalDays: 25,
      cardToken: 'tok_success',
    });
    const id = (created.body.id as string | undefined) ?? (created.body.details.subscription.id as string);
    await subs.untilPaid(id, 1);
    const renewalAt = (await subs.invoices(id))[0]!.periodEnd.getTime();

    // The shipped code takes the legacy run over (it replays there: no steps-v2 marker).
    await stack.worker.stop();
    shipped = await startTestWorker(stack.orm, {
      taskQueue: stack.taskQueue,
      providers: stack.providers,
      publicBaseUrl: stack.api.baseUrl,
      billingDaySeconds: DAY_MS / 1000,
    });
    const cli = await handOverCli(stack);
    expect(cli.code).toBe(0);
    expect(cli.json.handOver.signalled).toBe(1);

    const runs = await eventually(
      () => runsOf(stack, id),
      (list) => list.length >= 2 && list[0]!.status === 'CONTINUED_AS_NEW',
      10_000,
      200,
    );
    expect(Date.now()).toBeLessThan(renewalAt);
    // The next run is the current code: it records the subscription-steps-v2 marker first (on
    // its first workflow task's completion, which may follow the listing under load).
    const hasPatchMarker = async () => {
      const history = await stack.api.client.workflow
        .getHandle(subscriptionWorkflowId(id), runs[1]!.runId)
        .fetchHistory();
      return history.events!.some((e) => e.markerRecordedEventAttributes?.markerName === 'core_patch');
    };
    expect(await eventually(hasPatchMarker, (found) => found, 10_000, 200)).toBe(true);
    expect(await subs.captures(id)).toHaveLength(1);

    await subs.untilPaid(id, 2, 30 * DAY_MS);
    const invoices = await subs.invoices(id);
    expect(invoices[1]!.periodStart.getTime()).toBe(renewalAt);
    const byInvoice = succeededByInvoice(await subs.captures(id));
    expect(byInvoice.size).toBe(2);
    expect([...byInvoice.values()].every((n) => n === 1)).toBe(true);
    expect((await subs.cancel(id)).status).toBe(200);
  });
});
