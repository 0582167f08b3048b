import fs from 'node:fs';
import path from 'node:path';
import type { WorkflowHistory, RefundHistory } from './run/history';
import type { ScenarioResult } from './run/measure';
import type { PostLedgerCheck } from './run/post';
import type { RefundCheck, RefundResult } from './run/refunds';
import type { TimerStormFloor } from './floor/scenarios';
import type { continueAsNewDemo } from './subscriptions/histories';
import type { RssPoint } from './subscriptions/measure';
import type { createStorm, moneyCheck, probes, renewalStorm } from './subscriptions/scenarios';
import type { SubsStack } from './subscriptions/setup';
import { ROOT, formatCpu, say } from './stack';
import { formatTargets, type TargetLine } from './targets';

/**
 * What the benches print, apart from what they measure: each slice as it ends, the checks, the
 * results table, the workflow histories, the summaries and the `Targets` block (its wording is
 * bench/targets.ts's formatTargets), and the JSON written to bench/.out/.
 */

/** A new step of the run, after a blank line. */
export function announce(what: string): void {
  say(`\n${what}`);
}

/** The `Targets` block (bench/targets.ts), after a blank line. */
export function printTargets(lines: TargetLine[]): void {
  say('');
  for (const line of formatTargets(lines)) say(line);
}

/** Writes a run's results as JSON, and says where. */
export function writeResults(file: string, output: unknown): void {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, `${JSON.stringify(output, null, 2)}\n`);
  say(`\nWrote ${path.relative(ROOT, file)}.`);
}

// ---------------------------------------------------------------------------------------------
// npm run bench

/** An autocannon slice, as it ends. */
export function printSlice(r: ScenarioResult): void {
  say(
    `  ${r.requestsPerSec.toFixed(0)} req/s, p50 ${r.latencyMs.p50} ms, p99 ${r.latencyMs.p99} ms, ` +
      `2xx ${r.status2xx}, non-2xx ${r.non2xx}, errors ${r.errors}`,
  );
  say(`  CPU (cores): ${formatCpu(r.cpuCores)}; stack CPU per request ${r.stackCpuMsPerRequest} ms`);
}

/** A slice of refund loops, as it ends. */
export function printRefundSlice(r: RefundResult): void {
  say(
    `  ${r.requestsTotal} refunds in ${r.durationS} s: ${r.requestsPerSec.toFixed(1)} refunds/s, ` +
      `p50 ${r.latencyMs.p50} ms, p90 ${r.latencyMs.p90} ms, p99 ${r.latencyMs.p99} ms, ` +
      `max ${r.latencyMs.max} ms; succeeded ${r.requestsTotal - r.errors}, errors ${r.errors} ` +
      `(warm-up: ${r.warmupRefunds} refunds, ${r.warmupErrors} errors)`,
  );
  for (const [kind, n] of Object.entries(r.errorKinds)) say(`    error x${n}: ${kind}`);
  say(`  CPU (cores): ${formatCpu(r.cpuCores)}; stack CPU per request ${r.stackCpuMsPerRequest} ms`);
}

export function printLedgerCheck(c: PostLedgerCheck): void {
  say(
    `  Ledger check: ${c.answered2xx} 2xx answers, ${c.capturesDuringRun} captures during the run; ` +
      `${c.answeredWithExactlyOneSucceededCapture} answers have exactly one succeeded capture, ` +
      `${c.answeredWithoutExactlyOneCapture} do not; ${c.paymentsCapturedTwiceInWholeLedger} payments captured ` +
      `twice (whole ledger); ${c.capturesWithoutA2xxAnswer} captures without a 2xx answer (requests in flight ` +
      `when autocannon stopped, or non-2xx). ${c.ok ? 'OK' : 'FAILED'}`,
  );
}

export function printRefundCheck(c: RefundCheck, mismatches: unknown[], amount: number): void {
  say(
    `  Refund check: ${c.answered2xx} 2xx answers (warm-up included), ${c.answered2xxWithExactlyOneSucceededEntry} ` +
      `with exactly one succeeded ledger entry (reference = externalId, metadata.refundId = id), ` +
      `${c.answered2xxWithoutExactlyOneSucceededEntry} without; ${c.duplicatedReferencesInWholeLedger} duplicated ` +
      `references, ${c.duplicatedRefundIdsInWholeLedger} duplicated refund ids (whole ledger); ` +
      `${c.refundEntriesOnThesePayments} refund entries on these payments, ${c.entriesWithoutA2xxAnswer} without a ` +
      `2xx answer; amountRefunded = refunds x ${amount} on ${c.payments.length - mismatches.length}/` +
      `${c.payments.length} payments. ${c.ok ? 'OK' : 'FAILED'}`,
  );
  for (const p of mismatches) say(`    mismatch: ${JSON.stringify(p)}`);
  for (const w of c.wrongExamples) say(`    wrong: ${JSON.stringify(w)}`);
}

