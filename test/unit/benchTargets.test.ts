import { SCALE_N, evaluateTargets, formatTargets, type Figures, type TargetLine } from '../../bench/targets';

const v = (value: number, flaw?: string) => ({ value, ...(flaw ? { flaw } : {}) });

/** A run where every line of `npm run bench` sits exactly on its limit. */
const onTheLimit: Figures = {
  node: 'v24.21.0',
  baselineGet: v(1000),
  productGet: v(800),
  floorP50At1: v(10),
  floorRpsAt10: v(200),
  workP50At1: v(20),
  workRpsAt10: v(100),
  postP50At1: v(23),
  postRpsAt10: v(85),
  refundFloorP50At1: v(10),
  refundFloorRpsAt10: v(200),
  refundWorkP50At1: v(40),
  refundWorkRpsAt10: v(60),
  refundP50At1: v(46),
  refundRpsAt10: v(51),
};

/** A subscription run at scale on the dev server, every line on its limit. */
const atScale: Figures = {
  temporal: 'dev',
  stormChargesPerSecond: v(80),
  stormN: SCALE_N,
  floorStormChargesPerSecond: v(100),
  floorStormN: SCALE_N,
  liveN: SCALE_N,
  workerPeakRssMiB: v(1024),
};

const byId = (lines: TargetLine[]) => Object.fromEntries(lines.map((l) => [l.id, l]));

