import {
  ProviderCallLimiter,
  ProviderCallsLimitedError,
  type ProviderCallLimits,
} from '../../src/providers/callLimits';

/** A limiter on a clock the test moves; `caller` names the activity asking (undefined: none). */
function limiter(limits: ProviderCallLimits) {
  let now = 1_000_000;
  let caller: string | undefined;
  const l = new ProviderCallLimiter(limits, { now: () => now, callerKey: () => caller, random: () => 0 });
  return {
    l,
    advance: (ms: number) => (now += ms),
    as: (key: string | undefined) => (caller = key),
  };
}

function refusal(admit: () => unknown): ProviderCallsLimitedError {
  try {
    admit();
  } catch (err) {
    if (err instanceof ProviderCallsLimitedError) return err;
    throw err;
  }
  throw new Error('admitted');
}

describe('per-merchant provider call limits (issue 44, item 8; decision 0085)', () => {
  it('a burst passes, then calls pass at the sustained rate; another merchant is not affected', () => {
    const { l, advance, as } = limiter({ perSecond: 10, burst: 3, concurrency: 0 });
    as(undefined);
    for (let i = 0; i < 3; i++) l.admit('mer_a')();
    const refused = refusal(() => l.admit('mer_a'));
    expect(refused.limit).toBe('rate');
    expect(refused.retryAfterMs).toBe(100);
    l.admit('mer_b')(); // B's bucket is its own
    advance(100);
    l.admit('mer_a')();
  });

  it('a refused caller is given its turn: it comes back then and passes, ahead of newcomers', () => {
    const { l, advance, as } = limiter({ perSecond: 10, burst: 1, concurrency: 0 });
    as('wf-1/run/1');
    l.admit('mer_a')();
    as('wf-2/run/1');
    expect(refusal(() => l.admit('mer_a')).retryAfterMs).toBe(100);
    as('wf-3/run/1');
    expect(refusal(() => l.admit('mer_a')).retryAfterMs).toBe(200);
    advance(50);
    as('wf-2/run/1');
    expect(refusal(() => l.admit('mer_a')).retryAfterMs).toBe(50); // too early: the rest of its wait
    advance(50);
    l.admit('mer_a')(); // its turn
    as('wf-4/run/1');
    expect(refusal(() => l.admit('mer_a')).retryAfterMs).toBe(200); // behind wf-3
    advance(100);
    as('wf-3/run/1');
    l.admit('mer_a')();
  });

  it('calls in flight are capped per merchant; a finished call frees its place', () => {
    const { l, as } = limiter({ perSecond: 0, burst: 1, concurrency: 2 });
    as(undefined);
    const first = l.admit('mer_a');
    l.admit('mer_a');
    const refused = refusal(() => l.admit('mer_a'));
    expect(refused.limit).toBe('concurrency');
    expect(refused.retryAfterMs).toBeGreaterThanOrEqual(50);
    l.admit('mer_b')();
    first();
    first(); // released once only
    l.admit('mer_a');
    expect(refusal(() => l.admit('mer_a')).limit).toBe('concurrency');
  });

  it('no limits: disabled, every call admitted', () => {
    const { l } = limiter({ perSecond: 0, burst: 1, concurrency: 0 });
    expect(l.enabled).toBe(false);
    for (let i = 0; i < 1000; i++) l.admit('mer_a');
  });
});

describe('a caller refused at the limit in flight', () => {
  it('is given its turn at once (its token taken), to come back when a call should have ended', () => {
    let now = 0;
    let caller: string | undefined;
    const l = new ProviderCallLimiter(
      { perSecond: 100, burst: 10, concurrency: 1 },
      { now: () => now, callerKey: () => caller, random: () => 0 },
    );
    caller = 'wf-1/run/1';
    const first = l.admit('mer_a');
    now = 100;
    caller = 'wf-2/run/1';
    const refused = refusal(() => l.admit('mer_a'));
    // The first started at 0; a call takes 250 ms until one is measured.
    expect(refused).toMatchObject({ limit: 'concurrency', retryAfterMs: 150 });
    now = 250;
    first();
    caller = 'wf-3/run/1';
    l.admit('mer_a')(); // a newcomer while the place is free
    caller = 'wf-2/run/1';
    l.admit('mer_a')(); // its turn, on the token it was given
  });
});
