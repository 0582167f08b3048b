import fs from 'node:fs';
import { clusterFilePath, type ClusterFile } from '../stack/clusterFile';
import { sleep } from './client';

/**
 * The faults of a chaos run, on a timetable: SIGKILL of a random worker every ~10 s and of an
 * API process every ~30 s, one of an event delivery worker, one restart of each Temporal service
 * and of PostgreSQL, and sandbox
 * fault windows (unavailable, timeout, invalid, decline) switched on and off. The cluster's
 * supervisor brings every killed process back; the run measures how long that takes.
 */
export type KillKind =
  | 'worker'
  | 'delivery-worker'
  | 'api'
  | 'temporal-history'
  | 'temporal-matching'
  | 'temporal-frontend'
  | 'temporal-worker'
  | 'postgres';

export interface Kill {
  kind: KillKind;
  pid: number;
  at: number;
  /** The sandbox fault mode in force at the kill (a recovery is slower inside a window). */
  sandboxMode: string;
  /** The first successful token payment requested after the kill (epoch ms). */
  recoveredAt?: number;
}

export interface FaultPlan {
  workerEveryMs: number;
  apiEveryMs: number;
  /** Fractions of the run at which each one-off restart happens. */
  oneOffs: Array<{ kind: Exclude<KillKind, 'worker' | 'api'>; at: number }>;
  /** Sandbox windows: on for `onMs`, then `ok` for `offMs`, cycling through `modes`. */
  sandbox: { modes: Array<Record<string, string>>; onMs: number; offMs: number };
}

export function defaultFaultPlan(durationMs: number): FaultPlan {
  const short = durationMs < 120_000;
  return {
    workerEveryMs: 10_000,
    apiEveryMs: 30_000,
    oneOffs: short
      ? [
          { kind: 'temporal-history', at: 0.45 },
          { kind: 'delivery-worker', at: 0.6 },
        ]
      : [
          { kind: 'temporal-history', at: 0.2 },
          { kind: 'delivery-worker', at: 0.3 },
          { kind: 'temporal-matching', at: 0.35 },
          { kind: 'postgres', at: 0.5 },
          { kind: 'temporal-frontend', at: 0.65 },
          { kind: 'temporal-worker', at: 0.8 },
        ],
    sandbox: {
      modes: [
        { payments: 'unavailable' },
        { refunds: 'timeout' },
        { payments: 'decline' },
        { payments: 'invalid' },
        { refunds: 'unavailable' },
        { payments: 'timeout' },
        { refunds: 'invalid' },
      ],
      onMs: short ? 6_000 : 10_000,
      offMs: short ? 8_000 : 15_000,
    },
  };
}

export interface FaultsOptions {
  dataDir: string;
  sandboxUrl: string;
  sandboxAdminToken?: string;
  until: number;
  plan: FaultPlan;
  log: (line: string) => void;
}

function readCluster(dataDir: string): ClusterFile {
  return JSON.parse(fs.readFileSync(clusterFilePath(dataDir), 'utf8')) as ClusterFile;
}

function alive(pid: number | undefined): pid is number {
  if (!pid) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

export async function setSandboxFaults(sandboxUrl: string, faults: Record<string, string>, token?: string) {
  const res = await fetch(`${sandboxUrl}/_admin/faults`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: JSON.stringify(faults),
  });
  if (!res.ok) throw new Error(`sandbox faults: ${res.status} ${await res.text()}`);
}

export async function runFaults(opts: FaultsOptions): Promise<Kill[]> {
  const kills: Kill[] = [];
  const start = Date.now();
  const total = opts.until - start;
  let sandboxMode = 'ok';

  const kill = (kind: KillKind) => {
    const cluster = readCluster(opts.dataDir);
    const pool: Array<number | undefined> =
      kind === 'worker'
        ? Object.values(cluster.pids.worker)
        : kind === 'delivery-worker'
          ? Object.values(cluster.pids.deliveryWorker ?? {})
          : kind === 'api'
            ? Object.values(cluster.pids.api)
            : kind === 'postgres'
              ? [cluster.pids.postgres]
              : [cluster.pids.temporal[kind.slice('temporal-'.length)]];
    const candidates = pool.filter(alive);
    if (candidates.length === 0) {
      opts.log(`chaos: no live ${kind} process to kill (still restarting)`);
      return;
    }
    const pid = candidates[Math.floor(Math.random() * candidates.length)]!;
    // PostgreSQL gets a fast shutdown (SIGINT), a real restart; everything else SIGKILL.
    process.kill(pid, kind === 'postgres' ? 'SIGINT' : 'SIGKILL');
    kills.push({ kind, pid, at: Date.now(), sandboxMode });
    opts.log(`chaos: ${kind === 'postgres' ? 'restarted' : 'killed'} ${kind} (pid ${pid})`);
  };

  // No kill in the load's last 10 s: each one needs later traffic to show it recovered.
  const killsUntil = opts.until - 10_000;
  const every = async (periodMs: number, action: () => void) => {
    await sleep(periodMs * (0.5 + Math.random()));
    while (Date.now() < killsUntil) {
      action();
      await sleep(periodMs * (0.7 + Math.random() * 0.6));
    }
  };

  const oneOffs = opts.plan.oneOffs.map(async ({ kind, at }) => {
    await sleep(total * at);
    if (Date.now() < opts.until) kill(kind);
  });

  const sandboxWindows = async () => {
    let i = 0;
    await sleep(opts.plan.sandbox.offMs);
    while (Date.now() + opts.plan.sandbox.onMs < opts.until) {
      const faults = opts.plan.sandbox.modes[i++ % opts.plan.sandbox.modes.length]!;
      sandboxMode = Object.entries(faults)
        .map(([k, v]) => `${k}:${v}`)
        .join(',');
      await setSandboxFaults(opts.sandboxUrl, faults, opts.sandboxAdminToken);
      opts.log(`chaos: sandbox ${sandboxMode}`);
      await sleep(opts.plan.sandbox.onMs);
      await setSandboxFaults(opts.sandboxUrl, {}, opts.sandboxAdminToken);
      sandboxMode = 'ok';
      await sleep(opts.plan.sandbox.offMs);
    }
  };

  await Promise.all([
    every(opts.plan.workerEveryMs, () => kill('worker')),
    every(opts.plan.apiEveryMs, () => kill('api')),
    ...oneOffs,
    sandboxWindows(),
  ]);
  await setSandboxFaults(opts.sandboxUrl, {}, opts.sandboxAdminToken);
  return kills;
}