/** What one payment and one refund cost in Temporal round trips. */
export function printHistories(h: { payment: WorkflowHistory; refund?: RefundHistory }): void {
  const print = (what: string, history: WorkflowHistory) => {
    if ('error' in history) {
      say(`\n${what} workflow history: unavailable (${history.error})`);
      return;
    }
    say(
      `\n${what} workflow history (${history.workflowId}): ${history.events} events, ${history.workflowTasks} ` +
        `workflow tasks, ${history.activities} activities (${history.activityTypes.join(', ')}); update completed ` +
        `at +${history.updateCompletedAtMs} ms, workflow closed at +${history.totalMs} ms (server clock)`,
    );
    say(`  ${history.timeline.join(', ')}`);
  };
  print('Payment', h.payment);
  if (!h.refund) return;
  print('Refund', h.refund);
  if (!('error' in h.refund)) say(`  (this refund's answer took ${h.refund.answerMs} ms at the client)`);
}

/** A row against its group's bare floor (the GETs: against the baseline). */
export interface VsFloor {
  floor: string;
  requestsPerSec: number | null;
  p50: number | null;
  p90: number | null;
  p99: number | null;
}

/** A row of the results table; `get` rows show no p50 ratio (the baseline's p50 means nothing to them). */
export interface RunRow {
  row: ScenarioResult;
  vsFloor?: VsFloor;
  get?: true;
}

const TABLE_HEADER = [
  'scenario',
  'conns',
  'req/s',
  'p50 ms',
  'p90 ms',
  'p99 ms',
  'max ms',
  '2xx',
  'non-2xx',
  'errors',
  'stack CPU ms/req',
  'req/s vs floor',
  'p50 vs floor',
];

/** The results table, each row's CPU and slices, the rate limiter's cost and the CPU per GET. */
export function printRunResults(run: {
  startedAt: Date;
  rows: RunRow[];
  get: { baseline: ScenarioResult; productGet: ScenarioResult; productGetUnlimited?: ScenarioResult };
  rateLimit: number;
  timing: { rounds: number; durationS: number; warmupS: number; settleS: number };
}): void {
  const { rows, get, timing } = run;
  const x = (n: number | null | undefined) => (n === null || n === undefined ? '-' : `${n.toFixed(2)}x`);
  const table = [
    TABLE_HEADER,
    ...rows.map(({ row: r, vsFloor, get: isGet }) => [
      r.name,
      String(r.connections),
      r.requestsPerSec.toFixed(0),
      String(r.latencyMs.p50),
      String(r.latencyMs.p90),
      String(r.latencyMs.p99),
      String(r.latencyMs.max),
      String(r.status2xx),
      String(r.non2xx),
      String(r.errors),
      r.stackCpuMsPerRequest.toFixed(2),
      x(vsFloor?.requestsPerSec),
      isGet ? '-' : x(vsFloor?.p50),
    ]),
  ];
  const widths = TABLE_HEADER.map((_, i) => Math.max(...table.map((row) => (row[i] ?? '').length)));
  say(
    `\nResults (${run.startedAt.toISOString()}; every row ${timing.rounds} slices of ${timing.durationS} s, measured ` +
      `in mirrored rounds with the other rows of its group, after ${timing.warmupS} s warm-up (${timing.settleS} s ` +
      `before later slices); p50/p90/p99: the slices' median; refunds: errors = answers other than 200 ` +
      `\`succeeded\`; floors: Update-with-Start loops; "vs floor": the GETs against the baseline, every other row ` +
      `against the bare floor of its group, at the same concurrency):\n`,
  );
  for (const row of table)
    say(row.map((cell, i) => (i === 0 ? cell.padEnd(widths[i]!) : cell.padStart(widths[i]!))).join('  '));
  say(`\nCPU cores used during each measured run:`);
  for (const { row: r } of rows) say(`  ${r.name}: ${formatCpu(r.cpuCores)}`);
  say('\nEach slice (req/s, p50 ms), in the order measured:');
  for (const { row: r } of rows) {
    const slices = r.slices ?? [{ requestsPerSec: Number(r.requestsPerSec.toFixed(1)), p50: r.latencyMs.p50 }];
    say(`  ${r.name}: ${slices.map((s) => `${s.requestsPerSec}/s ${s.p50} ms`).join(', ')}`);
  }
  if (get.productGetUnlimited) {
    say(
      `rate limiting (RATE_LIMIT_PER_SECOND=${run.rateLimit}): product GET ${get.productGet.requestsPerSec.toFixed(0)} ` +
        `req/s with it, ${get.productGetUnlimited.requestsPerSec.toFixed(0)} req/s without ` +
        `(${(get.productGet.requestsPerSec / get.productGetUnlimited.requestsPerSec).toFixed(3)}x); stack CPU per GET ` +
        `${get.productGet.stackCpuMsPerRequest} ms vs ${get.productGetUnlimited.stackCpuMsPerRequest} ms`,
    );
  }
  const cpuRatio = get.baseline.stackCpuMsPerRequest / get.productGet.stackCpuMsPerRequest;
  say(
    `stack CPU per GET: baseline ${get.baseline.stackCpuMsPerRequest} ms, product ${get.productGet.stackCpuMsPerRequest} ` +
      `ms (ratio ${cpuRatio.toFixed(2)}: what the throughput ratio tends to when both are CPU-bound)`,
  );
}

