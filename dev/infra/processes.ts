import type { ChildProcess } from 'node:child_process';

/**
 * Ties a child to this process: it never outlives us (e.g. a test run that crashed past its
 * teardown), and `exited()` says whether and how it ended (for "not ready" messages).
 */
export function ownChild(child: ChildProcess): { exited(): string | undefined } {
  let exited: string | undefined;
  const killOnExit = () => child.kill('SIGKILL');
  process.once('exit', killOnExit);
  child.once('error', (err) => {
    exited = `failed to start: ${err.message}`;
  });
  child.once('exit', (code, signal) => {
    exited = `exited with ${signal ?? code}`;
    process.removeListener('exit', killOnExit);
  });
  return { exited: () => exited };
}

/** Stops a child: SIGTERM (its own shutdown), SIGKILL if it is still there after `graceMs`. */
export async function stopProcess(child: ChildProcess, graceMs: number): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null || child.pid === undefined) return;
  const done = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
  await done;
  clearTimeout(timer);
}
