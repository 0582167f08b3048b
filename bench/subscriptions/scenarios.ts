import { timerStorm, type TimerStormFloor } from '../floor/scenarios';
import {
  printAlive,
  printCreation,
  printCreationStart,
  printIdle,
  printMoneyCheck,
  printProgress,
  printStorm,
  printWarmup,
  announce,
} from '../report';
import { sampleCpu, settledLedger, sleep } from '../stack';
import { createMany, requestProbe, probeSummary, type ProbeResult } from './api';
import {
  AMOUNT,
  BILLING_DAY_S,
  CLIENT_TIMEOUT_MS,
  CONCURRENCY,
  DUE_IN_S,
  EVERGREEN_DAYS,
  FLOOR_STORM_DUE_IN_S,
  FLOOR_STORM_N,
  FLOOR_STORM_TIMEOUT_S,
  IDLE_S,
  N,
  SAFETY_PCT,
  STORM_TIMEOUT_S,
  WARMUP,
} from './knobs';
import { mib, percentile, phaseCpu, round, type RssPoint } from './measure';
import type { SubsStack } from './setup';

/**
 * The subscription bench's phases, one function each, in the order bench/subscriptions.ts runs
 * them. Each sets the sampler's phase, measures, and hands its figures to bench/report.ts.
 */

/** A storm subscription's body: one first period of `k` billing days, then an evergreen phase. */
function subscriptionBody(externalId: string, k?: number) {
  return {
    amount: AMOUNT,
    currency: 'USD',
    billingIntervalDays: EVERGREEN_DAYS,
    externalId,
    customer: { email: 'customer@example.com' },
    cardToken: 'tok_success',
    ...(k !== undefined ? { phases: [{ name: 'first', iterations: 1, amount: AMOUNT, billingIntervalDays: k }] } : {}),
  };
}

/**
 * 0. Warm-up: WARMUP subscriptions (no renewal during the run) measure the creation rate after the
 * first wave of CONCURRENCY (cold JIT and pools), then are cancelled (DELETE ?notify=false), so
 * that exactly N are alive afterwards. Answers the steady rate, subscriptions/s.
 */
export async function warmUp(stack: SubsStack) {
  const { apiUrl, headers, basic, runTag, sampler } = stack;
  sampler.phase = 'warm-up';
  announce(`Warm-up: ${WARMUP} subscriptions (${CONCURRENCY} in flight)...`);
  const warm = await createMany(apiUrl, headers, WARMUP, CONCURRENCY, (i) => {
    const externalId = `bwarm-${runTag}-${i}`;
    return { externalId, k: EVERGREEN_DAYS, body: subscriptionBody(externalId) };
  });
  if (warm.created.length < CONCURRENCY + 2) {
    throw new Error(`too few warm-up subscriptions answered active: ${JSON.stringify(warm.otherAnswers)}`);
  }
  const doneAts = warm.created.map((c) => c.doneAt).sort((a, b) => a - b);
  const rate = (doneAts.length - CONCURRENCY) / ((doneAts.at(-1)! - doneAts[CONCURRENCY - 1]!) / 1000);
  printWarmup(warm.created.length, warm.seconds, rate, CONCURRENCY);
  await Promise.all(
    warm.created.map(async (c) => {
      for (;;) {
        const res = await fetch(`${apiUrl}/subscriptions/${c.id}?notify=false`, {
          method: 'DELETE',
          headers: { authorization: basic },
          signal: AbortSignal.timeout(CLIENT_TIMEOUT_MS),
        });
        const body = (await res.json()) as { status?: string };
        // 100 at once can meet the key's rate limit: sent again when it says, as a client would.
        if (res.status === 429) {
          await sleep(1000 * Number(res.headers.get('retry-after') ?? 1));
          continue;
        }
        if (res.status !== 200 || body.status !== 'cancelled') throw new Error(`DELETE ${c.id}: ${res.status}`);
        return;
      }
    }),
  );
  return {
    created: warm.created.length,
    seconds: round(warm.seconds, 1),
    perSecond: round(warm.created.length / warm.seconds, 1),
    steadyPerSecond: round(rate, 1),
    rate,
  };
}

/**
 * 1. Creation: N token-flow POST /subscriptions, CONCURRENCY in flight, each until `active`; each
 * gets a first phase of ONE period of k billing days, k chosen when it is sent so that the period
 * ends at T. T is set from the warm-up's rate: creation start + N / rate x SAFETY_PCT % + IDLE_S
 * (or + BENCH_SUBS_DUE_IN_S).
 */