// ---------------------------------------------------------------------------------------------
// npm run bench:subscriptions

type Creation = Awaited<ReturnType<typeof createStorm>>['result'];
type Storm = Awaited<ReturnType<typeof renewalStorm>>['result'];
type Probes = ReturnType<typeof probes>;
type ProbeSummary = Probes['checkout']['idle'];
type MoneyCheck = Awaited<ReturnType<typeof moneyCheck>>;
type ContinueAsNew = NonNullable<Awaited<ReturnType<typeof continueAsNewDemo>>>;
/** KiB to whole MiB, as the subscription bench prints memory. */
const mib = (kib: number) => Math.round(kib / 1024);

/** A progress line of a long phase. */
export function printProgress(line: string): void {
  say(`  ${line}`);
}

/** The run's scale and the worker's settings, once the build tells its Node flags. */
export function printSubsSettings(s: {
  n: number;
  concurrency: number;
  warmup: number;
  billingDayS: number;
  workerNodeOptions: string;
  heap: { heapLimitMiB: number; defaultMaxCachedWorkflows: number };
  workerCache: {
    maxCachedWorkflows: number;
    subscriptionMaxCachedWorkflows: number;
    subscriptionStickyTimeoutSeconds: number;
  };
}): void {
  say(
    `N = ${s.n}, concurrency ${s.concurrency}, warm-up ${s.warmup}, billing day ${s.billingDayS} s; worker NODE_OPTIONS ` +
      `"${s.workerNodeOptions}": V8 heap limit ${s.heap.heapLimitMiB} MiB; maxCachedWorkflows ` +
      `${s.workerCache.maxCachedWorkflows}, on the subscription queue ${s.workerCache.subscriptionMaxCachedWorkflows} ` +
      `with a ${s.workerCache.subscriptionStickyTimeoutSeconds} s sticky timeout (the SDK's cache for this heap ` +
      `would be ${s.heap.defaultMaxCachedWorkflows})`,
  );
}

export function printSubsReady(stack: SubsStack): void {
  say(
    `Stack ready in ${stack.readyS.toFixed(1)} s (PostgreSQL ${stack.postgresVersion}, Temporal ${stack.temporalServer} ` +
      `at ${stack.temporalAddress}); worker RSS ${mib(stack.atReady.workerKiB)} MiB with no workflow`,
  );
}

export function printWarmup(created: number, seconds: number, steadyRate: number, concurrency: number): void {
  say(
    `  ${created} active in ${seconds.toFixed(1)} s (${(created / seconds).toFixed(1)}/s; ` +
      `${steadyRate.toFixed(1)}/s after the first ${concurrency}); cancelling them`,
  );
}

export function printCreationStart(
  n: number,
  concurrency: number,
  plannedS: number,
  creationStart: number,
  dueAt: number,
): void {
  announce(
    `Creation: ${n} subscriptions, ${concurrency} in flight; at the warm-up rate that takes ~${plannedS.toFixed(0)} s. ` +
      `Every first period ends at T = creation start + ${((dueAt - creationStart) / 1000).toFixed(0)} s ` +
      `(${new Date(dueAt).toISOString()}).`,
  );
}

