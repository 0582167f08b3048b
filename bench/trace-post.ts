import { Client, Connection, WithStartWorkflowOperation } from '@temporalio/client';
import { temporal as proto } from '@temporalio/proto';
import { paymentWorkflowId } from '../workflows/paymentApi';
import { refundWorkflowId } from '../workflows/refundApi';
import { startFloor } from './floor/scenarios';
import { floorPingUpdate, floorUpdateWorkflow } from './floor/workflows';
import {
  beginRun,
  buildForBench,
  envInt,
  freePorts,
  getOk,
  say,
  sleep,
  spawnChild,
  startServices,
  teardown,
  waitFor,
  workerEnv,
  workerNodeArgs,
} from './stack';

/**
 * `npm run bench:trace`: where one token POST /payments spends its time. A throw-away stack
 * (BENCH_TEMPORAL as for the bench; the production build unless BENCH_SOURCES=1), 20 warm-up
 * payments, then TRACE_N (60) sequential ones; each payment's workflow history is read back and
 * every event's server time is taken from the moment the client sent the request (one machine,
 * one clock). Prints, per history event, the p10/p50/p90 of that offset, then the answer's: the
 * gaps between lines are the steps (the API before Temporal, the wait for a workflow task's
 * dispatch, the worker's task, the attempt).
 * A diagnostic: no target, no ledger check (the bench has those).
 *
 * TRACE_KIND=refund traces sequential 0.01 refunds of one payment instead (their refund
 * workflows' histories); TRACE_KIND=floor the floor's bare Update-with-Start (bench/floor), for
 * the same steps with no business work.
 */
const N = envInt('TRACE_N', 60);
const KIND =
  process.env.TRACE_KIND === 'refund' || process.env.TRACE_KIND === 'floor' ? process.env.TRACE_KIND : 'payment';
const WARMUP = 20;

type HistoryEvent = proto.api.history.v1.IHistoryEvent;
const eventMs = (e: HistoryEvent) =>
  Number(e.eventTime?.seconds ?? 0) * 1000 + Math.floor((e.eventTime?.nanos ?? 0) / 1e6);
const eventName = (e: HistoryEvent) =>
  (proto.api.enums.v1.EventType[e.eventType ?? 0] ?? String(e.eventType)).replace(/^EVENT_TYPE_/, '');