export async function createStorm(stack: SubsStack, warmRate: number) {
  const { apiUrl, headers, runTag, sampler } = stack;
  const creationStart = Date.now();
  const plannedCreationS = N / warmRate;
  const dueAt =
    creationStart + 1000 * (DUE_IN_S > 0 ? DUE_IN_S : Math.ceil((plannedCreationS * SAFETY_PCT) / 100) + IDLE_S);
  const maxK = Math.ceil((dueAt - creationStart) / 1000 / BILLING_DAY_S);
  if (maxK > 3650) throw new Error(`T is ${maxK} billing days away (max 3650): raise BENCH_SUBS_BILLING_DAY_S`);
  printCreationStart(N, CONCURRENCY, plannedCreationS, creationStart, dueAt);
  sampler.phase = 'creation';
  const cpu0 = sampleCpu();
  let lastPrint = Date.now();
  const creation = await createMany(
    apiUrl,
    headers,
    N,
    CONCURRENCY,
    (i, now) => {
      const externalId = `bsub-${runTag}-${i}`;
      const k = Math.max(1, Math.ceil((dueAt - now) / 1000 / BILLING_DAY_S));
      return { externalId, k, body: subscriptionBody(externalId, k) };
    },
    (done) => {
      if (Date.now() - lastPrint < 10_000) return;
      lastPrint = Date.now();
      const s = (Date.now() - creationStart) / 1000;
      printProgress(
        `${done}/${N} after ${s.toFixed(0)} s (${(done / s).toFixed(1)}/s); worker RSS ` +
          `${mib(sampler.points.at(-1)?.workerKiB ?? 0)} MiB`,
      );
    },
  );
  const cpu1 = sampleCpu();
  const creationEnd = Date.now();
  const active = creation.created.length;
  const latencies = creation.created.map((c) => c.ms).sort((a, b) => a - b);
  const result = {
    requested: N,
    active,
    failed: creation.failed.length,
    failures: creation.failed.slice(0, 10),
    retried: creation.created.filter((c) => c.tries > 1).length,
    otherAnswers: creation.otherAnswers,
    seconds: round(creation.seconds, 1),
    perSecond: round(active / creation.seconds, 1),
    latencyMs: {
      p50: round(percentile(latencies, 50)),
      p90: round(percentile(latencies, 90)),
      p99: round(percentile(latencies, 99)),
      max: round(percentile(latencies, 100)),
    },
    secondsLeftBeforeT: round((dueAt - creationEnd) / 1000, 1),
    cpu: phaseCpu(cpu0, cpu1, (creationEnd - creationStart) / 1000, active),
  };
  printCreation(result);
  return { result, created: creation.created, dueAt, creationStart, creationEnd };
}

/** 2. Alive: running subscription workflows once all are created (visibility is eventually consistent). */
export async function countAlive(stack: SubsStack, active: number, creationEnd: number) {
  stack.sampler.phase = 'after creation';
  const query = 'WorkflowType="subscriptionWorkflow" AND ExecutionStatus="Running"';
  let count = 0;
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    count = (await stack.client.workflow.count(query)).count;
    if (count >= active) break;
    await sleep(1000);
  }
  const alive = { count, query, afterS: round((Date.now() - creationEnd) / 1000, 1) };
  printAlive(alive);
  return alive;
}

/**
 * 3. Idle: all N alive, waiting on their period timers, until just before T: the worker's RSS
 * (the last second, and the median of the last 12), and the checkout and create probes at idle.
 */
export async function idle(stack: SubsStack, dueAt: number) {
  const { apiUrl, headers, runTag, sampler } = stack;
  sampler.phase = 'idle';
  const over = () => Date.now() >= dueAt - 3000;
  const checkoutProbe = requestProbe('payment', apiUrl, headers, `${runTag}-idle`, over);
  const createProbe = requestProbe('subscription', apiUrl, headers, `${runTag}-idle`, over);
  const samples: RssPoint[] = [];
  while (Date.now() < dueAt - 2000) {
    await sleep(Math.min(1000, Math.max(0, dueAt - 2000 - Date.now())));
    samples.push(sampler.tick());
  }
  const checkout = await checkoutProbe;
  const creates = await createProbe;
  const last = samples.at(-1) ?? sampler.tick();
  const window = samples.filter((p) => p.t >= dueAt - 12_000);
  const medianKiB = [...window.map((p) => p.workerKiB)].sort((a, b) => a - b)[Math.floor(window.length / 2)];
  printIdle(last, window.length, medianKiB ?? last.workerKiB);
  return { checkout, creates, last, medianKiB: medianKiB ?? last.workerKiB };
}

/**
 * 4. The renewal storm: every storm subscription's 2nd period falls due within one billing day of
 * T; measured from the first due time to the last 2nd invoice paid (PostgreSQL), with the checkout
 * and create probes running through it.
 */
