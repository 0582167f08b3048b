import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';
import pg from 'pg';
import { startEmbeddedPostgres } from '../dev/infra/embeddedPostgres';
import { openOrm, migrate } from '../src/db/orm';
import { createMerchant } from '../src/domain/merchants';
import { CursorCodec } from '../src/api/cursor';
import {
  OUT_DIR,
  ROOT,
  abort,
  children,
  cpuBetween,
  envInt,
  formatCpu,
  freePorts,
  getOk,
  installSignalHandlers,
  beginRun,
  buildForBench,
  onTeardown,
  sampleCpu,
  say,
  spawnChild,
  tail,
  teardown,
  waitFor,
} from './stack';

/**
 * `npm run bench:lists`: GET /payments pages at a million payments (PRODUCT.md, "Lists"; issue 14).
 *
 * A throw-away embedded PostgreSQL gets the migrations, two merchants, BENCH_LIST_ROWS payments of
 * the measured merchant's test environment (1,000,000) and BENCH_LIST_OTHER_ROWS of the other
 * merchant (100,000), written by one `insert ... select from generate_series` (two payments per
 * creation instant, so the id tie-break is exercised). Then the real API process (src/main/api.ts,
 * compiled as the bench runs it; rate limiting on with a limit above the load) answers autocannon,
 * each scenario with 1 connection (a page's own latency) and BENCH_LIST_CONNECTIONS (10):
 *   first page, a page from the middle (a cursor at row N/2), the last page, the first page of
 *   a 10 % status filter, and a first page of 100.
 * The deep cursors are minted with the API's own codec and CURSOR_SECRET (no 500,000-row walk
 * needed to reach the middle); then BENCH_LIST_WALK_PAGES (200) pages of 100 are walked from the
 * middle with the API's own cursors, each timed, checking order and that no id comes twice.
 * Finally EXPLAIN ANALYZE of the keyset query at the middle against the same page by OFFSET.
 *
 * Knobs: BENCH_LIST_ROWS, BENCH_LIST_OTHER_ROWS, BENCH_DURATION_S (5), BENCH_WARMUP_S (1),
 * BENCH_LIST_CONNECTIONS (10), BENCH_LIST_WALK_PAGES (200). Writes bench/.out/lists.json.
 */

const ROWS = envInt('BENCH_LIST_ROWS', 1_000_000);
const OTHER_ROWS = envInt('BENCH_LIST_OTHER_ROWS', 100_000, 0);
const DURATION_S = envInt('BENCH_DURATION_S', 5);
const WARMUP_S = envInt('BENCH_WARMUP_S', 1, 0);
const CONNECTIONS = envInt('BENCH_LIST_CONNECTIONS', 10);
const WALK_PAGES = envInt('BENCH_LIST_WALK_PAGES', 200, 0);
const CURSOR_SECRET = 'bench-cursor-secret-0123456789abcdef';
const RUN_TIMEOUT_MS = 600_000 + Math.ceil(ROWS / 1000) * 200;

interface Scenario {
  name: string;
  connections: number;
  requestsPerSec: number;
  latencyMs: { p50: number; p90: number; p99: number; max: number; mean: number };
  status2xx: number;
  non2xx: number;
  errors: number;
  cpuCores: Record<string, number>;
}

function cannon(opts: autocannon.Options): Promise<autocannon.Result> {
  return new Promise((resolve, reject) => {
    autocannon(opts, (err, result) => (err ? reject(err) : resolve(result)));
  });
}

async function measure(name: string, url: string, headers: Record<string, string>, connections: number) {
  if (WARMUP_S > 0) await cannon({ url, headers, connections, duration: WARMUP_S });
  const before = sampleCpu();
  const t0 = process.hrtime.bigint();
  const r = await cannon({ url, headers, connections, duration: DURATION_S });
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
  const result: Scenario = {
    name,
    connections,
    requestsPerSec: r.requests.average,
    latencyMs: { p50: r.latency.p50, p90: r.latency.p90, p99: r.latency.p99, max: r.latency.max, mean: r.latency.mean },
    status2xx: r['2xx'],
    non2xx: r.non2xx,
    errors: r.errors,
    cpuCores: cpuBetween(before, sampleCpu(), seconds),
  };
  say(
    `  ${name}, ${connections} conn.: ${result.requestsPerSec.toFixed(0)} req/s, p50 ${result.latencyMs.p50} ms, ` +
      `p99 ${result.latencyMs.p99} ms, 2xx ${result.status2xx}, non-2xx ${result.non2xx}, errors ${result.errors}; ` +
      `CPU ${formatCpu(result.cpuCores)}`,
  );
  return result;
}

