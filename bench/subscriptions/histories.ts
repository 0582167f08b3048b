import { type Client } from '@temporalio/client';
import { temporal as proto } from '@temporalio/proto';
import { subscriptionWorkflowId } from '../../workflows/subscriptionApi';
import { announce, printContinueAsNew, printHistory } from '../report';
import { settledLedger, sleep } from '../stack';
import { postJson } from './api';
import { AMOUNT, BILLING_DAY_S, CAN_RUNS, CAN_TIMEOUT_S, HISTORY_SAMPLE } from './knobs';
import { percentile, round } from './measure';
import type { SubsStack } from './setup';

/** The subscription workflows' histories: their length per run, and a run that continues as new. */

/** HISTORY_SAMPLE storm subscriptions, spread over the created ones. */
export function historySample(created: Array<{ id: string }>): string[] {
  const n = Math.min(HISTORY_SAMPLE, created.length);
  return Array.from({ length: n }, (_, i) => created[Math.floor((i * created.length) / n)]!.id);
}

/** The history length and run of each sampled storm workflow. */
export function describeSample(client: Client, ids: string[]) {
  return Promise.all(
    ids.map(async (id) => {
      const d = await client.workflow.getHandle(subscriptionWorkflowId(id)).describe();
      return { id, historyLength: d.historyLength, runId: d.runId, status: d.status.name };
    }),
  );
}

export type SampleDescription = Awaited<ReturnType<typeof describeSample>>;

/**
 * 5. History: events per run of the sampled storm workflows before the storm and after their
 * renewal, one history's events by type, and where the renewal's workflow task spent its time.
 */
export async function historyAfterStorm(stack: SubsStack, ids: string[], before: SampleDescription) {
  const { client } = stack;
  const after = await describeSample(client, ids);
  const lengths = after.map((h) => h.historyLength);
  const result = {
    sample: after.length,
    beforeStorm: {
      max: Math.max(...before.map((h) => h.historyLength)),
      mean: round(before.reduce((a, h) => a + h.historyLength, 0) / Math.max(1, before.length)),
    },
    afterStorm: {
      max: Math.max(...lengths),
      mean: round(lengths.reduce((a, b) => a + b, 0) / Math.max(1, lengths.length)),
    },
    runsChanged: after.filter((h, i) => h.runId !== before[i]?.runId).length,
    eventTypes: {} as Record<string, number>,
    sampleWorkflowId: ids[0] ? subscriptionWorkflowId(ids[0]) : null,
  };
  if (ids[0]) {
    const history = await client.workflow.getHandle(subscriptionWorkflowId(ids[0])).fetchHistory();
    for (const e of history.events ?? []) {
      const name = (proto.api.enums.v1.EventType[e.eventType ?? 0] ?? String(e.eventType)).replace(/^EVENT_TYPE_/, '');
      result.eventTypes[name] = (result.eventTypes[name] ?? 0) + 1;
    }
  }
  const renewalTask = await renewalTaskTimings(client, ids);
  printHistory(result, renewalTask);
  return { ...result, renewalTask, idle: before, after };
}

/**
 * Where a renewal's time goes, from the sampled histories: from its period's timer firing to the
 * workflow task that handles it starting on the worker (the server's dispatch plus the worker's
 * backlog), then from that task's start to its completion (the worker's work on it).
 */
async function renewalTaskTimings(client: Client, ids: string[]) {
  const E = proto.api.enums.v1.EventType;
  const ms = (e: proto.api.history.v1.IHistoryEvent | undefined) =>
    e?.eventTime ? Number(e.eventTime.seconds ?? 0) * 1000 + Math.floor((e.eventTime.nanos ?? 0) / 1e6) : NaN;
  const waits: number[] = [];
  const runs: number[] = [];
  let timedOut = 0;
  for (const id of ids) {
    const events = (await client.workflow.getHandle(subscriptionWorkflowId(id)).fetchHistory()).events ?? [];
    const fired = events.findLastIndex((e) => e.eventType === E.EVENT_TYPE_TIMER_FIRED);
    if (fired < 0) continue;
    const after = events.slice(fired);
    timedOut += after.filter((e) => e.eventType === E.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT).length;
    const started = after.find((e) => e.eventType === E.EVENT_TYPE_WORKFLOW_TASK_STARTED);
    const completed = after.find((e) => e.eventType === E.EVENT_TYPE_WORKFLOW_TASK_COMPLETED);
    if (!started || !completed) continue;
    waits.push(ms(started) - ms(events[fired]));
    runs.push(ms(completed) - ms(started));
  }
  waits.sort((a, b) => a - b);
  runs.sort((a, b) => a - b);
  return {
    sampled: waits.length,
    waitP50: percentile(waits, 50),
    waitMax: percentile(waits, 100),
    runP50: percentile(runs, 50),
    runMax: percentile(runs, 100),
    /** Workflow tasks of the renewal that timed out before a worker took them (left on a sticky queue). */
    timedOut,
  };
}

