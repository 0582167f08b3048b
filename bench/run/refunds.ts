import { floorPaymentsToRefund } from '../floor/scenarios';
import { printRefundCheck, printRefundSlice, announce } from '../report';
import { ledger, sampleCpu, sleep, type LedgerEntry } from '../stack';
import { floorArms, measureGroup } from './floors';
import { DURATION_S, REFUND_AMOUNT, REFUND_PAYMENT_AMOUNT, WORK_FLOOR } from './knobs';
import { combine, cpuPer, loadAverage1m, percentile, type ScenarioResult } from './measure';
import type { RunStack } from './setup';

/**
 * Refunds are not autocannon: every request must be a terminal answer, and only one refund may
 * be in flight per payment. Plain fetch loops (undici keeps the connections alive), one loop per
 * payment, each refund timed from send to answer with performance.now().
 */

export interface RefundAttempt {
  paymentId: string;
  externalId: string;
  /** Send to answer (body read), performance.now(). */
  ms: number;
  /** HTTP status; 0 when no answer came (network error, client timeout). */
  status: number;
  refundId?: string;
  refundStatus?: string;
  /** Set unless the answer was 200 with a `succeeded` refund. */
  error?: string;
}

/** A refund slice's row: the scenario's figures, its warm-up and the kinds of errors. */
export type RefundResult = ScenarioResult & {
  warmupRefunds: number;
  warmupErrors: number;
  errorKinds: Record<string, number>;
};

const REFUND_CLIENT_TIMEOUT_MS = 30_000;

/** Numbers the run's refunds (their externalIds), across groups. */
let refundSeq = 0;

/** Major units to integer cents, exactly (USD). */
const cents = (major: number) => Math.round(major * 100);

async function refundOnce(stack: RunStack, paymentId: string, externalId: string): Promise<RefundAttempt> {
  const body = JSON.stringify({ externalId, amount: REFUND_AMOUNT });
  const started = performance.now();
  try {
    const res = await fetch(`${stack.apiUrl}/payments/${paymentId}/refund`, {
      method: 'POST',
      headers: stack.postHeaders,
      body,
      signal: AbortSignal.timeout(REFUND_CLIENT_TIMEOUT_MS),
    });
    const text = await res.text();
    const ms = performance.now() - started;
    let parsed: { id?: string; status?: string; error?: { code?: string } } = {};
    try {
      parsed = JSON.parse(text) as typeof parsed;
    } catch {
      // reported below as the raw body
    }
    const ok = res.status === 200 && parsed.status === 'succeeded';
    return {
      paymentId,
      externalId,
      ms,
      status: res.status,
      refundId: parsed.id,
      refundStatus: parsed.status,
      error: ok ? undefined : `${res.status} ${parsed.status ?? parsed.error?.code ?? text.slice(0, 200)}`,
    };
  } catch (err) {
    return { paymentId, externalId, ms: performance.now() - started, status: 0, error: (err as Error).message };
  }
}

/**
 * One loop per payment, each sending its next refund only once the previous one is answered,
 * until `untilMs` (performance.now()); a refund sent before it is waited for.
 */
async function refundLoops(
  send: (paymentId: string) => Promise<RefundAttempt>,
  paymentIds: string[],
  untilMs: number,
): Promise<{ attempts: RefundAttempt[]; seconds: number }> {
  const attempts: RefundAttempt[] = [];
  const t0 = performance.now();
  await Promise.all(
    paymentIds.map(async (paymentId) => {
      while (performance.now() < untilMs) attempts.push(await send(paymentId));
    }),
  );
  return { attempts, seconds: (performance.now() - t0) / 1000 };
}

/** A token payment of REFUND_PAYMENT_AMOUNT through the API, captured: what a refund loop refunds. */
async function paymentToRefund(stack: RunStack): Promise<string> {
  const res = await fetch(`${stack.apiUrl}/payments`, {
    method: 'POST',
    headers: stack.postHeaders,
    body: stack.paymentBody(REFUND_PAYMENT_AMOUNT),
    signal: AbortSignal.timeout(30_000),
  });
  const body = (await res.json()) as { id?: string; status?: string };
  if (res.status !== 201 && res.status !== 200) throw new Error(`POST /payments for refunds: ${res.status}`);
  if (body.status !== 'succeeded' || !body.id) throw new Error(`POST /payments for refunds: ${JSON.stringify(body)}`);
  return body.id;
}