export async function renewalStorm(stack: SubsStack, dueAt: number, active: number) {
  const { apiUrl, headers, runTag, sampler, db } = stack;
  sampler.phase = 'storm';
  const prefix = `bsub-${runTag}-%`;
  const countPaid = async (): Promise<number> => {
    const { rows } = await db.query<{ n: string }>(
      `select count(*)::text as n from invoices i join subscriptions s on s.id = i.subscription_id
        where s.external_id like $1 and i.period_index = 1 and i.status = 'paid'`,
      [prefix],
    );
    return Number(rows[0]?.n ?? 0);
  };
  // Due: every storm subscription whose first period was paid, including any whose creation
  // answered late (a 503 under load, then active): the API's answers alone would undercount.
  const { rows: dueRows } = await db.query<{ n: string }>(
    `select count(*)::text as n from invoices i join subscriptions s on s.id = i.subscription_id
      where s.external_id like $1 and i.period_index = 0 and i.status = 'paid'`,
    [prefix],
  );
  const due = Number(dueRows[0]?.n ?? active);
  while (Date.now() < dueAt - 500) await sleep(100);
  const cpu0 = sampleCpu();
  const t0 = Date.now();
  announce(`Storm: ${due} renewals fall due from ${new Date(dueAt).toISOString()}...`);
  let over = false;
  const checkoutProbe = requestProbe('payment', apiUrl, headers, `${runTag}-storm`, () => over);
  const createProbe = requestProbe('subscription', apiUrl, headers, `${runTag}-storm`, () => over);
  let lastPrint = Date.now();
  const timeline: Array<{ s: number; paid: number }> = [];
  while (Date.now() - t0 < STORM_TIMEOUT_S * 1000) {
    const paid = await countPaid();
    timeline.push({ s: round((Date.now() - dueAt) / 1000, 1), paid });
    if (paid >= due) break;
    if (Date.now() - lastPrint >= 10_000) {
      lastPrint = Date.now();
      printProgress(
        `${paid}/${due} paid at T+${((Date.now() - dueAt) / 1000).toFixed(0)} s; worker RSS ` +
          `${mib(sampler.points.at(-1)?.workerKiB ?? 0)} MiB`,
      );
    }
    await sleep(500);
  }
  const cpu1 = sampleCpu();
  over = true;
  const checkout = await checkoutProbe;
  const creates = await createProbe;
  const seenS = (Date.now() - dueAt) / 1000;
  const { rows } = await db.query<{
    first_due: Date;
    last_due: Date;
    last_paid: Date | null;
    paid: string;
    lag_ms: number[] | null;
  }>(
    `select min(i0.period_end) as first_due, max(i0.period_end) as last_due, max(i1.paid_at) as last_paid,
            count(i1.paid_at)::text as paid,
            array_agg(extract(epoch from (i1.paid_at - i0.period_end)) * 1000 order by i1.paid_at - i0.period_end)
              filter (where i1.paid_at is not null) as lag_ms
       from subscriptions s
       join invoices i0 on i0.subscription_id = s.id and i0.period_index = 0
       left join invoices i1 on i1.subscription_id = s.id and i1.period_index = 1 and i1.status = 'paid'
      where s.external_id like $1`,
    [prefix],
  );
  const sr = rows[0]!;
  const lags = (sr.lag_ms ?? []).map(Number);
  const seconds = sr.last_paid ? (sr.last_paid.getTime() - sr.first_due.getTime()) / 1000 : null;
  const complete = Number(sr.paid) >= due;
  const result = {
    due,
    paid: Number(sr.paid),
    complete,
    firstDue: sr.first_due.toISOString(),
    lastDue: sr.last_due.toISOString(),
    dueSpreadS: round((sr.last_due.getTime() - sr.first_due.getTime()) / 1000, 2),
    lastPaid: sr.last_paid?.toISOString() ?? null,
    /** First due time to the last 2nd invoice paid, from PostgreSQL. */
    seconds: seconds === null ? null : round(seconds, 1),
    chargesPerSecond: seconds ? round(Number(sr.paid) / seconds, 1) : null,
    /** Seen by the bench's polling (T to the poll that counted all of them). */
    seenAfterS: round(seenS, 1),
    lagMs: {
      p50: round(percentile(lags, 50), 0),
      p90: round(percentile(lags, 90), 0),
      p99: round(percentile(lags, 99), 0),
      max: round(percentile(lags, 100), 0),
    },
    cpu: phaseCpu(cpu0, cpu1, (Date.now() - t0) / 1000, Math.max(1, Number(sr.paid))),
    timeline: timeline.filter((_, i) => i % 4 === 0 || i === timeline.length - 1),
  };
  printStorm(result);
  sampler.phase = 'after';
  return { result, checkout, creates };
}

