/**
 * The performance targets of issue 12 and their evaluation: measured figures in, one line per
 * target out, each ending in `met` or `MISSED`. Pure (no I/O): bench/run.ts and
 * bench/subscriptions.ts print the lines and write them to their JSON; test/unit/benchTargets.test.ts
 * pins the boundaries and the wording.
 *
 * A value is rounded to what is printed (ratios to 3 decimals, seconds to 1, MiB to whole) and the
 * rounded value is what is compared, so a printed line never contradicts its verdict. A figure the
 * run does not have, or one it cannot vouch for (errors in the scenario, an incomplete storm, too
 * small an N), makes its line MISSED with the reason.
 */

/** One measured figure; `flaw` says why it cannot count (it is still shown). */
export interface Figure {
  value: number;
  flaw?: string;
}

/** What `npm run bench` measures (the autocannon rows and the refund loops, and their floors). */
export interface RunFigures {
  /** Requests/s. */
  baselineGet?: Figure;
  productGet?: Figure;
  /** Update-with-Start floor: p50 (ms) at 1 caller, answers/s at 10 callers (beside the token POST). */
  floorP50At1?: Figure;
  floorRpsAt10?: Figure;
  /**
   * The same floor measured beside the refunds (bench/run.ts measures each line's floor in its
   * group); the refund lines use it when there is one, else the POST's.
   */
  refundFloorP50At1?: Figure;
  refundFloorRpsAt10?: Figure;
  /** Token-flow POST /payments: p50 (ms) at 1 connection, requests/s at 10 connections. */
  postP50At1?: Figure;
  postRpsAt10?: Figure;
  /** Refunds: p50 (ms) with 1 loop, refunds/s with 10 loops. */
  refundP50At1?: Figure;
  refundRpsAt10?: Figure;
}

/** What `npm run bench:subscriptions` measures. */
export interface SubscriptionFigures {
  /** The product's renewal storm and the floor's timer storm, charges/s. */
  stormChargesPerSecond?: Figure;
  floorStormChargesPerSecond?: Figure;
  /** How many renewals the product storm settled, and in how many seconds (first due to last paid). */
  stormN?: number;
  stormSeconds?: Figure;
  /** Subscriptions alive at once, and the worker's peak RSS over the run (MiB). */
  liveN?: number;
  workerPeakRssMiB?: Figure;
}

export type Figures = RunFigures & SubscriptionFigures;

type Unit = 'x' | 's' | 'MiB';

export interface TargetSpec {
  id: string;
  /** Which bench measures it. */
  bench: 'run' | 'subscriptions';
  measure: string;
  comparison: '>=' | '<=';
  target: number;
  unit: Unit;
  evaluate: (f: Figures) => Measured;
}

/** A value (with what it came from), or why there is none. */
type Measured = { value: number; detail: string; flaw?: string } | { missing: string };

export interface TargetLine {
  id: string;
  measure: string;
  /** e.g. `>= 0.8x`. */
  target: string;
  /** The compared value (rounded as printed), or null when there is none. */
  value: number | null;
  /** e.g. `0.723x`, or `-` when there is no value. */
  valueText: string;
  /** Where the value comes from, e.g. `2078 / 2874 req/s`. */
  detail: string;
  /** Why the line is MISSED without being compared (a missing or flawed figure). */
  reason?: string;
  met: boolean;
}

/** The scale of issue 12's subscription lines: below it, their figures do not count. */
export const SCALE_N = 10_000;

const num = (n: number, digits = 1) => (Number.isInteger(n) ? String(n) : n.toFixed(digits));

/** a / b as a ratio line's value; a flaw of either figure is carried. */
function ratio(a: Figure | undefined, b: Figure | undefined, what: [string, string], unit: string): Measured {
  if (!a) return { missing: `no ${what[0]} figure` };
  if (!b) return { missing: `no ${what[1]} figure` };
  if (!Number.isFinite(a.value) || !Number.isFinite(b.value) || b.value <= 0) {
    return { missing: `cannot divide ${num(a.value)} by ${num(b.value)} ${unit}` };
  }
  const flaws = [a.flaw && `${what[0]}: ${a.flaw}`, b.flaw && `${what[1]}: ${b.flaw}`].filter(Boolean);
  return {
    value: a.value / b.value,
    detail: `${num(a.value)} / ${num(b.value)} ${unit}`,
    ...(flaws.length ? { flaw: flaws.join('; ') } : {}),
  };
}

/** A figure that counts only when measured at SCALE_N or more. */
function atScale(figure: Figure | undefined, n: number | undefined, what: string, nWhat: string): Measured {
  if (!figure) return { missing: `no ${what} figure` };
  const count = (k: number) => k.toLocaleString('en-US');
  const small =
    n === undefined || n < SCALE_N ? `measured with ${count(n ?? 0)} ${nWhat}, not ${count(SCALE_N)}` : undefined;
  const flaws = [figure.flaw, small].filter(Boolean);
  return {
    value: figure.value,
    detail: `${count(n ?? 0)} ${nWhat}`,
    ...(flaws.length ? { flaw: flaws.join('; ') } : {}),
  };
}

