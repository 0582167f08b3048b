import path from 'node:path';
import { writeResults } from './report';
import { timerStorm } from './floor/scenarios';
import { createMany, postJson } from './subscriptions/api';
import { round } from './subscriptions/measure';
import { startSubsStack } from './subscriptions/setup';
import {
  OUT_DIR,
  abort,
  beginRun,
  children,
  cpuBetween,
  envInt,
  sampleCpu,
  say,
  settledLedger,
  sleep,
  stackCores,
  tail,
  teardown,
} from './stack';

/**
 * `npm run bench:clocks` (issue 45 item 3, decision 0090): BENCH_CLOCK_SUBS (100) monthly
 * subscriptions on ONE test clock, advanced by BENCH_CLOCK_DAYS (365) days in one advance: 12
 * renewals each (1,200 charges), timed from the advance's POST until the clock reads `ready`.
 * Then, in the same run, the renewal-storm floor for the same number of charges (bench/floor/: as
 * many minimal workflows due at one instant, each one no-op local activity). The stack is the
 * subscription bench's (bench/subscriptions/setup.ts): the production build, one worker.
 *
 * Lines: ready in at most 60 s; the advance within 1.5x of the floor's time for the same number of
 * charges (advance seconds / (charges / floor charges per second)). Money check: each of the
 * clock's invoices paid exactly once in the sandbox ledger, 1 + 12 per subscription.
 *
 * Knobs: BENCH_CLOCK_SUBS (100), BENCH_CLOCK_DAYS (365), BENCH_CLOCK_INTERVAL_DAYS (30),
 * BENCH_CLOCK_CONCURRENCY (10), BENCH_CLOCK_TIMEOUT_S (600), and the floor's BENCH_FLOOR (1).
 */
const SUBS = envInt('BENCH_CLOCK_SUBS', 100);
const DAYS = envInt('BENCH_CLOCK_DAYS', 365);
const INTERVAL_DAYS = envInt('BENCH_CLOCK_INTERVAL_DAYS', 30);
const CONCURRENCY = envInt('BENCH_CLOCK_CONCURRENCY', 10);
const TIMEOUT_S = envInt('BENCH_CLOCK_TIMEOUT_S', 600);
const DAY_MS = 86_400_000;
const START = Date.parse('2027-01-01T00:00:00.000Z');