/** Nearest-rank percentile of ascending values, to 0.1 ms. */
function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return 0;
  const rank = Math.min(sorted.length, Math.max(1, Math.ceil((p / 100) * sorted.length)));
  return Number(sorted[rank - 1]!.toFixed(1));
}

/** `count` payments of one merchant's test environment, ids from `firstId` on, two per creation instant. */
function insertPaymentsSql(merchantId: string, firstId: number, count: number): { text: string; values: unknown[] } {
  return {
    text: `insert into payments (id, merchant_id, external_id, environment, processor, amount_minor, currency, status,
             amount_refunded_minor, amount_pending_refund_minor, provider_transaction_id, redirect_url, card_token,
             save_card_enabled, saved_card_token, customer, billing, metadata, description, callback_url, return_url,
             failure_code, failure_message, expires_at, created_at, updated_at)
           select 'pay_' || upper(lpad(to_hex(g), 26, '0')), $1, 'bench-' || g, 'test', 'sandbox', 1234, 'USD',
                  case g % 10 when 0 then 'failed' when 1 then 'refunded' else 'succeeded' end,
                  case g % 10 when 1 then 1234 else 0 end, 0, 'tx_' || g, null, null, false, null,
                  '{"email":"customer@example.com"}'::jsonb, null, null, null, null, null,
                  case g % 10 when 0 then 'card_declined' end, case g % 10 when 0 then 'Declined.' end,
                  t + interval '1 day', t, t
             from generate_series($2::bigint, $3::bigint) g,
                  lateral (select timestamptz '2026-01-01T00:00:00Z' + (g / 2) * interval '61 seconds' as t) at`,
    values: [merchantId, firstId, firstId + count - 1],
  };
}

