import { subscriptionWorkflowId } from '../../workflows/subscriptionApi';
import { runCli } from '../helpers/cli';
import { eventually } from '../helpers/http';
import {
  createTestMerchant,
  startPaymentStack,
  TEST_PAYLOAD_KEYS,
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

  /** The subscription's runs, oldest first, as visibility lists them. */
  const runsOf = async (id: string) => {
    const runs: Array<{ runId: string; status: string; startTime: Date; closeTime?: Date }> = [];
    for await (const wf of stack.api.client.workflow.list({ query: `WorkflowId = "${subscriptionWorkflowId(id)}"` })) {
      runs.push({ runId: wf.runId, status: wf.status.name, startTime: wf.startTime, closeTime: wf.closeTime });
    }
    return runs.sort((a, b) => a.startTime.getTime() - b.startTime.getTime());
  };

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
      () => runsOf(id),
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
      () => runsOf(id),
      (list) => list.length === 1,
      10_000,
      200,
    );

    const cli = await runCli(['workflows:hand-over', '--older-than-days', '0'], {
      TEMPORAL_ADDRESS: testStack().temporalAddress,
      TEMPORAL_TASK_QUEUE: stack.taskQueue,
      TEMPORAL_PAYLOAD_KEYS: TEST_PAYLOAD_KEYS,
    });
    expect(cli.code).toBe(0);
    expect(cli.json.handOver.signalled).toBeGreaterThanOrEqual(1);
    expect(cli.json.handOver.found).toBe(cli.json.handOver.signalled + cli.json.handOver.gone);

    const runs = await eventually(
      () => runsOf(id),
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
