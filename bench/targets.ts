/**
 * The bench lines of issue 41 and their evaluation: measured figures in, one line per target out,
 * each with its verdict, MET or MISSED, and the measured bound beside it. Pure (no I/O):
 * bench/report.ts prints the lines, bench/run.ts and bench/subscriptions.ts write them to their
 * JSON; test/unit/benchTargets.test.ts pins the boundaries and the wording.
 *
 *   line                                                     target    bench
 *   GET throughput vs bare Koa + pg (both on Node 24)        >= 0.8x   run
 *   token POST p50 at 1 connection vs the work floor         <= 1.15x  run
 *   token POST throughput at 10 vs the work floor            >= 0.85x  run
 *   refund p50 at 1 vs the refund work floor                 <= 1.15x  run
 *   refund throughput at 10 vs the refund work floor         >= 0.85x  run
 *   renewal storm at 10,000 due vs the timer-storm floor     >= 0.8x   subscriptions (dev server)
 *   the same on the real server (BENCH_TEMPORAL=server)      >= 0.7x   subscriptions (real server)
 *   10,000 live subscriptions, worker peak RSS               <= 1 GiB  subscriptions
 *
 * The work floors (bench/floor/) are the least any implementation must do, written the cheapest
 * way: a line at 1.0x is perfect. Beside each work-floor line stands its bound: what that work
 * floor reads against the bare floor measured in the same group (no business work at all).
 *
 * A value is rounded to what is printed (ratios to 3 decimals, MiB to whole) and the rounded value
 * is what is compared, so a printed line never contradicts its verdict. A figure the run does not
 * have, or one it cannot vouch for (errors in the scenario, another concurrency, an incomplete
 * storm, fewer than 10,000 of anything a line names, the other Temporal server), makes its line
 * MISSED with the reason.
 */

/** One measured figure; `flaw` says why it cannot count (it is still shown). */
export interface Figure {
  value: number;
  flaw?: string;
}

/** What `npm run bench` measures: each product scenario and the floors of its group. */
export interface RunFigures {
  /** The Node version the bench ran on (`process.version`): the GET line asks for Node 24. */
  node?: string;
  /** Requests/s. */
  baselineGet?: Figure;
  productGet?: Figure;
  /** Token POST: p50 (ms) at 1 connection, requests/s at 10 connections. */
  postP50At1?: Figure;
  postRpsAt10?: Figure;
  /** The work floor (a token payment's required work), measured beside the token POST. */
  workP50At1?: Figure;
  workRpsAt10?: Figure;
  /** The bare floor (Update-with-Start, no business work), measured beside the token POST. */
  floorP50At1?: Figure;
  floorRpsAt10?: Figure;
  /** Refunds: p50 (ms) with 1 loop, refunds/s with 10 loops. */
  refundP50At1?: Figure;
  refundRpsAt10?: Figure;
  /** The refund work floor (a refund's required work), measured beside the refunds. */
  refundWorkP50At1?: Figure;
  refundWorkRpsAt10?: Figure;
  /** The bare floor measured beside the refunds. */
  refundFloorP50At1?: Figure;
  refundFloorRpsAt10?: Figure;
}

/** What `npm run bench:subscriptions` measures. */
export interface SubscriptionFigures {
  /** The Temporal the run measured on (BENCH_TEMPORAL): each storm line belongs to one. */
  temporal?: 'dev' | 'server';
  /** The product's renewal storm: charges/s, and how many renewals fell due. */
  stormChargesPerSecond?: Figure;
  stormN?: number;
  /** The timer-storm floor beside it: charges/s, and how many timers it started. */
  floorStormChargesPerSecond?: Figure;
  floorStormN?: number;
  /** Subscriptions alive at once, and the worker's peak RSS over the run (MiB). */
  liveN?: number;
  workerPeakRssMiB?: Figure;
}

export type Figures = RunFigures & SubscriptionFigures;

type Unit = 'x' | 'MiB';

