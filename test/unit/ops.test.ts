import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import { WORKER_METRIC_NAMES } from '../../src/metrics/worker';

/**
 * ops/: the Prometheus scrape config, the alert rules (and their unit tests) and the Grafana
 * dashboard. Where promtool is installed (CI: .ci/run installs Debian's `prometheus` package),
 * they are checked by promtool itself (`check config`, `check rules`, `test rules`); everywhere,
 * their structure is checked here, and every metric they read is one the processes export.
 */
const ROOT = path.resolve(__dirname, '../..');
const PROMETHEUS_DIR = path.join(ROOT, 'ops/prometheus');
const DASHBOARD = path.join(ROOT, 'ops/grafana/dashboards/payment-platform.json');

const promtool = spawnSync('promtool', ['--version'], { stdio: 'ignore' }).status === 0;
const withPromtool = promtool ? it : it.skip;
if (!promtool && process.env.CI) {
  // .ci/run installs it; a CI without it says so (the YAML checks below still run).
  process.stderr.write('ops.test.ts: promtool not found; promtool checks skipped\n');
}

/** What the API and workers export (src/metrics/), the SDK's `temporal_*` and Prometheus's own. */
const API_METRICS = [
  'http_request_duration_seconds',
  'http_errors_total',
  'http_auth_failures_total',
  'http_requests_in_flight',
  'payments_stuck_created',
  'payments_stuck_processing',
  'invoices_stuck_processing',
  'refunds_stuck_pending',
  'workflows_stuck',
  'workflows_parked_on_bug',
  'event_deliveries_pending',
  'event_deliveries_overdue',
  'webhook_endpoints_disabled',
  'webhook_endpoints_failing',
  'webhook_endpoints_failing_seconds',
];
const KNOWN = new Set<string>([...API_METRICS, ...Object.values(WORKER_METRIC_NAMES), 'up']);
const PROMQL_WORDS = new Set([
  'sum',
  'max',
  'min',
  'avg',
  'by',
  'without',
  'rate',
  'increase',
  'histogram_quantile',
  'absent',
  'and',
  'or',
  'unless',
  'le',
  'on',
  'ignoring',
]);

/** Metric names an expression reads (identifiers outside label matchers and strings). */
function metricsIn(expr: string): string[] {
  const bare = expr
    .replace(/\{[^}]*\}/g, '')
    .replace(/\[[^\]]*\]/g, '')
    .replace(/"[^"]*"/g, '')
    .replace(/\b(by|without|on|ignoring)\s*\([^)]*\)/g, '');
  const names = bare.match(/[a-zA-Z_:][a-zA-Z0-9_:]*/g) ?? [];
  return names.filter((n) => !PROMQL_WORDS.has(n) && !/^\d/.test(n));
}

function isKnown(metric: string): boolean {
  if (metric.startsWith('temporal_') || metric.startsWith('process_') || metric.startsWith('nodejs_')) return true;
  const base = metric.replace(/_(bucket|count|sum)$/, '');
  return KNOWN.has(metric) || KNOWN.has(base);
}

interface Rule {
  alert?: string;
  record?: string;
  expr: string;
  for?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}

const rules = (): Rule[] =>
  (
    parse(fs.readFileSync(path.join(PROMETHEUS_DIR, 'alerts.yml'), 'utf8')) as { groups: Array<{ rules: Rule[] }> }
  ).groups.flatMap((g) => g.rules);