async function main(): Promise<void> {
  const { startedAt, git, machine, watchdog } = beginRun(RUN_TIMEOUT_MS);

  const [pgPort, apiPort, deadPort] = (await freePorts(3)) as [number, number, number];
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'payments-bench-lists-'));
  fs.chmodSync(dir, 0o755);
  onTeardown('removing the temp dir', async () => fs.rmSync(dir, { recursive: true, force: true }));
  const logDir = path.join(dir, 'logs');
  fs.mkdirSync(logDir);
  // The API is measured as deployed, compiled (bench/stack.ts; BENCH_SOURCES=1 runs the sources).
  const built = buildForBench();
  const pgServer = await startEmbeddedPostgres({
    dir: path.join(dir, 'pg'),
    port: pgPort,
    database: 'payments',
    ephemeral: true,
    onLog: (m) => fs.appendFileSync(path.join(logDir, 'postgres.log'), m),
  });
  onTeardown('stopping PostgreSQL', pgServer.stop);
  installSignalHandlers();

  const orm = await openOrm({ databaseUrl: pgServer.databaseUrl, poolMax: 2 });
  await migrate(orm);
  const measured = await createMerchant(orm.em.fork(), { name: 'Bench lists', email: 'bench@example.com' });
  const other = await createMerchant(orm.em.fork(), { name: 'Bench lists (other)', email: 'other@example.com' });
  await orm.close();
  const merchantId = measured.merchant.id;
  const basic = `Basic ${Buffer.from(`${measured.apiKey.publicKey}:${measured.secretKey}`).toString('base64')}`;

  const db = new pg.Client({ connectionString: pgServer.databaseUrl });
  await db.connect();
  onTeardown('closing the bench connection', () => db.end());
  say(
    `\nInserting ${ROWS.toLocaleString('en')} payments (and ${OTHER_ROWS.toLocaleString('en')} of another merchant)...`,
  );
  const t0 = Date.now();
  await db.query(insertPaymentsSql(merchantId, 1, ROWS));
  if (OTHER_ROWS > 0) await db.query(insertPaymentsSql(other.merchant.id, ROWS + 1, OTHER_ROWS));
  await db.query('analyze payments');
  const insertS = (Date.now() - t0) / 1000;
  const size = await db.query<{ table: string; indexes: string }>(
    `select pg_size_pretty(pg_table_size('payments')) as table, pg_size_pretty(pg_indexes_size('payments')) as indexes`,
  );
  say(`  done in ${insertS.toFixed(1)} s; payments: ${size.rows[0]?.table} table, ${size.rows[0]?.indexes} indexes`);

  const apiUrl = `http://127.0.0.1:${apiPort}`;
  await built;
  spawnChild(
    'api',
    'src/main/api.ts',
    {
      ...process.env,
      DATABASE_URL: pgServer.databaseUrl,
      DATABASE_POOL_MAX: '10',
      // Lists never call Temporal: the API's connection is lazy, to a port where nothing listens.
      TEMPORAL_ADDRESS: `127.0.0.1:${deadPort}`,
      PORT: String(apiPort),
      LOG_LEVEL: 'warn',
      DATA_DIR: dir,
      CURSOR_SECRET,
      // Limiting on, above the load: every request goes through the limiter, none is refused.
      RATE_LIMIT_PER_SECOND: '10000',
      RATE_LIMIT_BURST: '20000',
      // Load, not quotas, is measured: the per-merchant quotas and the sandbox's ledger bound are off (decision 0079).
      QUOTA_OPEN_HOSTED_PAYMENTS: '0',
      QUOTA_LIVE_TEST_SUBSCRIPTIONS: '0',
      QUOTA_REFUNDS_PER_PAYMENT: '0',
      SANDBOX_MAX_LEDGER_ENTRIES: '0',
    },
    logDir,
  );
  await waitFor('the API (/healthz)', 60_000, () => getOk(`${apiUrl}/healthz`));
  await waitFor('GET /payments', 30_000, () => getOk(`${apiUrl}/payments`, { authorization: basic }));

  // Deep positions, minted with the API's own codec (what a walk to there would have been given).
  const codec = new CursorCodec(CURSOR_SECRET);
  const positionAt = async (offset: number) => {
    const { rows } = await db.query<{ id: string; created_at: Date }>(
      `select id, created_at from payments where merchant_id = $1 and environment = 'test'
        order by created_at desc, id desc offset $2 limit 1`,
      [merchantId, offset],
    );
    return { createdAt: rows[0]!.created_at, id: rows[0]!.id };
  };
  const binding = { list: 'payments', merchantId, environment: 'test' };
  const middle = await positionAt(Math.floor(ROWS / 2));
  const middleCursor = codec.encode(middle, binding);
  const endCursor = codec.encode(await positionAt(ROWS - 15), binding);
  const headers = { authorization: basic };

  const targets: Array<[string, string]> = [
    ['first page (limit 20)', '/payments'],
    [`middle page (after row ${Math.floor(ROWS / 2).toLocaleString('en')})`, `/payments?cursor=${middleCursor}`],
    ['last page', `/payments?cursor=${endCursor}`],
    ['first page, status=failed (10 %)', '/payments?status=failed'],
    ['first page, limit 100', '/payments?limit=100'],
  ];
  // Each answer is checked once before it is measured.
  for (const [name, url] of targets) {
    const res = await fetch(`${apiUrl}${url}`, { headers });
    const body = (await res.json()) as { payments?: unknown[] };
    if (res.status !== 200 || !Array.isArray(body.payments) || body.payments.length === 0) {
      throw new Error(`${name}: ${res.status} ${JSON.stringify(body).slice(0, 300)}`);
    }
  }
  say(`\nScenarios (${WARMUP_S} s warm-up + ${DURATION_S} s each):`);
  const scenarios: Scenario[] = [];
  for (const [name, url] of targets) {
    for (const connections of [1, CONNECTIONS])
      scenarios.push(await measure(name, `${apiUrl}${url}`, headers, connections));
  }

  // A walk of pages of 100 from the middle, with the API's own cursors.
  say(`\nWalking ${WALK_PAGES} pages of 100 from the middle...`);
  const walkMs: number[] = [];
  const seen = new Set<string>();
  let duplicates = 0;
  let outOfOrder = 0;
  let last: { createdAt: string; id: string } | undefined;
  let cursor: string | null = middleCursor;
  for (let page = 0; page < WALK_PAGES && cursor; page++) {
    const started = performance.now();
    const res = await fetch(`${apiUrl}/payments?limit=100&cursor=${cursor}`, { headers });
    const body = (await res.json()) as {
      payments: Array<{ id: string; createdAt: string }>;
      nextCursor: string | null;
    };
    walkMs.push(performance.now() - started);
    if (res.status !== 200) throw new Error(`walk page ${page}: ${res.status} ${JSON.stringify(body).slice(0, 300)}`);
    for (const p of body.payments) {
      if (seen.has(p.id)) duplicates++;
      seen.add(p.id);
      if (last && (p.createdAt > last.createdAt || (p.createdAt === last.createdAt && p.id >= last.id))) outOfOrder++;
      last = p;
    }
    cursor = body.nextCursor;
  }
  const sortedWalk = [...walkMs].sort((a, b) => a - b);
  const walk = {
    pages: walkMs.length,
    items: seen.size,
    duplicates,
    outOfOrder,
    p50Ms: percentile(sortedWalk, 50),
    p99Ms: percentile(sortedWalk, 99),
    maxMs: percentile(sortedWalk, 100),
  };
  say(
    `  ${walk.pages} pages, ${walk.items} payments: p50 ${walk.p50Ms} ms, p99 ${walk.p99Ms} ms, max ${walk.maxMs} ms; ` +
      `${duplicates} duplicates, ${outOfOrder} out of order`,
  );

  // The plan: keyset at the middle vs the same page by OFFSET.
  const explain = async (sql: string, values: unknown[]) => {
    const { rows } = await db.query<{ 'QUERY PLAN': string }>(`explain (analyze, buffers) ${sql}`, values);
    return rows.map((r) => r['QUERY PLAN']);
  };
  const keysetPlan = await explain(
    `select * from payments where merchant_id = $1 and environment = 'test' and (created_at, id) < ($2, $3)
      order by created_at desc, id desc limit 21`,
    [merchantId, middle.createdAt, middle.id],
  );
  const offsetPlan = await explain(
    `select * from payments where merchant_id = $1 and environment = 'test'
      order by created_at desc, id desc offset $2 limit 21`,
    [merchantId, Math.floor(ROWS / 2) + 1],
  );
  const execution = (plan: string[]) => plan.find((l) => l.startsWith('Execution Time')) ?? '?';
  say(`\nKeyset at the middle: ${execution(keysetPlan)}; the same page by OFFSET: ${execution(offsetPlan)}`);
  say(`  keyset plan: ${keysetPlan.slice(0, 3).join(' | ')}`);

  say(`\nResults (${startedAt.toISOString()}, ${ROWS.toLocaleString('en')} payments of the merchant):\n`);
  // autocannon's percentiles are whole milliseconds; the mean tells sub-millisecond pages apart.
  const header = [
    'scenario',
    'conns',
    'req/s',
    'mean ms',
    'p50 ms',
    'p90 ms',
    'p99 ms',
    'max ms',
    '2xx',
    'non-2xx',
    'errors',
  ];
  const table = [
    header,
    ...scenarios.map((s) => [
      s.name,
      String(s.connections),
      s.requestsPerSec.toFixed(0),
      s.latencyMs.mean.toFixed(2),
      String(s.latencyMs.p50),
      String(s.latencyMs.p90),
      String(s.latencyMs.p99),
      String(s.latencyMs.max),
      String(s.status2xx),
      String(s.non2xx),
      String(s.errors),
    ]),
  ];
  const widths = header.map((_, i) => Math.max(...table.map((row) => (row[i] ?? '').length)));
  for (const row of table) {
    say(row.map((cell, i) => (i === 0 ? cell.padEnd(widths[i]!) : cell.padStart(widths[i]!))).join('  '));
  }
  const ok = duplicates === 0 && outOfOrder === 0 && scenarios.every((s) => s.non2xx === 0 && s.errors === 0);
  const output = {
    date: startedAt.toISOString(),
    machine,
    git,
    settings: {
      rows: ROWS,
      otherRows: OTHER_ROWS,
      durationS: DURATION_S,
      warmupS: WARMUP_S,
      connections: CONNECTIONS,
      walkPages: WALK_PAGES,
      rateLimit: { perSecond: 10000, burst: 20000 },
    },
    insertS: Number(insertS.toFixed(1)),
    tableSize: size.rows[0],
    scenarios,
    walk,
    plans: { keyset: keysetPlan, offset: offsetPlan },
    ok,
  };
  fs.mkdirSync(OUT_DIR, { recursive: true });
  fs.writeFileSync(path.join(OUT_DIR, 'lists.json'), `${JSON.stringify(output, null, 2)}\n`);
  say(`\nWrote ${path.relative(ROOT, path.join(OUT_DIR, 'lists.json'))}. ${ok ? 'OK' : 'FAILED'}`);
  await teardown();
  clearTimeout(watchdog);
  process.exit(ok ? 0 : 1);
}

main().catch(async (err: unknown) => {
  const logs = children.map((c) => `--- ${c.name} log (tail) ---\n${tail(c.logFile)}`).join('\n');
  await abort(`Benchmark failed: ${(err as Error).stack ?? String(err)}${logs ? `\n${logs}` : ''}`);
});