/** A value (with what it came from), or why there is none. */
type Measured = { value: number; detail: string; flaw?: string } | { missing: string };

export interface TargetSpec {
  id: string;
  /** Which bench measures it. */
  bench: 'run' | 'subscriptions';
  measure: string;
  comparison: '>=' | '<=';
  target: number;
  unit: Unit;
  /** The target as the issue writes it, when not `<cmp> <target><unit>` (1 GiB). */
  targetText?: string;
  evaluate: (f: Figures) => Measured;
  /** The measured bound printed beside the line (informative: it never decides the verdict). */
  bound?: (f: Figures) => string;
}

export type Verdict = 'MET' | 'MISSED';

export interface TargetLine {
  id: string;
  measure: string;
  /** e.g. `>= 0.8x`. */
  target: string;
  /** The compared value (rounded as printed), or null when there is none. */
  value: number | null;
  /** e.g. `0.723x`, or `-` when there is no value. */
  valueText: string;
  /** Both sides' absolute values, e.g. `2078.0 / 2874.0 req/s`. */
  detail: string;
  /** The measured bound, e.g. `work floor / bare floor 1.191x (20.6 / 17.3 ms)`. */
  bound?: string;
  /** Why the line is MISSED without being compared (a missing or flawed figure). */
  reason?: string;
  met: boolean;
  verdict: Verdict;
}

/** The scale of the subscription lines: below it, their figures do not count. */
export const SCALE_N = 10_000;

/** The Node major version the GET line asks for. */
export const NODE_MAJOR = 24;

const count = (k: number) => k.toLocaleString('en-US');
const num = (n: number) => (Number.isInteger(n) ? String(n) : n.toFixed(1));
const x3 = (r: number) => `${r.toFixed(3)}x`;

/** a / b as a ratio line's value; a flaw of either figure is carried. */
function ratio(a: Figure | undefined, b: Figure | undefined, what: [string, string], unit: string): Measured {
  if (!a) return { missing: `no ${what[0]} figure` };
  if (!b) return { missing: `no ${what[1]} figure` };
  if (!Number.isFinite(a.value) || !Number.isFinite(b.value) || b.value <= 0) {
    return { missing: `cannot divide ${num(a.value)} by ${num(b.value)} ${unit}` };
  }
  return withFlaws(
    { value: a.value / b.value, detail: `${num(a.value)} / ${num(b.value)} ${unit}` },
    a.flaw && `${what[0]}: ${a.flaw}`,
    b.flaw && `${what[1]}: ${b.flaw}`,
  );
}

function withFlaws(m: Measured, ...flaws: Array<string | false | undefined>): Measured {
  if ('missing' in m) return m;
  const all = [m.flaw, ...flaws].filter(Boolean);
  return all.length ? { ...m, flaw: all.join('; ') } : m;
}

/** Why a count below SCALE_N does not count (undefined when it does). */
function belowScale(n: number | undefined, what: string): string | undefined {
  return n === undefined || n < SCALE_N ? `${what} measured with ${count(n ?? 0)}, not ${count(SCALE_N)}` : undefined;
}

/** The GET line: its two sides on Node 24 (both run on the bench's own Node). */
function getThroughput(f: Figures): Measured {
  const major = f.node ? Number(/^v?(\d+)/.exec(f.node)?.[1]) : undefined;
  const runtime = major === NODE_MAJOR ? undefined : `measured on Node ${f.node ?? 'unknown'}, not Node ${NODE_MAJOR}`;
  return withFlaws(ratio(f.productGet, f.baselineGet, ['product GET', 'bare Koa + pg GET'], 'req/s'), runtime);
}