/**
 * 5b. Continue-as-new: one subscription with a 1-billing-day interval renewing every
 * BILLING_DAY_SECONDS until its workflow has continued as new CAN_RUNS times (each run < 1,000
 * events), every invoice captured once. Undefined with BENCH_SUBS_CAN_RUNS=0.
 */
export async function continueAsNewDemo(stack: SubsStack) {
  if (CAN_RUNS <= 0) return undefined;
  const { apiUrl, headers, client, db, sandboxUrl, runTag, sampler } = stack;
  sampler.phase = 'continue-as-new demo';
  const externalId = `bcan-${runTag}`;
  const res = await postJson(`${apiUrl}/subscriptions`, headers, {
    amount: AMOUNT,
    currency: 'USD',
    billingIntervalDays: 1,
    externalId,
    customer: { email: 'customer@example.com' },
    cardToken: 'tok_success',
  });
  const id = res.json?.id;
  if (res.status !== 200 || typeof id !== 'string') throw new Error(`continue-as-new demo: ${res.status} ${res.text}`);
  const workflowId = subscriptionWorkflowId(id);
  announce(
    `Continue-as-new: ${workflowId} renews every ${BILLING_DAY_S} s; waiting for ${CAN_RUNS} continue-as-new ` +
      `(at most ${CAN_TIMEOUT_S} s)...`,
  );
  const t0 = Date.now();
  const listRuns = async () => {
    const runs: Array<{ runId: string; status: string; historyLength: number; start: string }> = [];
    for await (const wf of client.workflow.list({ query: `WorkflowId="${workflowId}"` })) {
      runs.push({
        runId: wf.runId,
        status: wf.status.name,
        historyLength: wf.historyLength,
        start: wf.startTime.toISOString(),
      });
    }
    return runs.sort((a, b) => a.start.localeCompare(b.start));
  };
  let runs = await listRuns();
  while (Date.now() - t0 < CAN_TIMEOUT_S * 1000) {
    if (runs.filter((r) => r.status === 'CONTINUED_AS_NEW').length >= CAN_RUNS) break;
    await sleep(2000);
    runs = await listRuns();
  }
  // Closed runs' lengths are final; the running one's is read live.
  const current = await client.workflow.getHandle(workflowId).describe();
  for (const r of runs) if (r.runId === current.runId) r.historyLength = current.historyLength;
  const { rows: invoices } = await db.query<{ paid: string }>(
    `select count(*) filter (where i.status = 'paid')::text as paid
       from invoices i join subscriptions s on s.id = i.subscription_id where s.external_id = $1`,
    [externalId],
  );
  const captures = (await settledLedger(sandboxUrl, 3000)).filter(
    (e) => e.type === 'capture' && e.status === 'succeeded' && e.metadata?.subscriptionId === id,
  );
  const perInvoice = new Map<string, number>();
  for (const c of captures) {
    const inv = c.metadata?.invoiceId ?? '(none)';
    perInvoice.set(inv, (perInvoice.get(inv) ?? 0) + 1);
  }
  const continued = runs.filter((r) => r.status === 'CONTINUED_AS_NEW');
  const result = {
    workflowId,
    seconds: round((Date.now() - t0) / 1000, 1),
    runs,
    continuedAsNew: continued.length,
    maxEventsPerRun: Math.max(...runs.map((r) => r.historyLength)),
    paidInvoices: Number(invoices[0]?.paid ?? 0),
    invoicesCapturedTwice: [...perInvoice.values()].filter((n) => n > 1).length,
    ok:
      continued.length >= CAN_RUNS &&
      runs.every((r) => r.historyLength < 1000) &&
      [...perInvoice.values()].every((n) => n === 1),
  };
  printContinueAsNew(result);
  return result;
}
