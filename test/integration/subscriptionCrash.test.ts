import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { tsToMs } from '@temporalio/common/lib/time';
import { temporal } from '@temporalio/proto';
import { Email } from '../../src/db/entities';
import { subscriptionWorkflowId } from '../../workflows/subscriptionApi';
import { eventually } from '../helpers/http';
import { createTestMerchant, startPaymentStack, type PaymentStack, type TestMerchant } from '../helpers/stack';
import { sleep, subscriptionClient, succeededByInvoice } from '../helpers/subscriptions';
import { startWorkerProcess } from '../helpers/workerProcess';

const { EventType, TimeoutType } = temporal.api.enums.v1;

/**
 * Money invariants 1 and 5 for subscriptions: the worker process is killed (SIGKILL) between
 * charges and in the middle of one; once a worker is back, every period is billed, none twice.
 */
describe('subscriptions: worker killed', () => {
  const DAY_MS = 1000;
  let stack: PaymentStack;
  let merchant: TestMerchant;
  let subs: ReturnType<typeof subscriptionClient>;
  let child: ChildProcess | undefined;
  let dataDir: string;

  beforeAll(async () => {
    stack = await startPaymentStack('subcrash', { billingDaySeconds: DAY_MS / 1000, paymentWaitMs: 20_000 });
    await stack.worker.stop(); // this file's workflows run on a worker process it can kill
    merchant = await createTestMerchant(stack.orm, 'Crash merchant');
    subs = subscriptionClient(stack, merchant);
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'subcrash-worker-'));
  });
  afterAll(async () => {
    child?.kill('SIGKILL');
    await stack.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  /** Every period from 0 on has one invoice, contiguous; each paid one captured exactly once. */
  async function expectEveryPeriodBilledOnce(id: string) {
    const invoices = await subs.invoices(id);
    invoices.forEach((inv, i) => {
      expect(inv.periodIndex).toBe(i);
      if (i > 0) expect(inv.periodStart.getTime()).toBe(invoices[i - 1]!.periodEnd.getTime());
    });
    const paid = invoices.filter((i) => i.status === 'paid');
    const byInvoice = succeededByInvoice(await subs.captures(id));
    expect([...byInvoice.keys()].sort()).toEqual(paid.map((i) => i.id).sort());
    expect([...byInvoice.values()].every((n) => n === 1)).toBe(true);
    return invoices;
  }

  /**
   * A new subscription whose renewal (its second capture) the sandbox has made but not yet
   * answered (it captures at once, then holds its answer) when the worker is killed. The
   * sandbox answers at once again afterwards; no worker runs until the caller starts one.
   */
  async function killedMidRenewalCharge(): Promise<{ id: string; renewalId: string }> {
    const created = await subs.create({ cardToken: 'tok_success', billingIntervalDays: 2 });
    const id = created.body.id as string;
    await stack.sandbox('/_admin/faults', { latencyMs: 3000 });
    const captured = await eventually(
      () => subs.captures(id),
      (l) => l.length >= 2,
      10_000,
      20,
    );
    child!.kill('SIGKILL');
    const renewalId = captured[1]!.metadata.invoiceId!;
    expect((await subs.invoices(id)).find((i) => i.id === renewalId)!.status).toBe('open');
    await stack.sandbox('/_admin/faults', {});
    return { id, renewalId };
  }

  it('bills the periods that came due while no worker ran, in order, once each', async () => {
    child = startWorkerProcess(stack, dataDir);
    const created = await subs.create({ cardToken: 'tok_success' });
    expect(created.body.status).toBe('active');
    const id = created.body.id as string;
    await subs.untilPaid(id, 2);
    child.kill('SIGKILL');
    const before = (await subs.invoices(id)).length;
    await sleep(3 * DAY_MS); // three periods come due with no worker
    expect((await subs.invoices(id)).length).toBe(before);

    child = startWorkerProcess(stack, dataDir);
    await subs.untilPaid(id, before + 4, 60_000);
    await subs.cancel(id);
    const invoices = await expectEveryPeriodBilledOnce(id);
    expect(invoices.length).toBeGreaterThanOrEqual(before + 4);
  });

  it('charges an invoice once when the worker dies during its provider call', async () => {
    const { id, renewalId } = await killedMidRenewalCharge();
    child = startWorkerProcess(stack, dataDir);
    await eventually(
      () => subs.invoices(id),
      (l) => l.find((i) => i.id === renewalId)?.status === 'paid',
      60_000,
      250,
    );
    await subs.cancel(id);
    await expectEveryPeriodBilledOnce(id);
    expect((await subs.captures(id)).filter((c) => c.metadata.invoiceId === renewalId)).toHaveLength(1);
  });

  it('a cancellation sent while the worker lies dead mid-renewal-charge: the capture is recorded paid, never voided; nothing after', async () => {
    // The renewal's call runs in the task its timer woke (renewal-charge-local-v1): the task
    // retried after the kill also carries the cancellation, whichever path it takes.
    const { id, renewalId } = await killedMidRenewalCharge();
    const answer = subs.cancel(id);
    await sleep(1000); // the cancellation reaches the server before a worker is back
    child = startWorkerProcess(stack, dataDir);
    expect([200, 503]).toContain((await answer).status);
    const cancelled = await subs.until(id, (s) => s.status === 'cancelled', 60_000);
    // The period the capture paid stays valid.
    const invoices = await expectEveryPeriodBilledOnce(id);
    const renewal = invoices.find((i) => i.id === renewalId)!;
    expect(renewal.status).toBe('paid');
    expect(cancelled.currentPeriodEnd).toBe(renewal.periodEnd.toISOString());
    expect(invoices.filter((i) => i.periodIndex > renewal.periodIndex && i.status === 'paid')).toHaveLength(0);
    expect((await subs.captures(id)).filter((c) => c.metadata.invoiceId === renewalId)).toHaveLength(1);
    // One email for the renewal (its receipt) in the outbox, and one for the cancellation.
    const emails = await stack.orm.em.fork().find(Email, { dedupeKey: { $like: `${id}:email:%` } });
    expect(emails.filter((e) => e.dedupeKey.includes(renewalId)).map((e) => e.dedupeKey)).toEqual([
      `${id}:email:receipt:${renewalId}`,
    ]);
    expect(emails.filter((e) => e.dedupeKey.startsWith(`${id}:email:cancelled`))).toHaveLength(1);
  }, 120_000);

  it('a DELETE sent while the worker is dead answers 200 or 503 with the subscription, never 500; the cancel happens once', async () => {
    child?.kill('SIGKILL');
    child = startWorkerProcess(stack, dataDir);
    const created = await subs.create({ cardToken: 'tok_success', billingIntervalDays: 30 });
    expect(created.body.status).toBe('active');
    const id = created.body.id as string;
    // The workflow's next task goes to the dead worker's sticky queue: the Update waits, times out
    // or is aborted by the server, and is sent again (same update id) once a worker is back.
    child!.kill('SIGKILL');
    const answers = await Promise.all([
      subs.cancel(id),
      (async () => {
        await sleep(1000);
        child = startWorkerProcess(stack, dataDir);
        return subs.cancel(id);
      })(),
    ]);
    for (const answer of answers) {
      expect([200, 503]).toContain(answer.status);
      if (answer.status === 503) {
        expect(answer.body).toMatchObject({ code: 'service_unavailable', details: { subscription: { id } } });
        expect(answer.headers.get('retry-after')).toMatch(/^\d+$/);
      } else {
        expect(answer.body.status).toBe('cancelled');
      }
    }
    const cancelled = await subs.until(id, (s) => s.status === 'cancelled', 60_000);
    expect(cancelled.cancellationReason).toBe('merchant_request');
    // One cancellation: one email in the outbox (this worker process mails elsewhere), one event time.
    const emails = await stack.orm.em.fork().find(Email, { dedupeKey: { $like: `${id}:email:cancelled%` } });
    expect(emails).toHaveLength(1);
    expect(cancelled.cancelledAt).toBe((await subs.get(id)).body.cancelledAt);
  }, 120_000);

  it("a killed worker's renewal waits on its sticky queue for WORKER_SUBSCRIPTION_STICKY_TIMEOUT_SECONDS, then any worker takes it", async () => {
    child?.kill('SIGKILL');
    child = startWorkerProcess(stack, dataDir, { WORKER_SUBSCRIPTION_STICKY_TIMEOUT_SECONDS: '3' });
    const created = await subs.create({ cardToken: 'tok_success', billingIntervalDays: 2 });
    const id = created.body.id as string;
    await subs.untilPaid(id, 2);
    await sleep(300); // the renewal's workflow task completes; the next one is its timer's, 2 s on
    child.kill('SIGKILL');
    await sleep(3 * 2 * DAY_MS);
    child = startWorkerProcess(stack, dataDir);
    await subs.untilPaid(id, 4, 60_000);
    await subs.cancel(id);
    await expectEveryPeriodBilledOnce(id);

    // The server's record: the task queued on the dead worker's sticky queue timed out unstarted
    // after 3 s (not the SDK's 10 s) and went to the normal queue.
    const events = (await stack.api.client.workflow.getHandle(subscriptionWorkflowId(id)).fetchHistory()).events ?? [];
    const timeOfEvent = new Map(events.map((e) => [String(e.eventId), tsToMs(e.eventTime)]));
    const waits = events
      .filter(
        (e) =>
          e.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT &&
          e.workflowTaskTimedOutEventAttributes?.timeoutType === TimeoutType.TIMEOUT_TYPE_SCHEDULE_TO_START,
      )
      .map((e) => {
        const scheduledAt = timeOfEvent.get(String(e.workflowTaskTimedOutEventAttributes!.scheduledEventId));
        return tsToMs(e.eventTime) - scheduledAt!;
      });
    expect(waits.length).toBeGreaterThanOrEqual(1);
    for (const wait of waits) {
      expect(wait).toBeGreaterThanOrEqual(2_900);
      expect(wait).toBeLessThan(6_000);
    }
  }, 120_000);
});