/** A storm line: the product's renewal storm over the timer-storm floor, both at SCALE_N, on `temporal`. */
function storm(f: Figures, temporal: 'dev' | 'server'): Measured {
  if (f.temporal !== temporal) {
    return {
      missing:
        temporal === 'server'
          ? `not measured on the real server: this run was on the ${f.temporal ?? 'unnamed'} server (run with BENCH_TEMPORAL=server)`
          : `not measured on the dev server: this run was on the ${f.temporal === 'server' ? 'real' : 'unnamed'} server (BENCH_TEMPORAL=${f.temporal ?? '?'}); see the real-server line`,
    };
  }
  const m = ratio(f.stormChargesPerSecond, f.floorStormChargesPerSecond, ['renewal storm', 'floor storm'], 'charges/s');
  if ('missing' in m) return m;
  return withFlaws(
    { ...m, detail: `${m.detail}, ${count(f.stormN ?? 0)} / ${count(f.floorStormN ?? 0)} due` },
    belowScale(f.stormN, 'renewal storm'),
    belowScale(f.floorStormN, 'floor storm'),
  );
}

/** The peak RSS line: counts only with SCALE_N subscriptions alive. */
function peakRss(f: Figures): Measured {
  if (!f.workerPeakRssMiB) return { missing: 'no worker RSS figure' };
  return withFlaws(
    { value: f.workerPeakRssMiB.value, detail: `${count(f.liveN ?? 0)} live` },
    f.workerPeakRssMiB.flaw,
    belowScale(f.liveN, 'live subscriptions'),
  );
}

/**
 * A work floor against the bare floor of its group: `<what> / bare floor 1.191x (20.6 / 17.3 ms)`.
 * It shows how far the required work alone moves the line; a flaw of either side is named.
 */
function floorBound(what: string, work: Figure | undefined, bare: Figure | undefined, unit: string): string {
  const m = ratio(work, bare, [what, 'bare floor'], unit);
  const head = `bound: ${what} / bare floor`;
  if ('missing' in m) return `${head} - (${m.missing})`;
  return `${head} ${x3(Math.round(m.value * 1000) / 1000)} (${m.detail}${m.flaw ? `; ${m.flaw}` : ''})`;
}

export const TARGETS: TargetSpec[] = [
  {
    id: 'getThroughputVsBaseline',
    bench: 'run',
    measure: 'GET throughput vs bare Koa + pg (both on Node 24)',
    comparison: '>=',
    target: 0.8,
    unit: 'x',
    evaluate: getThroughput,
  },
  {
    id: 'postP50VsWorkFloor',
    bench: 'run',
    measure: 'token POST p50 at 1 connection vs the work floor',
    comparison: '<=',
    target: 1.15,
    unit: 'x',
    evaluate: (f) => ratio(f.postP50At1, f.workP50At1, ['token POST at 1', 'work floor at 1'], 'ms'),
    bound: (f) => floorBound('work floor', f.workP50At1, f.floorP50At1, 'ms'),
  },
  {
    id: 'postThroughputVsWorkFloor',
    bench: 'run',
    measure: 'token POST throughput at 10 vs the work floor',
    comparison: '>=',
    target: 0.85,
    unit: 'x',
    evaluate: (f) => ratio(f.postRpsAt10, f.workRpsAt10, ['token POST at 10', 'work floor at 10'], 'req/s'),
    bound: (f) => floorBound('work floor', f.workRpsAt10, f.floorRpsAt10, 'req/s'),
  },
  {
    id: 'refundP50VsRefundWorkFloor',
    bench: 'run',
    measure: 'refund p50 at 1 vs the refund work floor',
    comparison: '<=',
    target: 1.15,
    unit: 'x',
    evaluate: (f) => ratio(f.refundP50At1, f.refundWorkP50At1, ['refunds at 1', 'refund work floor at 1'], 'ms'),
    bound: (f) => floorBound('refund work floor', f.refundWorkP50At1, f.refundFloorP50At1, 'ms'),
  },
  {
    id: 'refundThroughputVsRefundWorkFloor',
    bench: 'run',
    measure: 'refund throughput at 10 vs the refund work floor',
    comparison: '>=',
    target: 0.85,
    unit: 'x',
    evaluate: (f) => ratio(f.refundRpsAt10, f.refundWorkRpsAt10, ['refunds at 10', 'refund work floor at 10'], 'req/s'),
    bound: (f) => floorBound('refund work floor', f.refundWorkRpsAt10, f.refundFloorRpsAt10, 'req/s'),
  },
  {
    id: 'stormVsFloor',
    bench: 'subscriptions',
    measure: 'renewal storm at 10,000 due vs the timer-storm floor at 10,000',
    comparison: '>=',
    target: 0.8,
    unit: 'x',
    evaluate: (f) => storm(f, 'dev'),
  },
  {
    id: 'stormVsFloorRealServer',
    bench: 'subscriptions',
    measure: 'the same on the real server (BENCH_TEMPORAL=server)',
    comparison: '>=',
    target: 0.7,
    unit: 'x',
    evaluate: (f) => storm(f, 'server'),
  },
  {
    id: 'rss10kLive',
    bench: 'subscriptions',
    measure: '10,000 live subscriptions, worker peak RSS',
    comparison: '<=',
    target: 1024,
    unit: 'MiB',
    targetText: '<= 1 GiB',
    evaluate: peakRss,
  },
];

