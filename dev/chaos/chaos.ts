import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { startClusterChild } from '../stack/clusterChild';
import { ROOT } from '../stack/stackParts';
import { Recorder, sleep, type ChaosMerchant } from './client';
import { defaultFaultPlan, runFaults, setSandboxFaults, type FaultPlan } from './faults';
import { LIFECYCLE_CARDS, checkDeliveryIsolation, checkInvariants } from './invariants';
import { startAnsweringEndpoint, startHangingEndpoint } from './endpoints';
import { DEFAULT_DELIVERY_CONCURRENCY_PER_MERCHANT } from '../../src/rules/deliverySchedule';
import { checkMetrics, watchMetrics } from './metricsCheck';
import { runLoad } from './load';
import type { ChaosReport } from './report';
import { countUnsettled, readDatabase, readDeliveries, readLedger, watchLedgerOpen } from './witnesses';

export interface ChaosOptions {
  durationS: number;
  log: (line: string) => void;
  /** Where the cluster keeps its data (default: a fresh temp dir, removed after a passing run). */
  dataDir?: string;
  plan?: FaultPlan;
  /** Bound on the wait for records to settle after the load (default 240 s). */
  drainTimeoutS?: number;
  /** Extra environment for the cluster (e.g. a shorter billing day). */
  env?: NodeJS.ProcessEnv;
  /** Subscriptions on processing and 3-D Secure cards too (LoadOptions.lifecycleSubscriptions). */
  lifecycleSubscriptions?: boolean;
}

/**
 * The cluster's settings for a run: a short billing day; `tok_processing` charges settled 3 s
 * later, and their workflow asking after 5 s when the webhook is lost; `tok_dispute` captures
 * disputed 2 s later, evidence due 30 s after (a dispute the load leaves alone is lost at its
 * deadline within the run); payments expire after 90 s, so an authentication nobody acted on is
 * voided within the drain.
 */
export const CHAOS_ENV: Readonly<Record<string, string>> = {
  BILLING_DAY_SECONDS: '15',
  SANDBOX_PROCESSING_SECONDS: '3',
  PAYMENT_PROCESSING_POLL_SECONDS: '5',
  SANDBOX_DISPUTE_SECONDS: '2',
  SANDBOX_DISPUTE_EVIDENCE_SECONDS: '30',
  PAYMENT_EXPIRY_SECONDS: '90',
};

async function createMerchant(env: NodeJS.ProcessEnv, name: string): Promise<ChaosMerchant> {
  const { stdout } = await promisify(execFile)(
    process.execPath,
    // An email: the cluster's workers run the production profile, where a test-environment
    // subscription's emails go to the merchant (decision 0066); without one they are withheld.
    [
      '--import',
      'tsx',
      path.join(ROOT, 'src', 'cli', 'index.ts'),
      'merchants:create',
      '--name',
      name,
      '--email',
      `${name}@example.com`,
      '--json',
    ],
    { cwd: ROOT, env },
  );
  const out = JSON.parse(stdout) as { merchant: { id: string }; apiKey: { publicKey: string; secretKey: string } };
  return { id: out.merchant.id, publicKey: out.apiKey.publicKey, secretKey: out.apiKey.secretKey };
}

/** A webhook endpoint of the merchant for every event type (`*`), at `url`. */
async function createEndpoint(apiUrl: string, merchant: ChaosMerchant, url: string): Promise<void> {
  const res = await fetch(`${apiUrl}/webhook-endpoints`, {
    method: 'POST',
    headers: {
      authorization: `Basic ${Buffer.from(`${merchant.publicKey}:${merchant.secretKey}`).toString('base64')}`,
      'content-type': 'application/json',
    },
    body: JSON.stringify({ url, enabledEvents: ['*'], description: 'chaos' }),
    signal: AbortSignal.timeout(30_000),
  });
  if (res.status !== 200) throw new Error(`POST /webhook-endpoints: ${res.status} ${await res.text()}`);
}