describe('bench targets (issue 41)', () => {
  it('has one line per target of each bench, in the issue order', () => {
    expect(evaluateTargets({}, 'run').map((l) => [l.id, l.target])).toEqual([
      ['getThroughputVsBaseline', '>= 0.8x'],
      ['postP50VsWorkFloor', '<= 1.15x'],
      ['postThroughputVsWorkFloor', '>= 0.85x'],
      ['refundP50VsRefundWorkFloor', '<= 1.15x'],
      ['refundThroughputVsRefundWorkFloor', '>= 0.85x'],
    ]);
    expect(evaluateTargets({}, 'subscriptions').map((l) => [l.id, l.target])).toEqual([
      ['stormVsFloor', '>= 0.8x'],
      ['stormVsFloorRealServer', '>= 0.7x'],
      ['rss10kLive', '<= 1 GiB'],
    ]);
    expect(evaluateTargets({})).toHaveLength(8);
  });

  it('meets a line exactly on its limit, for >= and <= alike, and says MET', () => {
    const lines = evaluateTargets(onTheLimit, 'run');
    expect(lines.map((l) => [l.value, l.verdict])).toEqual([
      [0.8, 'MET'],
      [1.15, 'MET'],
      [0.85, 'MET'],
      [1.15, 'MET'],
      [0.85, 'MET'],
    ]);
    expect(lines.every((l) => l.met && !l.reason)).toBe(true);
  });

  it('misses a line just past its limit, and says MISSED', () => {
    const lines = byId(
      evaluateTargets(
        {
          ...onTheLimit,
          productGet: v(799),
          postP50At1: v(23.1),
          postRpsAt10: v(84.9),
          refundP50At1: v(46.1),
          refundRpsAt10: v(50.9),
        },
        'run',
      ),
    );
    expect(lines.getThroughputVsBaseline).toMatchObject({ value: 0.799, met: false, verdict: 'MISSED' });
    expect(lines.postP50VsWorkFloor).toMatchObject({ value: 1.155, met: false, verdict: 'MISSED' });
    expect(lines.postThroughputVsWorkFloor).toMatchObject({ value: 0.849, met: false });
    expect(lines.refundP50VsRefundWorkFloor).toMatchObject({ value: 1.153, met: false });
    expect(lines.refundThroughputVsRefundWorkFloor).toMatchObject({ value: 0.848, met: false });
    expect(Object.values(lines).every((l) => l.reason === undefined)).toBe(true);
  });

  it('compares the value as printed (rounded to 3 decimals for a ratio)', () => {
    // 0.79996 prints as 0.800x, and is met as printed; 0.7994 prints as 0.799x and is missed.
    const near = byId(evaluateTargets({ ...onTheLimit, baselineGet: v(100_000), productGet: v(79_996) }, 'run'));
    expect(near.getThroughputVsBaseline).toMatchObject({ value: 0.8, valueText: '0.800x', verdict: 'MET' });
    const below = byId(evaluateTargets({ ...onTheLimit, baselineGet: v(100_000), productGet: v(79_940) }, 'run'));
    expect(below.getThroughputVsBaseline).toMatchObject({ value: 0.799, valueText: '0.799x', verdict: 'MISSED' });
  });

  it("compares the token POST with the work floor and the refunds with the refund work floor, not the bare floor's", () => {
    const lines = byId(evaluateTargets(onTheLimit, 'run'));
    expect(lines.postP50VsWorkFloor!.detail).toBe('23 / 20 ms');
    expect(lines.postThroughputVsWorkFloor!.detail).toBe('85 / 100 req/s');
    expect(lines.refundP50VsRefundWorkFloor!.detail).toBe('46 / 40 ms');
    expect(lines.refundThroughputVsRefundWorkFloor!.detail).toBe('51 / 60 req/s');
  });

  it('puts beside each work-floor line what its work floor reads against the bare floor of its group', () => {
    const lines = byId(evaluateTargets(onTheLimit, 'run'));
    expect(lines.postP50VsWorkFloor!.bound).toBe('bound: work floor / bare floor 2.000x (20 / 10 ms)');
    expect(lines.postThroughputVsWorkFloor!.bound).toBe('bound: work floor / bare floor 0.500x (100 / 200 req/s)');
    expect(lines.refundP50VsRefundWorkFloor!.bound).toBe('bound: refund work floor / bare floor 4.000x (40 / 10 ms)');
    expect(lines.refundThroughputVsRefundWorkFloor!.bound).toBe(
      'bound: refund work floor / bare floor 0.300x (60 / 200 req/s)',
    );
    expect(lines.getThroughputVsBaseline!.bound).toBeUndefined();
  });

  it('shows a bound it cannot compute, and never lets the bound decide the verdict', () => {
    const lines = byId(
      evaluateTargets({ ...onTheLimit, floorP50At1: undefined, floorRpsAt10: v(200, '3 errors') }, 'run'),
    );
    expect(lines.postP50VsWorkFloor).toMatchObject({
      verdict: 'MET',
      bound: 'bound: work floor / bare floor - (no bare floor figure)',
    });
    expect(lines.postThroughputVsWorkFloor).toMatchObject({
      verdict: 'MET',
      bound: 'bound: work floor / bare floor 0.500x (100 / 200 req/s; bare floor: 3 errors)',
    });
  });

  it('misses a line whose figure is missing, with the reason', () => {
    const lines = byId(evaluateTargets({ ...onTheLimit, workP50At1: undefined, refundRpsAt10: undefined }, 'run'));
    expect(lines.postP50VsWorkFloor).toMatchObject({
      value: null,
      valueText: '-',
      verdict: 'MISSED',
      reason: 'no work floor at 1 figure',
    });
    expect(lines.refundThroughputVsRefundWorkFloor).toMatchObject({
      verdict: 'MISSED',
      reason: 'no refunds at 10 figure',
    });
    expect(lines.getThroughputVsBaseline!.verdict).toBe('MET');
  });

  it('misses a ratio over a zero floor instead of dividing by it', () => {
    const lines = byId(evaluateTargets({ ...onTheLimit, workRpsAt10: v(0) }, 'run'));
    expect(lines.postThroughputVsWorkFloor).toMatchObject({ value: null, verdict: 'MISSED' });
    expect(lines.postThroughputVsWorkFloor!.reason).toMatch(/cannot divide 85 by 0/);
  });

  it('misses a line whose figure is flawed, showing the value and the flaw', () => {
    const lines = byId(
      evaluateTargets(
        { ...onTheLimit, postRpsAt10: v(95, '3 errors'), refundWorkRpsAt10: v(60, '5 callers, not 10') },
        'run',
      ),
    );
    expect(lines.postThroughputVsWorkFloor).toMatchObject({
      value: 0.95,
      verdict: 'MISSED',
      reason: 'token POST at 10: 3 errors',
    });
    expect(lines.refundThroughputVsRefundWorkFloor).toMatchObject({
      value: 0.85,
      verdict: 'MISSED',
      reason: 'refund work floor at 10: 5 callers, not 10',
    });
  });

  it('misses the GET line measured on another Node than 24', () => {
    const lines = byId(evaluateTargets({ ...onTheLimit, node: 'v20.20.2' }, 'run'));
    expect(lines.getThroughputVsBaseline).toMatchObject({
      value: 0.8,
      verdict: 'MISSED',
      reason: 'measured on Node v20.20.2, not Node 24',
    });
    const unnamed = byId(evaluateTargets({ ...onTheLimit, node: undefined }, 'run'));
    expect(unnamed.getThroughputVsBaseline!.reason).toBe('measured on Node unknown, not Node 24');
  });

  describe('subscriptions', () => {
    it('meets the storm ratio and the 1 GiB exactly on their limits, and misses them just past', () => {
      const lines = byId(evaluateTargets(atScale, 'subscriptions'));
      expect(lines.stormVsFloor).toMatchObject({
        value: 0.8,
        verdict: 'MET',
        detail: '80 / 100 charges/s, 10,000 / 10,000 due',
      });
      expect(lines.rss10kLive).toMatchObject({ value: 1024, valueText: '1024 MiB', verdict: 'MET' });
      const past = byId(
        evaluateTargets({ ...atScale, stormChargesPerSecond: v(79.9), workerPeakRssMiB: v(1024.6) }, 'subscriptions'),
      );
      expect(past.stormVsFloor).toMatchObject({ value: 0.799, verdict: 'MISSED' });
      expect(past.rss10kLive).toMatchObject({ value: 1025, verdict: 'MISSED' });
    });

    it('fills the dev-server storm line only on the dev server, and the real-server one only on the real server', () => {
      const dev = byId(evaluateTargets(atScale, 'subscriptions'));
      expect(dev.stormVsFloor!.verdict).toBe('MET');
      expect(dev.stormVsFloorRealServer).toMatchObject({
        value: null,
        verdict: 'MISSED',
        reason: 'not measured on the real server: this run was on the dev server (run with BENCH_TEMPORAL=server)',
      });
      const real = byId(
        evaluateTargets({ ...atScale, temporal: 'server', stormChargesPerSecond: v(70) }, 'subscriptions'),
      );
      expect(real.stormVsFloorRealServer).toMatchObject({ value: 0.7, verdict: 'MET' });
      expect(real.stormVsFloor).toMatchObject({ value: null, verdict: 'MISSED' });
      expect(real.stormVsFloor!.reason).toMatch(/^not measured on the dev server: .*BENCH_TEMPORAL=server/);
      expect(real.rss10kLive!.verdict).toBe('MET');
    });

    it('does not count a storm measured with fewer than 10,000 on either side, however good', () => {
      const lines = byId(
        evaluateTargets({ ...atScale, stormN: 3000, floorStormN: 9999, stormChargesPerSecond: v(300) }),
      );
      expect(lines.stormVsFloor).toMatchObject({
        value: 3,
        verdict: 'MISSED',
        detail: '300 / 100 charges/s, 3,000 / 9,999 due',
        reason: 'renewal storm measured with 3,000, not 10,000; floor storm measured with 9,999, not 10,000',
      });
    });

    it('does not count the RSS line from fewer live subscriptions', () => {
      const lines = byId(evaluateTargets({ ...atScale, liveN: 200, workerPeakRssMiB: v(400) }));
      expect(lines.rss10kLive).toMatchObject({
        value: 400,
        verdict: 'MISSED',
        detail: '200 live',
        reason: 'live subscriptions measured with 200, not 10,000',
      });
    });

    it('carries an incomplete storm as a flaw of its ratio', () => {
      const lines = byId(
        evaluateTargets({ ...atScale, floorStormChargesPerSecond: v(100, 'incomplete: 9990 of 10000') }),
      );
      expect(lines.stormVsFloor).toMatchObject({
        verdict: 'MISSED',
        reason: 'floor storm: incomplete: 9990 of 10000',
      });
    });

    it('misses a storm line without its floor', () => {
      const lines = byId(evaluateTargets({ ...atScale, floorStormChargesPerSecond: undefined }, 'subscriptions'));
      expect(lines.stormVsFloor).toMatchObject({ verdict: 'MISSED', reason: 'no floor storm figure' });
    });
  });

  it('formats an aligned block: MET or MISSED in one column, then the reason and the bound', () => {
    const block = formatTargets(evaluateTargets({ ...onTheLimit, workRpsAt10: undefined }, 'run'));
    expect(block[0]).toBe('Targets (issue 41): 4 of 5 MET');
    expect(block[1]).toMatch(
      /^ {2}GET throughput vs bare Koa \+ pg \(both on Node 24\) +0\.800x \(800 \/ 1000 req\/s\) +target >= 0\.8x +MET$/,
    );
    expect(block[2]).toMatch(
      / {2}1\.150x \(23 \/ 20 ms\) +target <= 1\.15x {2}MET {5}bound: work floor \/ bare floor 2\.000x \(20 \/ 10 ms\)$/,
    );
    expect(block[3]).toMatch(
      / {2}- +target >= 0\.85x {2}MISSED {2}no work floor at 10 figure; bound: work floor \/ bare floor - \(no work floor figure\)$/,
    );
    // The "target" and the verdict columns start at the same place on every line.
    const lines = block.slice(1);
    expect(new Set(lines.map((l) => l.indexOf('  target '))).size).toBe(1);
    expect(new Set(lines.map((l) => l.search(/ (MET|MISSED)\b/))).size).toBe(1);
  });
});