const DIGITS: Record<Unit, number> = { x: 3, MiB: 0 };

function round(value: number, unit: Unit): number {
  const factor = 10 ** DIGITS[unit];
  return Math.round(value * factor) / factor;
}

function show(value: number, unit: Unit): string {
  const text = value.toFixed(DIGITS[unit]);
  return unit === 'x' ? `${text}x` : `${text} ${unit}`;
}

function targetText(spec: TargetSpec): string {
  return (
    spec.targetText ?? `${spec.comparison} ${spec.unit === 'x' ? `${spec.target}x` : `${spec.target} ${spec.unit}`}`
  );
}

/** One line per target of `bench` (all targets when omitted), in the issue's order. */
export function evaluateTargets(figures: Figures, bench?: TargetSpec['bench']): TargetLine[] {
  return TARGETS.filter((t) => !bench || t.bench === bench).map((spec) => {
    const measured = spec.evaluate(figures);
    const bound = spec.bound?.(figures);
    const base = { id: spec.id, measure: spec.measure, target: targetText(spec), ...(bound ? { bound } : {}) };
    if ('missing' in measured) {
      return {
        ...base,
        value: null,
        valueText: '-',
        detail: '',
        reason: measured.missing,
        met: false,
        verdict: 'MISSED' as const,
      };
    }
    const value = round(measured.value, spec.unit);
    const within = spec.comparison === '>=' ? value >= spec.target : value <= spec.target;
    const met = within && !measured.flaw;
    return {
      ...base,
      value,
      valueText: show(value, spec.unit),
      detail: measured.detail,
      ...(measured.flaw ? { reason: measured.flaw } : {}),
      met,
      verdict: met ? ('MET' as const) : ('MISSED' as const),
    };
  });
}

/**
 * The printed `Targets` block: a heading, then one aligned line per target:
 * `<measure>  <value> (<both sides>)  target <cmp> <target>  MET|MISSED  [<reason>; ][bound: ...]`.
 */
export function formatTargets(lines: TargetLine[]): string[] {
  const measured = lines.map((l) => (l.detail ? `${l.valueText} (${l.detail})` : l.valueText));
  const w0 = Math.max(0, ...lines.map((l) => l.measure.length));
  const w1 = Math.max(0, ...measured.map((m) => m.length));
  const w2 = Math.max(0, ...lines.map((l) => l.target.length));
  const met = lines.filter((l) => l.met).length;
  return [
    `Targets (issue 41): ${met} of ${lines.length} MET`,
    ...lines.map((l, i) => {
      const notes = [l.reason, l.bound].filter(Boolean).join('; ');
      return (
        `  ${l.measure.padEnd(w0)}  ${measured[i]!.padEnd(w1)}  target ${l.target.padEnd(w2)}  ` +
        (notes ? `${l.verdict.padEnd(6)}  ${notes}` : l.verdict)
      );
    }),
  ];
}