/**
 * A chaos run: starts `npm run cluster` in its own data dir and ports (short billing day), runs
 * the load and the faults for `durationS`, lets every record settle, then checks the money
 * invariants against the ledger, the database and the mail folder, and stops the cluster. A third
 * merchant's webhook endpoint (every event type) hangs, and chaos-a's answers at once: invariant 8
 * holds the hanging one to its concurrency and the other to being served meanwhile (decision 0072).
 */
/** The lifecycle traffic as recorded: payments by lifecycle card and status, disputes by status. */
function lifecycleCounts(db: Awaited<ReturnType<typeof readDatabase>>): NonNullable<ChaosReport['lifecycle']> {
  const payments: Record<string, Record<string, number>> = {};
  for (const p of db.payments) {
    if (!p.cardToken || !(LIFECYCLE_CARDS.has(p.cardToken) || p.cardToken === 'tok_dispute')) continue;
    const byStatus = (payments[p.cardToken] ??= {});
    byStatus[p.status] = (byStatus[p.status] ?? 0) + 1;
  }
  const disputes: Record<string, number> = {};
  for (const d of db.disputes) disputes[d.status] = (disputes[d.status] ?? 0) + 1;
  return { payments, disputes };
}

export async function runChaos(opts: ChaosOptions): Promise<ChaosReport> {
  const started = Date.now();
  const dataDir = opts.dataDir ?? fs.mkdtempSync(path.join(os.tmpdir(), 'chaos-'));
  opts.log(`chaos: starting the cluster in ${dataDir} (first start builds the Temporal server)...`);
  const clusterChild = await startClusterChild({ dataDir, env: { ...CHAOS_ENV, ...opts.env } });
  const { env, restarts, file: cluster } = clusterChild;
  let metricsWatch: ReturnType<typeof watchMetrics> | undefined;
  let ledgerWatch: ReturnType<typeof watchLedgerOpen> | undefined;
  // Issue 43: a merchant whose endpoint hangs, and another merchant's endpoint that answers.
  const hanging = await startHangingEndpoint();
  const answering = await startAnsweringEndpoint();
  try {
    const clusterStartS = (Date.now() - started) / 1000;
    opts.log(`chaos: cluster ready in ${clusterStartS.toFixed(0)} s; creating merchants`);
    const merchants: [ChaosMerchant, ChaosMerchant] = [
      await createMerchant(env, 'chaos-a'),
      await createMerchant(env, 'chaos-b'),
    ];
    // Its endpoint (every event type) hangs; chaos-a's answers at once (decision 0072).
    const hangingMerchant = await createMerchant(env, 'chaos-hanging');
    await createEndpoint(cluster.apiUrl, hangingMerchant, hanging.url);
    await createEndpoint(cluster.apiUrl, merchants[0], `${answering.base}/chaos-a`);
    const merchantIds = [...merchants, hangingMerchant].map((m) => m.id);

    // The workers' counters through the run (kills included), held against the database after it.
    metricsWatch = watchMetrics(cluster.metrics?.workers ?? []);
    // When each capture was last seen undecided (invariant 7 orders an invoice's attempts with it).
    ledgerWatch = watchLedgerOpen(cluster.sandboxUrl);
    const recorder = new Recorder(cluster.apiUrl);
    const loadStarted = Date.now();
    const until = loadStarted + opts.durationS * 1000;
    const plan = opts.plan ?? defaultFaultPlan(opts.durationS * 1000);
    opts.log(`chaos: load and faults for ${opts.durationS} s`);
    const [, kills] = await Promise.all([
      runLoad({
        recorder,
        merchants,
        until,
        sandboxUrl: cluster.sandboxUrl,
        lifecycleSubscriptions: opts.lifecycleSubscriptions,
        hangingMerchant,
      }),
      runFaults({ dataDir, sandboxUrl: cluster.sandboxUrl, until, plan, log: opts.log }),
    ]);
    await setSandboxFaults(cluster.sandboxUrl, {});

    // Recovery: the first token payment requested after each kill that came back succeeded.
    const successes = recorder.answers
      .filter((a) => a.operation === 'payment (token)' && a.status === 200 && a.body?.status === 'succeeded')
      .sort((a, b) => a.startedAt - b.startedAt);
    for (const kill of kills) kill.recoveredAt = successes.find((a) => a.startedAt > kill.at)?.at;

    opts.log('chaos: load over; waiting for every record to settle');
    const drainStarted = Date.now();
    const drainDeadline = drainStarted + (opts.drainTimeoutS ?? 240) * 1000;
    let unsettled = await countUnsettled(cluster.databaseUrl, merchantIds);
    while (Object.values(unsettled).some((n) => n > 0) && Date.now() < drainDeadline) {
      await sleep(2000);
      unsettled = await countUnsettled(cluster.databaseUrl, merchantIds).catch(() => unsettled);
    }
    const drainS = (Date.now() - drainStarted) / 1000;
    const scrapes = await metricsWatch.stop();
    await ledgerWatch.stop();

    const [ledger, db] = await Promise.all([
      readLedger(cluster.sandboxUrl),
      readDatabase(cluster.databaseUrl, merchantIds),
    ]);
    const ours = new Set(db.payments.map((p) => p.id));
    const invariants = [
      ...checkInvariants({
        // The sandbox serves only this run's cluster; the demo merchant takes no traffic.
        ledger: ledger.filter((e) => !e.metadata.paymentId || ours.has(e.metadata.paymentId)),
        ...db,
        deliveries: readDeliveries(cluster.mailDir),
        workerKills: kills.filter((k) => k.kind === 'worker').map((k) => k.at),
        acknowledgements: recorder.acknowledgements,
        serverErrors: recorder.serverErrors,
        answers: recorder.answers.length,
        crossMerchantProbes: recorder.crossMerchantProbes,
        crossMerchantLeaks: recorder.crossMerchantLeaks,
        ledgerOpenSeenAt: ledgerWatch.openSeenAt,
      }),
      checkMetrics({
        scrapes,
        recorded: {
          payments_total: db.payments.filter((p) => ['succeeded', 'partially_refunded', 'refunded'].includes(p.status))
            .length,
          refunds_total: db.refunds.filter((r) => r.status === 'succeeded').length,
          subscription_charges_total: db.invoices.filter((i) => i.status === 'paid' && i.amountMinor > 0).length,
        },
        workerKills: kills.filter((k) => k.kind === 'worker').map((k) => k.at),
      }),
      checkDeliveryIsolation({
        concurrencyPerMerchant:
          Number(env.EVENT_DELIVERY_CONCURRENCY_PER_MERCHANT) || DEFAULT_DELIVERY_CONCURRENCY_PER_MERCHANT,
        hanging: { maxOpen: hanging.state.maxOpen, requests: hanging.state.total, held: hanging.held },
        answeredAt: answering.received.map((r) => r.at),
        until: Date.now(),
      }),
    ];
    return {
      machine:
        `${os.cpus().length} cores, ${Math.round(os.totalmem() / 2 ** 30)} GB, ${os.cpus()[0]?.model ?? ''}`.trim(),
      startedAt: new Date(started).toISOString(),
      loadStartedAt: new Date(loadStarted).toISOString(),
      durationS: opts.durationS,
      clusterStartS,
      drainS,
      unsettled,
      answers: recorder.answers,
      kills,
      restarts,
      invariants,
      lifecycle: lifecycleCounts(db),
    };
  } finally {
    await metricsWatch?.stop();
    await ledgerWatch?.stop();
    await clusterChild.stop();
    await Promise.all([hanging.close(), answering.close()]);
  }
}
