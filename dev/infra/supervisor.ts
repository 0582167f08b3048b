import type { ChildProcess } from 'node:child_process';
import { stopProcess } from './processes';

/** A child that exits with this code found its configuration invalid: restarting cannot help. */
export const EXIT_CONFIG = 78;

export interface SupervisorOptions {
  name: string;
  start: () => ChildProcess;
  /** Loud lines for the operator's terminal. */
  log: (line: string) => void;
  /** The whole stack has to stop (the child cannot run as configured). */
  giveUp: (reason: string) => void;
  /** Delay before the n-th restart in a row (default 1 s doubling to 30 s). */
  backoffMs?: (streak: number) => number;
  /**
   * A child that ran this long before it died starts a new streak (default 5 s): a process
   * that crashes while starting dies within seconds; one killed after running a while is not in
   * a crash loop and comes back after the shortest backoff. (It was 15 s: in the 30-minute chaos
   * run, with a worker killed every ~10 s, most workers died again within 15 s of a restart and
   * 70 of 132 restarts waited the full 30 s, leaving no worker at all for long stretches.)
   */
  stableAfterMs?: number;
  /** Called with each new child (the first and every restart), e.g. to publish its pid. */
  onStart?: (child: ChildProcess) => void;
}

export interface Supervised {
  readonly name: string;
  /** The child running now (a new one after each restart). */
  current(): ChildProcess;
  restarts(): number;
  /** Stops restarting, then stops the child (SIGTERM, SIGKILL after `graceMs`). */
  stop(graceMs?: number): Promise<void>;
}

const defaultBackoff = (streak: number) => Math.min(1000 * 2 ** (streak - 1), 30_000);

/**
 * Keeps one child process running: a child that dies (a crash, an OOM kill, a SIGKILL) is
 * restarted after a backoff that grows while it keeps dying, with a loud line each time, so one
 * crashed API or worker never takes the whole stack down. A child that reports a configuration
 * error (exit 78) is not restarted: that needs the operator.
 */
export function supervise(opts: SupervisorOptions): Supervised {
  const backoff = opts.backoffMs ?? defaultBackoff;
  const stableAfterMs = opts.stableAfterMs ?? 5_000;
  let stopping = false;
  let streak = 0;
  let restarts = 0;
  let timer: NodeJS.Timeout | undefined;
  let child: ChildProcess;

  const launch = () => {
    const startedAt = Date.now();
    child = opts.start();
    opts.onStart?.(child);
    child.once('exit', (code, signal) => {
      if (stopping) return;
      if (code === EXIT_CONFIG) {
        opts.giveUp(`The ${opts.name} process refused its configuration (exit ${EXIT_CONFIG}).`);
        return;
      }
      streak = Date.now() - startedAt >= stableAfterMs ? 1 : streak + 1;
      const delay = backoff(streak);
      opts.log(
        `!!! The ${opts.name} process exited (${signal ?? `code ${code}`}); restarting it in ` +
          `${(delay / 1000).toFixed(1)} s (${streak} in a row).`,
      );
      timer = setTimeout(() => {
        if (stopping) return;
        restarts++;
        launch();
      }, delay);
    });
  };
  launch();

  return {
    name: opts.name,
    current: () => child,
    restarts: () => restarts,
    async stop(graceMs = 15_000) {
      stopping = true;
      if (timer) clearTimeout(timer);
      await stopProcess(child, graceMs);
    },
  };
}