/**
 * One slice of refunds on `paymentIds` (a loop each): `warmupS` thrown away, then DURATION_S
 * measured. Every attempt, warm-up included, is added to `sent` for the group's check.
 */
async function refundSlice(
  send: (paymentId: string) => Promise<RefundAttempt>,
  name: string,
  paymentIds: string[],
  warmupS: number,
  sent: RefundAttempt[],
) {
  announce(
    `${name}: ${paymentIds.length} payment(s), one loop each of sequential ${REFUND_AMOUNT} USD refunds; ` +
      `${warmupS} s warm-up + ${DURATION_S} s...`,
  );
  const warmup =
    warmupS > 0 ? await refundLoops(send, paymentIds, performance.now() + warmupS * 1000) : { attempts: [] };
  const loadAverage1mBefore = loadAverage1m();
  const before = sampleCpu();
  const run = await refundLoops(send, paymentIds, performance.now() + DURATION_S * 1000);
  const after = sampleCpu();
  sent.push(...warmup.attempts, ...run.attempts);
  const ms = run.attempts.map((a) => a.ms).sort((a, b) => a - b);
  const statusCodes: Record<string, number> = {};
  const errorKinds: Record<string, number> = {};
  for (const a of run.attempts) {
    statusCodes[String(a.status)] = (statusCodes[String(a.status)] ?? 0) + 1;
    if (a.error) errorKinds[a.error] = (errorKinds[a.error] ?? 0) + 1;
  }
  const count = run.attempts.length;
  const result: RefundResult = {
    name,
    method: 'POST',
    path: '/payments/{id}/refund',
    connections: paymentIds.length,
    durationS: Number(run.seconds.toFixed(2)),
    requestsPerSec: count / run.seconds,
    requestsTotal: count,
    latencyMs: {
      p50: percentile(ms, 50),
      p90: percentile(ms, 90),
      p99: percentile(ms, 99),
      max: percentile(ms, 100),
      mean: Number((ms.reduce((a, b) => a + b, 0) / Math.max(1, count)).toFixed(1)),
    },
    status2xx: run.attempts.filter((a) => a.status >= 200 && a.status < 300).length,
    non2xx: run.attempts.filter((a) => a.status !== 0 && (a.status < 200 || a.status >= 300)).length,
    // Anything but a 200 with a `succeeded` refund (a 2xx `pending` or `failed` counts too).
    errors: run.attempts.filter((a) => a.error).length,
    timeouts: run.attempts.filter((a) => a.status === 0).length,
    statusCodes,
    ...cpuPer(before, after, run.seconds, count),
    loadAverage1mBefore,
    warmupRefunds: warmup.attempts.length,
    warmupErrors: warmup.attempts.filter((a) => a.error).length,
    errorKinds,
  };
  printRefundSlice(result);
  return { result, attempts: run.attempts };
}