describe('ops/prometheus', () => {
  withPromtool('promtool check config: the scrape config and the rule files it loads are valid', () => {
    execFileSync('promtool', ['check', 'config', 'prometheus.yml'], { cwd: PROMETHEUS_DIR, stdio: 'pipe' });
  });

  withPromtool('promtool check rules: the alert rules are valid', () => {
    execFileSync('promtool', ['check', 'rules', 'alerts.yml'], { cwd: PROMETHEUS_DIR, stdio: 'pipe' });
  });

  withPromtool('promtool test rules: each alert fires when it should and not before', () => {
    const run = spawnSync('promtool', ['test', 'rules', 'alerts.test.yml'], { cwd: PROMETHEUS_DIR, encoding: 'utf8' });
    expect({ status: run.status, output: run.status === 0 ? '' : `${run.stdout}${run.stderr}` }).toEqual({
      status: 0,
      output: '',
    });
  });

  it('scrapes the API and worker jobs the rules name, and loads the rule file', () => {
    const config = parse(fs.readFileSync(path.join(PROMETHEUS_DIR, 'prometheus.yml'), 'utf8')) as {
      rule_files: string[];
      scrape_configs: Array<{ job_name: string }>;
    };
    expect(config.rule_files).toEqual(['alerts.yml']);
    const jobs = config.scrape_configs.map((c) => c.job_name);
    expect(jobs).toEqual(expect.arrayContaining(['payment-api', 'payment-worker']));
    const named = rules().flatMap((r) => [...r.expr.matchAll(/job="([^"]+)"/g)].map((m) => m[1]!));
    for (const job of named) expect(jobs).toContain(job);
  });

  it('has the alerts operators need, each with a duration, a severity and a summary', () => {
    const all = rules();
    expect(all.map((r) => r.alert)).toEqual(
      expect.arrayContaining([
        'PaymentsStuckCreated',
        'RefundsStuckPending',
        'WorkflowsStuck',
        'ActivityBugsParked',
        'EventDeliveryFailureRate',
        'EventDeliveriesOverdue',
        'WebhookEndpointAboutToBeDisabled',
        'WorkflowTaskScheduleToStartSlow',
        'ProviderErrorRatioHigh',
        'WorkerDown',
      ]),
    );
    for (const rule of all) {
      expect({ alert: rule.alert, for: rule.for }).toEqual({
        alert: expect.any(String),
        for: expect.stringMatching(/^\d+m$/),
      });
      expect(['critical', 'warning']).toContain(rule.labels?.severity);
      expect(rule.annotations?.summary).toEqual(expect.any(String));
    }
  });

  it('reads only metrics the processes export', () => {
    const unknown = rules()
      .flatMap((r) => metricsIn(r.expr))
      .filter((m) => !isKnown(m));
    expect(unknown).toEqual([]);
  });

  it('unit-tests every alert (alerts.test.yml)', () => {
    const tests = parse(fs.readFileSync(path.join(PROMETHEUS_DIR, 'alerts.test.yml'), 'utf8')) as {
      rule_files: string[];
      tests: Array<{ alert_rule_test: Array<{ alertname: string; exp_alerts: unknown[] }> }>;
    };
    expect(tests.rule_files).toEqual(['alerts.yml']);
    const firing = new Set(
      tests.tests.flatMap((t) => t.alert_rule_test.filter((a) => a.exp_alerts.length > 0).map((a) => a.alertname)),
    );
    expect(
      rules()
        .map((r) => r.alert)
        .filter((a) => !firing.has(a!)),
    ).toEqual([]);
  });
});

describe('ops/grafana dashboard', () => {
  interface Panel {
    type: string;
    title: string;
    id: number;
    gridPos: { x: number; y: number; w: number; h: number };
    datasource?: { type: string; uid: string };
    targets?: Array<{ expr: string; refId: string }>;
  }
  const dashboard = JSON.parse(fs.readFileSync(DASHBOARD, 'utf8')) as { uid: string; title: string; panels: Panel[] };
  const datasource = (
    parse(fs.readFileSync(path.join(ROOT, 'ops/grafana/provisioning/datasources/prometheus.yml'), 'utf8')) as {
      datasources: Array<{ uid: string; type: string }>;
    }
  ).datasources[0]!;
  const graphs = dashboard.panels.filter((p) => p.type !== 'row');

  it('is a dashboard of panels with unique ids, inside the 24-column grid, without overlaps', () => {
    expect(dashboard.uid).toBe('payment-platform');
    expect(new Set(dashboard.panels.map((p) => p.id)).size).toBe(dashboard.panels.length);
    const cells = new Set<string>();
    for (const p of dashboard.panels) {
      expect(p.gridPos.x + p.gridPos.w).toBeLessThanOrEqual(24);
      for (let x = p.gridPos.x; x < p.gridPos.x + p.gridPos.w; x++) {
        for (let y = p.gridPos.y; y < p.gridPos.y + p.gridPos.h; y++) {
          expect(cells.has(`${x},${y}`) ? `${p.title} overlaps at ${x},${y}` : 'ok').toBe('ok');
          cells.add(`${x},${y}`);
        }
      }
    }
  });

  it('queries the provisioned Prometheus datasource, for metrics the processes export', () => {
    expect(graphs.length).toBeGreaterThan(10);
    for (const p of graphs) {
      expect({ title: p.title, datasource: p.datasource }).toEqual({
        title: p.title,
        datasource: { type: datasource.type, uid: datasource.uid },
      });
      expect(p.targets?.length).toBeGreaterThan(0);
    }
    const unknown = graphs.flatMap((p) => p.targets!.flatMap((t) => metricsIn(t.expr))).filter((m) => !isKnown(m));
    expect(unknown).toEqual([]);
  });

  it('shows the money movements, the stuck records, the provider, event deliveries and the Temporal workers', () => {
    const exprs = graphs.flatMap((p) => p.targets!.map((t) => t.expr)).join('\n');
    for (const metric of [
      'payments_total',
      'refunds_total',
      'subscription_charges_total',
      'payments_stuck_created',
      'refunds_stuck_pending',
      'provider_call_duration_seconds_bucket',
      'provider_call_errors_total',
      'event_deliveries_total',
      'event_delivery_duration_seconds_bucket',
      'event_deliveries_overdue',
      'webhook_endpoints_failing',
      'emails_total',
      'http_request_duration_seconds_bucket',
      'temporal_workflow_task_schedule_to_start_latency_bucket',
    ]) {
      expect(exprs).toContain(metric);
    }
  });
});