/** The probes' figures, at idle and during the storm. */
export function probes(idleProbes: { checkout: ProbeResult; creates: ProbeResult }, storm: typeof idleProbes) {
  return {
    checkout: { idle: probeSummary(idleProbes.checkout), storm: probeSummary(storm.checkout) },
    creates: { idle: probeSummary(idleProbes.creates), storm: probeSummary(storm.creates) },
  };
}

/**
 * The money check, over every subscription of the run: the sandbox ledger's captures against the
 * paid invoices (none twice, none without the other), every storm subscription with exactly 2 paid
 * invoices, and each checkout probe payment captured exactly once.
 */
export async function moneyCheck(stack: SubsStack, checkoutIds: string[]) {
  const { db, sandboxUrl, merchantId, runTag } = stack;
  await sleep(2000); // receipts and any charge still in flight
  const entries = await settledLedger(sandboxUrl, 30_000);
  const { rows: paidRows } = await db.query<{ id: string; subscription_id: string }>(
    `select i.id, i.subscription_id from invoices i where i.merchant_id = $1 and i.status = 'paid'`,
    [merchantId],
  );
  const { rows: perSub } = await db.query<{ bad: string; subs: string }>(
    `select count(*) filter (where paid <> 2)::text as bad, count(*)::text as subs from (
       select s.id, count(i.id) filter (where i.status = 'paid') as paid from subscriptions s
         left join invoices i on i.subscription_id = s.id where s.external_id like $1 group by s.id) x`,
    [`bsub-${runTag}-%`],
  );
  const captures = entries.filter((e) => e.type === 'capture' && e.metadata?.subscriptionId);
  const probeIds = new Set(checkoutIds);
  const probeCaptures = new Map<string, number>();
  for (const e of entries) {
    const id = e.metadata?.paymentId;
    if (e.type === 'capture' && e.status === 'succeeded' && id && probeIds.has(id)) {
      probeCaptures.set(id, (probeCaptures.get(id) ?? 0) + 1);
    }
  }
  const probePaymentsNotCapturedOnce = [...probeIds].filter((id) => probeCaptures.get(id) !== 1).length;
  const succeeded = captures.filter((e) => e.status === 'succeeded');
  const perInvoice = new Map<string, number>();
  for (const c of succeeded) {
    const inv = c.metadata?.invoiceId ?? '(none)';
    perInvoice.set(inv, (perInvoice.get(inv) ?? 0) + 1);
  }
  const paidIds = new Set(paidRows.map((r) => r.id));
  const duplicates = [...perInvoice.values()].filter((n) => n > 1).length;
  const capturedNotPaid = [...perInvoice.keys()].filter((id) => !paidIds.has(id)).length;
  const paidNotCaptured = [...paidIds].filter((id) => !perInvoice.has(id)).length;
  const check = {
    succeededCaptures: succeeded.length,
    otherCaptures: captures.length - succeeded.length,
    paidInvoices: paidRows.length,
    invoicesCapturedTwice: duplicates,
    capturesWithoutPaidInvoice: capturedNotPaid,
    paidInvoicesWithoutCapture: paidNotCaptured,
    stormSubscriptionsWithoutExactlyTwoPaid: Number(perSub[0]?.bad ?? -1),
    stormSubscriptions: Number(perSub[0]?.subs ?? 0),
    checkoutPayments: probeIds.size,
    checkoutPaymentsNotCapturedOnce: probePaymentsNotCapturedOnce,
    ok:
      succeeded.length === paidRows.length &&
      duplicates === 0 &&
      capturedNotPaid === 0 &&
      paidNotCaptured === 0 &&
      probePaymentsNotCapturedOnce === 0 &&
      Number(perSub[0]?.bad ?? -1) === 0,
  };
  printMoneyCheck(check);
  return check;
}

/**
 * 6. The floor: FLOOR_STORM_N (by default N) minimal workflows on the same Temporal server, run by
 * the floor worker, sleep until one instant, then each runs one no-op local activity; charges/s =
 * N / (that instant to the last close). Undefined with BENCH_FLOOR=0.
 */
export async function floorStorm(stack: SubsStack): Promise<TimerStormFloor | undefined> {
  if (!stack.floor) return undefined;
  stack.sampler.phase = 'floor storm';
  const result = await timerStorm(stack.floor, {
    n: FLOOR_STORM_N,
    dueInS: FLOOR_STORM_DUE_IN_S,
    concurrency: CONCURRENCY,
    timeoutS: FLOOR_STORM_TIMEOUT_S,
  });
  stack.sampler.phase = 'after';
  return result;
}