/** The ledger and balance check of every refund sent on these payments, warm-up included. */
async function checkRefunds(stack: RunStack, paymentIds: string[], attempts: RefundAttempt[]) {
  await sleep(1000); // a refund whose answer never came may still be completing
  const entries = (await ledger(stack.sandboxUrl)).filter((e) => e.type === 'refund');
  const byReference = new Map<string, LedgerEntry[]>();
  const byRefundId = new Map<string, LedgerEntry[]>();
  for (const e of entries) {
    if (e.reference) byReference.set(e.reference, [...(byReference.get(e.reference) ?? []), e]);
    const refundId = e.metadata?.refundId;
    if (refundId) byRefundId.set(refundId, [...(byRefundId.get(refundId) ?? []), e]);
  }
  const answered = attempts.filter((a) => a.status >= 200 && a.status < 300);
  const wrong = answered.filter((a) => {
    const list = byReference.get(a.externalId) ?? [];
    return (
      list.length !== 1 ||
      list[0]?.status !== 'succeeded' ||
      !a.refundId ||
      list[0]?.metadata?.refundId !== a.refundId ||
      byRefundId.get(a.refundId)?.length !== 1
    );
  });
  const ours = new Set(paymentIds);
  const ourEntries = entries.filter((e) => ours.has(e.metadata?.paymentId ?? ''));
  const answeredReferences = new Set(answered.map((a) => a.externalId));
  const payments = await Promise.all(
    paymentIds.map(async (id) => {
      const res = await fetch(`${stack.apiUrl}/payments/${id}`, {
        headers: { authorization: stack.basic },
        signal: AbortSignal.timeout(10_000),
      });
      const body = (await res.json()) as { amountRefunded?: number; status?: string };
      const refunds = attempts.filter((a) => a.paymentId === id && a.status === 200 && a.refundStatus === 'succeeded');
      return {
        paymentId: id,
        status: body.status,
        succeededRefundAnswers: refunds.length,
        succeededLedgerEntries: ourEntries.filter((e) => e.metadata?.paymentId === id && e.status === 'succeeded')
          .length,
        amountRefundedCents: typeof body.amountRefunded === 'number' ? cents(body.amountRefunded) : null,
        expectedCents: refunds.length * cents(REFUND_AMOUNT),
      };
    }),
  );
  const amountMismatches = payments.filter((p) => p.amountRefundedCents !== p.expectedCents);
  const duplicateReferences = [...byReference.values()].filter((l) => l.length > 1).length;
  const duplicateRefundIds = [...byRefundId.values()].filter((l) => l.length > 1).length;
  const check = {
    refundsSent: attempts.length,
    answered2xx: answered.length,
    answered2xxWithExactlyOneSucceededEntry: answered.length - wrong.length,
    answered2xxWithoutExactlyOneSucceededEntry: wrong.length,
    wrongExamples: wrong.slice(0, 5).map((a) => ({
      externalId: a.externalId,
      refundId: a.refundId,
      status: a.status,
      refundStatus: a.refundStatus,
      entries: byReference.get(a.externalId) ?? [],
    })),
    refundEntriesOnThesePayments: ourEntries.length,
    entriesWithoutA2xxAnswer: ourEntries.filter((e) => !e.reference || !answeredReferences.has(e.reference)).length,
    duplicatedReferencesInWholeLedger: duplicateReferences,
    duplicatedRefundIdsInWholeLedger: duplicateRefundIds,
    paymentsWithAmountRefundedMismatch: amountMismatches.length,
    payments,
    ok: wrong.length === 0 && duplicateReferences === 0 && duplicateRefundIds === 0 && amountMismatches.length === 0,
  };
  printRefundCheck(check, amountMismatches, REFUND_AMOUNT);
  return check;
}

export type RefundCheck = Awaited<ReturnType<typeof checkRefunds>>;

/**
 * The refunds at `parallel` loops: `parallel` payments of 1000 USD to refund through the API (and
 * as many charged by the work floor, for the refund work floor), then the bare floor, the refund
 * work floor (a refund's required work) and the product's refund loops, in mirrored rounds; the
 * ledger and balances checked once over every refund the group sent.
 */
export async function refundGroup(stack: RunStack, name: string, parallel: number) {
  const [paymentIds, floorPaymentIds] = await Promise.all([
    Promise.all(Array.from({ length: parallel }, () => paymentToRefund(stack))),
    stack.floor && WORK_FLOOR ? floorPaymentsToRefund(stack.floor, parallel) : [],
  ]);
  const send = (id: string) => refundOnce(stack, id, `bench-refund-${stack.runTag}-${++refundSeq}`);
  const sent: RefundAttempt[] = [];
  const floors = floorArms(stack.floor, 'the refunds', parallel, {
    kind: 'refund',
    name: "refund work floor: a refund's required work",
    paymentIds: floorPaymentIds,
  });
  const group = await measureGroup(floors, (warmupS) => refundSlice(send, name, paymentIds, warmupS, sent));
  return {
    result: combine(group.product.map((r) => r.result)),
    check: await checkRefunds(stack, paymentIds, sent),
    attempts: group.product.flatMap((r) => r.attempts),
    ...group.floors,
  };
}

export type RefundGroup = Awaited<ReturnType<typeof refundGroup>>;