export const TARGETS: TargetSpec[] = [
  {
    id: 'getThroughputVsBaseline',
    bench: 'run',
    measure: 'GET /payments/{id} throughput vs bare Koa+pg',
    comparison: '>=',
    target: 0.8,
    unit: 'x',
    evaluate: (f) => ratio(f.productGet, f.baselineGet, ['product GET', 'baseline GET'], 'req/s'),
  },
  {
    id: 'postP50VsFloor',
    bench: 'run',
    measure: 'token POST p50, 1 connection, vs floor p50',
    comparison: '<=',
    target: 1.1,
    unit: 'x',
    evaluate: (f) => ratio(f.postP50At1, f.floorP50At1, ['POST at 1', 'floor at 1'], 'ms'),
  },
  {
    id: 'postThroughputVsFloor',
    bench: 'run',
    measure: 'token POST throughput at 10 connections vs floor at 10',
    comparison: '>=',
    target: 0.8,
    unit: 'x',
    evaluate: (f) => ratio(f.postRpsAt10, f.floorRpsAt10, ['POST at 10', 'floor at 10'], 'req/s'),
  },
  {
    id: 'refundP50VsFloor',
    bench: 'run',
    measure: 'refund p50, 1 connection, vs floor p50',
    comparison: '<=',
    target: 1.2,
    unit: 'x',
    evaluate: (f) => ratio(f.refundP50At1, f.refundFloorP50At1 ?? f.floorP50At1, ['refund at 1', 'floor at 1'], 'ms'),
  },
  {
    id: 'refundThroughputVsFloor',
    bench: 'run',
    measure: 'refund throughput at 10 loops vs floor at 10',
    comparison: '>=',
    target: 0.7,
    unit: 'x',
    evaluate: (f) =>
      ratio(f.refundRpsAt10, f.refundFloorRpsAt10 ?? f.floorRpsAt10, ['refunds at 10', 'floor at 10'], 'req/s'),
  },
  {
    id: 'stormVsFloor',
    bench: 'subscriptions',
    measure: 'renewal storm charges/s vs timer-storm floor',
    comparison: '>=',
    target: 0.7,
    unit: 'x',
    evaluate: (f) =>
      ratio(f.stormChargesPerSecond, f.floorStormChargesPerSecond, ['renewal storm', 'floor storm'], 'charges/s'),
  },
  {
    id: 'storm10kSeconds',
    bench: 'subscriptions',
    measure: '10,000 due renewals settled, one worker',
    comparison: '<=',
    target: 100,
    unit: 's',
    evaluate: (f) => atScale(f.stormSeconds, f.stormN, 'storm', 'due renewals'),
  },
  {
    id: 'rss10kLive',
    bench: 'subscriptions',
    measure: '10,000 live subscriptions, worker peak RSS',
    comparison: '<=',
    target: 1024,
    unit: 'MiB',
    evaluate: (f) => atScale(f.workerPeakRssMiB, f.liveN, 'worker RSS', 'live subscriptions'),
  },
];

const DIGITS: Record<Unit, number> = { x: 3, s: 1, MiB: 0 };

function round(value: number, unit: Unit): number {
  const factor = 10 ** DIGITS[unit];
  return Math.round(value * factor) / factor;
}

function show(value: number, unit: Unit): string {
  const text = value.toFixed(DIGITS[unit]);
  return unit === 'x' ? `${text}x` : `${text} ${unit}`;
}

function targetText(spec: TargetSpec): string {
  return `${spec.comparison} ${unit1(spec.target, spec.unit)}`;
}

/** The target as issue 12 writes it (0.8x, 100 s, 1024 MiB). */
function unit1(value: number, unit: Unit): string {
  return unit === 'x' ? `${value}x` : `${value} ${unit}`;
}

/** One line per target of `bench` (all targets when omitted), in the issue's order. */
export function evaluateTargets(figures: Figures, bench?: TargetSpec['bench']): TargetLine[] {
  return TARGETS.filter((t) => !bench || t.bench === bench).map((spec) => {
    const measured = spec.evaluate(figures);
    const base = { id: spec.id, measure: spec.measure, target: targetText(spec) };
    if ('missing' in measured) {
      return { ...base, value: null, valueText: '-', detail: '', reason: measured.missing, met: false };
    }
    const value = round(measured.value, spec.unit);
    const within = spec.comparison === '>=' ? value >= spec.target : value <= spec.target;
    return {
      ...base,
      value,
      valueText: show(value, spec.unit),
      detail: measured.detail,
      ...(measured.flaw ? { reason: measured.flaw } : {}),
      met: within && !measured.flaw,
    };
  });
}

