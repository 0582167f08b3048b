import type { Answer } from './client';
import type { Kill } from './faults';
import type { InvariantResult } from './invariants';

export interface ChaosReport {
  machine: string;
  startedAt: string;
  loadStartedAt: string;
  durationS: number;
  clusterStartS: number;
  drainS: number;
  unsettled: Record<string, number>;
  answers: Answer[];
  kills: Kill[];
  /** Restarts the cluster's supervisor logged, by process kind. */
  restarts: Record<string, number>;
  invariants: InvariantResult[];
  /**
   * The processor-lifecycle traffic as recorded after the drain: payments by card
   * (`tok_3ds`, `tok_processing`, `tok_processing_fail`, `tok_dispute`) and final status, disputes by status.
   */
  lifecycle?: { payments: Record<string, Record<string, number>>; disputes: Record<string, number> };
}

export function violations(report: ChaosReport): number {
  const unsettled = Object.values(report.unsettled).reduce((a, b) => a + b, 0);
  return report.invariants.reduce((sum, r) => sum + r.violations.length, 0) + unsettled;
}

function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length)));
  return rows
    .map((r) => r.map((cell, i) => (i === 0 ? cell.padEnd(widths[i]!) : cell.padStart(widths[i]!))).join('  '))
    .join('\n');
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]!;
}

export function formatReport(report: ChaosReport): string {
  const out: string[] = [];
  out.push(
    `Chaos run: ${report.durationS} s of load on ${report.machine}, ${report.startedAt}` +
      ` (cluster up in ${report.clusterStartS.toFixed(0)} s, settled ${report.drainS.toFixed(0)} s after the load)`,
  );

  const byOperation = new Map<string, Answer[]>();
  for (const a of report.answers) byOperation.set(a.operation, [...(byOperation.get(a.operation) ?? []), a]);
  const opRows = [['operation', 'requests', '2xx', '4xx', '502/503', 'conn. lost', 'other 5xx', 'p50 ms', 'p99 ms']];
  for (const [op, list] of [...byOperation].sort()) {
    const ms = list.map((a) => a.at - a.startedAt).sort((a, b) => a - b);
    opRows.push([
      op,
      String(list.length),
      String(list.filter((a) => a.status >= 200 && a.status < 400).length),
      String(list.filter((a) => a.status >= 400 && a.status < 500).length),
      String(list.filter((a) => a.status === 502 || a.status === 503).length),
      String(list.filter((a) => a.status === 0).length),
      String(list.filter((a) => a.status >= 500 && a.status !== 502 && a.status !== 503).length),
      String(percentile(ms, 0.5)),
      String(percentile(ms, 0.99)),
    ]);
  }
  out.push('', 'Operations', table(opRows));

  const byStatus = new Map<string, number>();
  for (const a of report.answers) {
    const key = `${a.status === 0 ? 'no answer' : a.status} ${a.code}`.trim();
    byStatus.set(key, (byStatus.get(key) ?? 0) + 1);
  }
  out.push(
    '',
    'Answers by status and code',
    table([['status code', 'count'], ...[...byStatus].sort().map(([k, n]) => [k, String(n)])]),
  );

  const killRows = [['fault', 'count', 'restarts', 'recovery p50 s', 'recovery max s', 'unrecovered']];
  const kinds = [...new Set(report.kills.map((k) => k.kind))];
  for (const kind of kinds) {
    const list = report.kills.filter((k) => k.kind === kind);
    const rec = list
      .filter((k) => k.recoveredAt !== undefined)
      .map((k) => (k.recoveredAt! - k.at) / 1000)
      .sort((a, b) => a - b);
    killRows.push([
      kind,
      String(list.length),
      String(report.restarts[kind] ?? 0),
      percentile(rec, 0.5).toFixed(1),
      (rec[rec.length - 1] ?? NaN).toFixed(1),
      String(list.length - rec.length),
    ]);
  }
  out.push(
    '',
    'Kills and restarts (recovery: first succeeded token payment requested after the kill)',
    table(killRows),
  );

  if (report.lifecycle) {
    const rows = [['card', 'payments', 'final statuses']];
    for (const [card, statuses] of Object.entries(report.lifecycle.payments).sort()) {
      rows.push([
        card,
        String(Object.values(statuses).reduce((a, b) => a + b, 0)),
        Object.entries(statuses)
          .sort()
          .map(([status, n]) => `${status} ${n}`)
          .join(', '),
      ]);
    }
    const disputes = Object.entries(report.lifecycle.disputes).sort();
    rows.push([
      'disputes',
      String(disputes.reduce((a, [, n]) => a + n, 0)),
      disputes.map(([status, n]) => `${status} ${n}`).join(', '),
    ]);
    out.push('', 'Processor lifecycle (3-D Secure, processing, disputes), as recorded after the drain', table(rows));
  }

  if (Object.values(report.unsettled).some((n) => n > 0)) {
    out.push('', `UNSETTLED after the drain: ${JSON.stringify(report.unsettled)}`);
  }
  out.push(
    '',
    'Invariants',
    table([
      ['invariant', 'checked', 'violations'],
      ...report.invariants.map((r) => [r.name, String(r.checked), String(r.violations.length)]),
    ]),
  );
  for (const r of report.invariants) {
    for (const note of r.notes ?? []) out.push(`  note ${r.name}: ${note}`);
    for (const v of r.violations.slice(0, 20)) out.push(`  VIOLATION ${r.name}: ${v}`);
  }
  out.push('', violations(report) === 0 ? 'PASS: no violation, no 500.' : `FAIL: ${violations(report)} violation(s).`);
  return out.join('\n');
}