export function printCreation(c: Creation): void {
  say(
    `  ${c.active} active, ${c.failed} failed, in ${c.seconds} s: ${c.perSecond}/s; ` +
      `latency p50 ${c.latencyMs.p50} ms, p99 ${c.latencyMs.p99} ms; ${c.secondsLeftBeforeT} s left before T`,
  );
  for (const [answer, n] of Object.entries(c.otherAnswers)) say(`    other answer x${n}: ${answer}`);
  say(`  CPU (cores): ${formatCpu(c.cpu.cores)}; stack CPU per subscription ${c.cpu.stackCpuMsPerUnit} ms`);
  if (c.secondsLeftBeforeT < 0) {
    say('  (creation overran T: the first renewals fell due while subscriptions were still being created)');
  }
}

export function printAlive(a: { count: number; query: string; afterS: number }): void {
  announce(`Alive: ${a.count} running subscription workflows (${a.query}), ${a.afterS} s after creation ended`);
}

export function printIdle(last: RssPoint, windowS: number, medianKiB: number): void {
  say(
    `Idle (all alive, waiting on their timers): worker RSS ${mib(last.workerKiB)} MiB just before T ` +
      `(median of the last ${windowS} s: ${mib(medianKiB)} MiB); ` +
      `Temporal ${mib(last.temporalKiB)} MiB, API ${mib(last.apiKiB)} MiB`,
  );
}

export function printStorm(s: Storm): void {
  say(
    `  ${s.paid}/${s.due} due charges settled in ${s.seconds} s ` +
      `(${s.chargesPerSecond} charges/s; due spread ${s.dueSpreadS} s; ` +
      `due-to-paid p50 ${(s.lagMs.p50 / 1000).toFixed(1)} s, p99 ${(s.lagMs.p99 / 1000).toFixed(1)} s, ` +
      `max ${(s.lagMs.max / 1000).toFixed(1)} s)${s.complete ? '' : ' -- INCOMPLETE'}`,
  );
  say(`  CPU (cores): ${formatCpu(s.cpu.cores)}; stack CPU per renewal ${s.cpu.stackCpuMsPerUnit} ms`);
}

/** The checkout and create probes, idle and during the storm (each when it ran). */
export function printProbes(p: Probes, on: { checkout: boolean; creates: boolean }): void {
  const line = (s: ProbeSummary, what: string) =>
    `p50 ${s.p50Ms} ms, p90 ${s.p90Ms} ms, max ${s.maxMs} ms (${s.n} ${what}` +
    `${Object.keys(s.otherAnswers).length ? `; other answers ${JSON.stringify(s.otherAnswers)}` : ''})`;
  if (on.checkout) {
    say(`  Checkout, one token POST at a time: idle ${line(p.checkout.idle, 'payments')}`);
    say(`                                      during the storm ${line(p.checkout.storm, 'payments')}`);
  }
  if (on.creates) {
    say(`  Subscription creates, one at a time: idle ${line(p.creates.idle, 'active')}`);
    say(`                                       during the storm ${line(p.creates.storm, 'active')}`);
  }
}

export function printMoneyCheck(m: MoneyCheck): void {
  say(
    `\nMoney check: ${m.succeededCaptures} succeeded captures, ${m.paidInvoices} paid invoices; ` +
      `${m.invoicesCapturedTwice} invoices captured twice, ${m.capturesWithoutPaidInvoice} captures without a paid ` +
      `invoice, ${m.paidInvoicesWithoutCapture} paid invoices without a capture; ` +
      `${m.stormSubscriptionsWithoutExactlyTwoPaid} of ${m.stormSubscriptions} storm subscriptions without exactly 2 ` +
      `paid invoices; ${m.checkoutPaymentsNotCapturedOnce} of ${m.checkoutPayments} checkout payments not captured ` +
      `exactly once. ${m.ok ? 'OK' : 'FAILED'}`,
  );
}

