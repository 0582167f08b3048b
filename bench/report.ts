import fs from 'node:fs';
import path from 'node:path';
import type { WorkflowHistory, RefundHistory } from './run/history';
import type { ScenarioResult } from './run/measure';
import type { PostLedgerCheck } from './run/post';
import type { RefundCheck, RefundResult } from './run/refunds';
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
    say(`  ${r.name}: ${(r.slices ?? []).map((s) => `${s.requestsPerSec}/s ${s.p50} ms`).join(', ')}`);
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
