import { checkMetrics, parseCounters, parseStartTime, summarize, type Scrape } from '../../dev/chaos/metricsCheck';

const W1 = 'http://127.0.0.1:9465/metrics';
const W2 = 'http://127.0.0.1:9466/metrics';
const values = (payments: number, refunds = 0, charges = 0) => ({
  payments_total: payments,
  refunds_total: refunds,
  subscription_charges_total: charges,
});
const scrape = (endpoint: string, at: number, v: ReturnType<typeof values> | null, startTime = 1): Scrape => ({
  endpoint,
  at,
  values: v,
  ...(v ? { startTime } : {}),
});

describe('chaos metrics check (pure)', () => {
  it('reads the succeeded series of the checked counters, summing their other labels', () => {
    const text = [
      '# HELP payments_total Payments by outcome',
      '# TYPE payments_total counter',
      'payments_total{outcome="succeeded",service_name="temporal-core-sdk"} 7',
      'payments_total{outcome="failed",service_name="temporal-core-sdk"} 2',
      'payments_total{outcome="succeeded",task_queue="other"} 1',
      'refunds_total{outcome="succeeded"} 3',
      'subscription_charges_total{outcome="succeeded"} 4',
      'temporal_workflow_completed{namespace="default"} 99',
    ].join('\n');
    expect(parseCounters(text)).toEqual(values(8, 3, 4));
    expect(parseStartTime(`${text}\nprocess_start_time_seconds{service_name="x"} 1700000000\n`)).toBe(1700000000);
    expect(parseStartTime(text)).toBeUndefined();
  });

  it('adds increases across endpoints, and a drop as a restart whose new value is all increase', () => {
    const s = summarize([
      scrape(W1, 1, values(2)),
      scrape(W2, 1, values(1)),
      scrape(W1, 2, values(5)),
      scrape(W1, 3, null),
      scrape(W1, 4, values(1)),
      scrape(W2, 4, values(4)),
    ]);
    expect(s.counted.payments_total).toBe(5 + 1 + 4);
    expect(s.outages).toEqual([
      { endpoint: W1, at: 3, kind: 'unanswered' },
      { endpoint: W1, at: 4, kind: 'restarted' },
    ]);
  });

  const recorded = values(10, 2, 3);

  it('passes when the counters match the database and each kill shows', () => {
    const result = checkMetrics({
      // The successor (another start time) counted 6, 1 and 2 since its start.
      scrapes: [scrape(W1, 1000, values(4, 1, 1)), scrape(W1, 2000, null), scrape(W1, 5000, values(6, 1, 2), 2)],
      recorded,
      workerKills: [1500],
    });
    expect(result.violations).toEqual([]);
    expect(result.notes?.[0]).toBe('payments_total: counted 10 of 10 recorded (0 lost with killed workers)');
  });

  it('tolerates counts lost with a killed worker, never counts above the database', () => {
    const lost = checkMetrics({
      scrapes: [scrape(W1, 1000, values(4, 2, 3)), scrape(W1, 2000, null), scrape(W1, 3000, values(5, 0, 0), 2)],
      recorded,
      workerKills: [1500],
    });
    expect(lost.violations).toEqual([]);
    expect(lost.notes?.[0]).toBe('payments_total: counted 9 of 10 recorded (1 lost with killed workers)');

    const twice = checkMetrics({ scrapes: [scrape(W1, 1000, values(11, 2, 3))], recorded, workerKills: [] });
    expect(twice.violations).toEqual(['payments_total: counted 11, recorded 10 (counted twice)']);
  });

  it('without a worker killed, a shortfall is a violation', () => {
    const result = checkMetrics({ scrapes: [scrape(W1, 1000, values(9, 2, 3))], recorded, workerKills: [] });
    expect(result.violations).toEqual(['payments_total: counted 9, recorded 10, with no worker killed']);
  });

  it('a worker kill the metrics never show is a violation', () => {
    const result = checkMetrics({
      scrapes: [scrape(W1, 1000, values(10, 2, 3)), scrape(W1, 60_000, values(10, 2, 3))],
      recorded,
      workerKills: [2000],
    });
    expect(result.violations).toEqual([`worker kill at ${new Date(2000).toISOString()} not visible in the metrics`]);
  });
});