async function main(): Promise<void> {
  beginRun(300_000 + N * 2_000);
  const [pgPort, temporalPort, apiPort, sandboxPort] = (await freePorts(4)) as [number, number, number, number];
  // The production build, as the bench measures it (bench/stack.ts; BENCH_SOURCES=1 runs the sources).
  const [{ dir, logDir, pg, temporal, temporalServer, basic }] = await Promise.all([
    startServices({ pgPort, temporalPort }),
    buildForBench(),
  ]);
  const apiUrl = `http://127.0.0.1:${apiPort}`;
  const sandboxUrl = `http://127.0.0.1:${sandboxPort}`;
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    DATABASE_URL: pg.databaseUrl,
    DATABASE_POOL_MAX: '10',
    TEMPORAL_ADDRESS: temporal.address,
    PORT: String(apiPort),
    SANDBOX_PORT: String(sandboxPort),
    SANDBOX_URL: sandboxUrl,
    TEMPORAL_TASK_QUEUE: `bench-trace-${process.pid}`,
    LOG_LEVEL: 'warn',
    DATA_DIR: dir,
  };
  spawnChild('sandbox', 'dev/sandbox/main.ts', env, logDir);
  spawnChild('api', 'src/main/api.ts', env, logDir);
  spawnChild('worker', 'src/main/worker.ts', { ...env, ...workerEnv() }, logDir, workerNodeArgs());
  await waitFor('the API (/readyz)', 60_000, () => getOk(`${apiUrl}/readyz`));
  await waitFor('the sandbox', 30_000, () => getOk(`${sandboxUrl}/_admin/faults`));
  const connection = await Connection.connect({ address: temporal.address });
  const client = new Client({ connection });

  let seq = 0;
  const post = async () => {
    const sentAt = Date.now();
    const res = await fetch(`${apiUrl}/payments`, {
      method: 'POST',
      headers: { authorization: basic, 'content-type': 'application/json' },
      body: JSON.stringify({
        amount: 12.34,
        currency: 'USD',
        externalId: `trace-${process.pid}-${++seq}`,
        customer: { email: 'bench@example.com' },
        cardToken: 'tok_success',
      }),
    });
    const body = (await res.json()) as { id?: string; status?: string };
    return { sentAt, answeredAt: Date.now(), id: body.id, status: body.status };
  };
  await waitFor('a first token-flow POST /payments', 90_000, async () => {
    const first = await post();
    return first.status === 'succeeded' ? true : `answered ${first.status}`;
  });
  let refunded = '';
  const refund = async () => {
    const sentAt = Date.now();
    const res = await fetch(`${apiUrl}/payments/${refunded}/refund`, {
      method: 'POST',
      headers: { authorization: basic, 'content-type': 'application/json' },
      body: JSON.stringify({ amount: 0.01, externalId: `trace-refund-${process.pid}-${++seq}` }),
    });
    const body = (await res.json()) as { id?: string; status?: string };
    return { sentAt, answeredAt: Date.now(), id: body.id, status: body.status };
  };
  if (KIND === 'refund') {
    const payment = await post();
    if (payment.status !== 'succeeded' || !payment.id) throw new Error('the payment to refund did not succeed');
    refunded = payment.id;
  }
  const floor =
    KIND === 'floor'
      ? await startFloor({ temporalAddress: temporal.address, dir, logDir, nodeArgs: workerNodeArgs() })
      : undefined;
  let floorSeq = 0;
  const floorCall = async () => {
    const workflowId = `trace-floor-${process.pid}-${++floorSeq}`;
    const op = new WithStartWorkflowOperation(floorUpdateWorkflow, {
      workflowId,
      taskQueue: floor!.taskQueue,
      workflowIdConflictPolicy: 'USE_EXISTING',
    });
    const sentAt = Date.now();
    const answer = await client.workflow.executeUpdateWithStart(floorPingUpdate, { startWorkflowOperation: op });
    return { sentAt, answeredAt: Date.now(), id: workflowId, status: answer === 'pong' ? 'succeeded' : answer };
  };
  const send = KIND === 'refund' ? refund : KIND === 'floor' ? floorCall : post;
  for (let i = 0; i < WARMUP; i++) await send();
  await sleep(500);
  const traced: Array<Awaited<ReturnType<typeof post>>> = [];
  for (let i = 0; i < N; i++) traced.push(await send());
  const failed = traced.filter((p) => p.status !== 'succeeded' || !p.id).length;
  const workflowId = (id: string) =>
    KIND === 'refund' ? refundWorkflowId(id) : KIND === 'floor' ? id : paymentWorkflowId(id);

  // Offsets from the send, per event (the n-th event of a type is `TYPE#n`), in history order.
  const offsets = new Map<string, number[]>();
  for (const p of traced) {
    if (!p.id) continue;
    const history = await client.workflow.getHandle(workflowId(p.id)).fetchHistory();
    const seen = new Map<string, number>();
    for (const e of history.events ?? []) {
      const n = (seen.get(eventName(e)) ?? 0) + 1;
      seen.set(eventName(e), n);
      const key = n > 1 ? `${eventName(e)}#${n}` : eventName(e);
      offsets.set(key, [...(offsets.get(key) ?? []), eventMs(e) - p.sentAt]);
    }
    offsets.set('(answer at the client)', [...(offsets.get('(answer at the client)') ?? []), p.answeredAt - p.sentAt]);
  }
  await connection.close();

  const pct = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))];
  say(
    `\n${N} sequential ${KIND === 'payment' ? 'token POSTs' : `${KIND} calls`} on ${temporalServer} (${failed} not succeeded); ms from the send:`,
  );
  say(`${'event'.padEnd(44)} ${'n'.padStart(4)} ${'p10'.padStart(5)} ${'p50'.padStart(5)} ${'p90'.padStart(5)}`);
  for (const [key, values] of offsets) {
    const sorted = [...values].sort((a, b) => a - b);
    say(
      `${key.padEnd(44)} ${String(sorted.length).padStart(4)} ${String(pct(sorted, 0.1)).padStart(5)} ` +
        `${String(pct(sorted, 0.5)).padStart(5)} ${String(pct(sorted, 0.9)).padStart(5)}`,
    );
  }
}

main()
  .then(() => teardown())
  .then(() => process.exit(0))
  .catch(async (err: unknown) => {
    say(`bench:trace failed: ${(err as Error).stack ?? String(err)}`);
    await teardown();
    process.exit(1);
  });