export function printHistory(
  h: {
    sample: number;
    beforeStorm: { max: number; mean: number };
    afterStorm: { max: number; mean: number };
    runsChanged: number;
    sampleWorkflowId: string | null;
    eventTypes: Record<string, number>;
  },
  t: { sampled: number; waitP50: number; waitMax: number; runP50: number; runMax: number; timedOut: number },
): void {
  say(
    `\nHistory (${h.sample} storm workflows): before the storm max ${h.beforeStorm.max} / mean ` +
      `${h.beforeStorm.mean} events; after its renewal max ${h.afterStorm.max} / mean ` +
      `${h.afterStorm.mean} events per run (${h.runsChanged} continued as new)`,
  );
  say(`  ${h.sampleWorkflowId}: ${JSON.stringify(h.eventTypes)}`);
  say(
    `  the renewal's workflow task (${t.sampled} sampled), ms p50 / max: timer fired to task ` +
      `started ${t.waitP50} / ${t.waitMax} (queued), started to completed ` +
      `${t.runP50} / ${t.runMax} (the worker, its local activities included); ` +
      `${t.timedOut} of its tasks timed out unstarted`,
  );
}

export function printFloorStorm(f: TimerStormFloor): void {
  say(`  CPU (cores): ${formatCpu(f.cpu.cores)}; stack CPU per floor charge ${f.cpu.stackCpuMsPerUnit} ms`);
}

export function printContinueAsNew(c: ContinueAsNew): void {
  say(
    `  ${c.runs.length} runs (${c.continuedAsNew} continued as new) in ${c.seconds} s, ` +
      `${c.paidInvoices} invoices paid; events per run: ${c.runs.map((r) => r.historyLength).join(', ')}; ` +
      `${c.invoicesCapturedTwice} invoices captured twice. ${c.ok ? 'OK' : 'FAILED'}`,
  );
}

/** The subscription bench's summary, before its `Targets` block. */
export function printSubsSummary(s: {
  startedAt: Date;
  commit: string;
  cpuCount: number;
  n: number;
  concurrency: number;
  creation: Creation;
  alive: number;
  workerCache: {
    maxCachedWorkflows: number;
    subscriptionMaxCachedWorkflows: number;
    subscriptionStickyTimeoutSeconds: number;
  };
  rss: { workerIdleMiB: number; workerPeakMiB: number; workerPeakPhase: string; workerVmHwmMiB: number };
  storm: Storm;
  history: { afterStorm: { max: number; mean: number }; sample: number };
  continueAsNew?: ContinueAsNew;
  floorStorm?: TimerStormFloor;
  stormVsFloor: number | null;
  moneyOk: boolean;
  cpuSeconds: Record<string, number>;
}): void {
  const { creation: c, rss, storm, history, continueAsNew: can, floorStorm: f } = s;
  say(`\nSummary (${s.startedAt.toISOString()}, commit ${s.commit.slice(0, 7)}, ${s.cpuCount} CPUs):`);
  say(`  N                     ${c.active} active of ${s.n} (${c.failed} failed)`);
  say(`  creation              ${c.seconds} s, ${c.perSecond}/s (${s.concurrency} in flight)`);
  say(`  alive                 ${s.alive}`);
  say(
    `  worker cache          ${s.workerCache.subscriptionMaxCachedWorkflows} subscription runs, ` +
      `${s.workerCache.subscriptionStickyTimeoutSeconds} s sticky timeout (${s.workerCache.maxCachedWorkflows} on the main queue)`,
  );
  say(
    `  worker RSS            idle ${rss.workerIdleMiB} MiB, peak ${rss.workerPeakMiB} MiB (${rss.workerPeakPhase}), ` +
      `VmHWM ${rss.workerVmHwmMiB} MiB`,
  );
  say(
    `  renewal storm         ${storm.paid} due charges settled in ${storm.seconds} s, ${storm.chargesPerSecond} charges/s`,
  );
  say(
    `  events per run        max ${history.afterStorm.max}, mean ${history.afterStorm.mean} (sample of ${history.sample})` +
      (can
        ? `; renewing every billing day: max ${can.maxEventsPerRun} over ${can.runs.length} runs ` +
          `(${can.paidInvoices} periods)`
        : ''),
  );
  if (f) {
    say(
      `  floor: timer storm    ${f.completed} of ${f.n} completed in ${f.seconds} s from T, ` +
        `${f.chargesPerSecond} charges/s; renewal storm / floor ${s.stormVsFloor ?? '-'}x`,
    );
  }
  say(`  money check           ${s.moneyOk ? 'OK' : 'FAILED'}`);
  say(
    `  CPU seconds (whole run, per process group): ` +
      formatCpu(Object.fromEntries(Object.entries(s.cpuSeconds).map(([g, v]) => [g, Math.round(v)]))),
  );
}