/**
 * The printed `Targets` block: a heading, then one aligned line per target:
 * `<measure>  <value> (<detail>)  target <cmp> <target>  [<reason>: ]met|MISSED`.
 */
export function formatTargets(lines: TargetLine[]): string[] {
  const measured = lines.map((l) => (l.detail ? `${l.valueText} (${l.detail})` : l.valueText));
  const w0 = Math.max(0, ...lines.map((l) => l.measure.length));
  const w1 = Math.max(0, ...measured.map((m) => m.length));
  const w2 = Math.max(0, ...lines.map((l) => l.target.length));
  const met = lines.filter((l) => l.met).length;
  return [
    `Targets (issue 12): ${met} of ${lines.length} met`,
    ...lines.map(
      (l, i) =>
        `  ${l.measure.padEnd(w0)}  ${measured[i]!.padEnd(w1)}  target ${l.target.padEnd(w2)}  ` +
        `${l.reason ? `${l.reason}: ` : ''}${l.met ? 'met' : 'MISSED'}`,
    ),
  ];
}

/** What `workBounds` compares: p50 (ms) at 1 caller and answers/s at 10, per scenario. */
export interface LatencyAndRate {
  p50At1?: number;
  rpsAt10?: number;
}

export interface BoundLine {
  id: 'workP50VsFloor' | 'workThroughputVsFloor' | 'postVsWork' | 'refundVsWork';
  /** p50 ratio (above 1 is slower), or throughput ratio, rounded to 3 decimals; null when a figure is missing. */
  p50Ratio: number | null;
  rpsRatio: number | null;
  text: string;
}

const ratio3 = (a: number | undefined, b: number | undefined) =>
  a !== undefined && b !== undefined && b > 0 && Number.isFinite(a) ? Math.round((a / b) * 1000) / 1000 : null;
const x3 = (r: number | null) => (r === null ? '-' : `${r.toFixed(3)}x`);

/**
 * The `Bounds` block (informative, never `met`/`MISSED`): the work floor against the floor, with
 * the targets of the lines it bounds beside it, then the token POST and the refund against the
 * work floor. Empty without a work floor.
 */
export function evaluateBounds(f: {
  floor: LatencyAndRate;
  work: LatencyAndRate;
  post: LatencyAndRate;
  refund: LatencyAndRate;
  /**
   * The floor measured beside the refunds, when the refunds were measured at another moment than
   * the work floor: the refund is then compared through the floors (refund / its floor, against
   * work floor / its floor).
   */
  refundFloor?: LatencyAndRate;
}): BoundLine[] {
  if (f.work.p50At1 === undefined && f.work.rpsAt10 === undefined) return [];
  const through = (value: number | undefined, own: number | undefined, base: number | undefined) =>
    f.refundFloor === undefined ? value : value !== undefined && own && base ? (value / own) * base : undefined;
  const refund: LatencyAndRate = {
    p50At1: through(f.refund.p50At1, f.refundFloor?.p50At1, f.floor.p50At1),
    rpsAt10: through(f.refund.rpsAt10, f.refundFloor?.rpsAt10, f.floor.rpsAt10),
  };
  const target = (id: string) => TARGETS.find((t) => t.id === id)!;
  const goal = (id: string) => targetText(target(id));
  const workP50 = ratio3(f.work.p50At1, f.floor.p50At1);
  const workRps = ratio3(f.work.rpsAt10, f.floor.rpsAt10);
  const vsWork = (id: 'postVsWork' | 'refundVsWork', what: string, s: LatencyAndRate): BoundLine => {
    const p50Ratio = ratio3(s.p50At1, f.work.p50At1);
    const rpsRatio = ratio3(s.rpsAt10, f.work.rpsAt10);
    return {
      id,
      p50Ratio,
      rpsRatio,
      text: `${what} vs work floor: p50 at 1 ${x3(p50Ratio)}, throughput at 10 ${x3(rpsRatio)}`,
    };
  };
  return [
    {
      id: 'workP50VsFloor',
      p50Ratio: workP50,
      rpsRatio: null,
      text:
        `work floor p50 at 1 vs floor: ${x3(workP50)} (${f.work.p50At1 ?? '-'} / ${f.floor.p50At1 ?? '-'} ms); ` +
        `targets: token POST ${goal('postP50VsFloor')}, refund ${goal('refundP50VsFloor')}`,
    },
    {
      id: 'workThroughputVsFloor',
      p50Ratio: null,
      rpsRatio: workRps,
      text:
        `work floor throughput at 10 vs floor: ${x3(workRps)} (${f.work.rpsAt10?.toFixed(1) ?? '-'} / ` +
        `${f.floor.rpsAt10?.toFixed(1) ?? '-'} req/s); targets: token POST ${goal('postThroughputVsFloor')}, ` +
        `refund ${goal('refundThroughputVsFloor')}`,
    },
    vsWork('postVsWork', 'token POST', f.post),
    vsWork('refundVsWork', 'refund', refund),
  ];
}