async function main(): Promise<void> {
  const { startedAt, git, machine, watchdog } = beginRun(TIMEOUT_S * 1000);
  const stack = await startSubsStack((s) => say(`worker NODE_OPTIONS: ${s.workerNodeOptions || '(none)'}`));
  const renewalsEach = Math.floor(DAYS / INTERVAL_DAYS);
  const charges = SUBS * renewalsEach;
  say(`\n${SUBS} subscriptions every ${INTERVAL_DAYS} days on one clock, advanced ${DAYS} days: ${charges} renewals`);

  const clock = await postJson(`${stack.apiUrl}/test-clocks`, stack.headers, {
    frozenTime: new Date(START).toISOString(),
    name: 'bench',
  });
  const clockId = clock.json?.id as string;
  if (clock.status !== 200 || !clockId) throw new Error(`clock not created: ${clock.status} ${clock.text}`);
  const creation = await createMany(stack.apiUrl, stack.headers, SUBS, CONCURRENCY, (i) => {
    const externalId = `${stack.runTag}-clock-${i}`;
    return {
      externalId,
      k: 0,
      body: {
        amount: 10,
        currency: 'USD',
        billingIntervalDays: INTERVAL_DAYS,
        externalId,
        cardToken: 'tok_success',
        testClock: clockId,
      },
    };
  });
  if (creation.failed.length > 0)
    throw new Error(`${creation.failed.length} creates failed: ${creation.failed[0]!.error}`);
  say(
    `created ${creation.created.length} in ${round(creation.seconds)} s` +
      (Object.keys(creation.otherAnswers).length > 0
        ? ` (other answers on the way: ${JSON.stringify(creation.otherAnswers)})`
        : ''),
  );

  const target = new Date(START + DAYS * DAY_MS).toISOString();
  const cpu0 = sampleCpu();
  const t0 = performance.now();
  const advanced = await postJson(`${stack.apiUrl}/test-clocks/${clockId}/advance`, stack.headers, {
    frozenTime: target,
  });
  if (advanced.status !== 200) throw new Error(`advance refused: ${advanced.status} ${advanced.text}`);
  for (;;) {
    const res = await fetch(`${stack.apiUrl}/test-clocks/${clockId}`, { headers: stack.headers });
    const body = (await res.json()) as { status: string; frozenTime: string };
    if (body.status === 'ready' && body.frozenTime === target) break;
    if (performance.now() - t0 > TIMEOUT_S * 1000) throw new Error('the clock never became ready');
    await sleep(100);
  }
  const advanceSeconds = (performance.now() - t0) / 1000;
  const advanceCores = cpuBetween(cpu0, sampleCpu(), advanceSeconds);
  const advanceCpuMsPerCharge = round((stackCores(advanceCores) * advanceSeconds * 1000) / charges, 1);
  say(
    `advance: ready after ${round(advanceSeconds, 2)} s (${round(charges / advanceSeconds)} renewals/s; ` +
      `stack CPU ${advanceCpuMsPerCharge} ms per renewal; cores ${JSON.stringify(advanceCores)})`,
  );

  // Money check: 1 + renewalsEach paid invoices per subscription, each captured exactly once.
  const { rows } = await stack.db.query<{ id: string }>(
    `select i.id from invoices i join subscriptions s on s.id = i.subscription_id
      where s.test_clock_id = $1 and i.status = 'paid'`,
    [clockId],
  );
  const paid = new Set(rows.map((r) => r.id));
  const captures = (await settledLedger(stack.sandboxUrl)).filter(
    (e) => e.type === 'capture' && e.status === 'succeeded' && paid.has(String(e.metadata?.invoiceId)),
  );
  const perInvoice = new Map<string, number>();
  for (const c of captures)
    perInvoice.set(String(c.metadata!.invoiceId), (perInvoice.get(String(c.metadata!.invoiceId)) ?? 0) + 1);
  const moneyOk =
    paid.size === SUBS * (1 + renewalsEach) &&
    perInvoice.size === paid.size &&
    [...perInvoice.values()].every((n) => n === 1);
  say(`money check: ${paid.size} paid invoices, ${captures.length} captures: ${moneyOk ? 'OK' : 'FAILED'}`);

  const floor = stack.floor
    ? await timerStorm(stack.floor, {
        n: charges,
        dueInS: 10 + Math.ceil(charges / 100),
        concurrency: 20,
        timeoutS: 300,
      })
    : undefined;
  const floorSeconds = floor?.chargesPerSecond ? charges / floor.chargesPerSecond : null;
  const ratio = floorSeconds ? round(advanceSeconds / floorSeconds, 2) : null;
  const lines = {
    readyWithin60s: { value: round(advanceSeconds, 2), target: 60, met: advanceSeconds <= 60 },
    withinFloor: { value: ratio, target: 1.5, met: ratio !== null && ratio <= 1.5, floorSeconds },
  };
  say(`\nTargets (issue 45 item 3):`);
  say(`  ready in <= 60 s: ${lines.readyWithin60s.value} s  ${lines.readyWithin60s.met ? 'MET' : 'MISSED'}`);
  say(
    `  within 1.5x of the floor for ${charges} charges (${floorSeconds === null ? 'no floor' : `${round(floorSeconds, 2)} s`}): ` +
      `${ratio ?? '-'}x  ${lines.withinFloor.met ? 'MET' : 'MISSED'}`,
  );

  writeResults(path.join(OUT_DIR, 'clocks-latest.json'), {
    date: startedAt.toISOString(),
    machine,
    git,
    settings: { subs: SUBS, days: DAYS, intervalDays: INTERVAL_DAYS, concurrency: CONCURRENCY },
    creation: { created: creation.created.length, seconds: round(creation.seconds, 2) },
    advance: {
      seconds: round(advanceSeconds, 3),
      charges,
      renewalsPerSecond: round(charges / advanceSeconds, 1),
      cpu: { cores: advanceCores, stackCpuMsPerUnit: advanceCpuMsPerCharge },
    },
    moneyCheck: { ok: moneyOk, paidInvoices: paid.size, captures: captures.length },
    ...(floor ? { floor } : {}),
    lines,
  });
  await teardown();
  clearTimeout(watchdog);
  process.exit(moneyOk ? 0 : 1);
}

main().catch(async (err: unknown) => {
  const logs = children.map((c) => `--- ${c.name} log (tail) ---\n${tail(c.logFile)}`).join('\n');
  await abort(`Benchmark failed: ${(err as Error).stack ?? String(err)}${logs ? `\n${logs}` : ''}`);
});
