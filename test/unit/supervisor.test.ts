import { spawn } from 'node:child_process';
import { EXIT_CONFIG, supervise, type Supervised } from '../../dev/infra/supervisor';

/** A real Node child: `node -e <script>`. */
const node = (script: string) => () => spawn(process.execPath, ['-e', script], { stdio: 'ignore' });
const waitFor = async (check: () => boolean, timeoutMs = 10_000) => {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 20));
  }
};

/** npm start's supervision: a dead child is restarted with backoff and a loud line; never the end of the stack. */
describe('supervisor', () => {
  let supervised: Supervised | undefined;
  afterEach(async () => {
    await supervised?.stop(1000);
    supervised = undefined;
  });

  it('restarts a killed child, loudly, with a backoff that grows while it keeps dying', async () => {
    const lines: string[] = [];
    const gaveUp: string[] = [];
    supervised = supervise({
      name: 'worker',
      start: node('setInterval(() => {}, 1000)'),
      log: (line) => lines.push(line),
      giveUp: (reason) => gaveUp.push(reason),
      backoffMs: (streak) => 50 * streak,
    });
    const first = supervised.current();
    await waitFor(() => first.pid !== undefined);
    first.kill('SIGKILL');
    await waitFor(() => supervised!.restarts() === 1);
    const second = supervised.current();
    expect(second.pid).not.toBe(first.pid);
    expect(lines[0]).toMatch(/^!!! The worker process exited \(SIGKILL\); restarting it in 0\.1 s \(1 in a row\)/);
    second.kill('SIGKILL');
    await waitFor(() => supervised!.restarts() === 2);
    expect(lines[1]).toMatch(/restarting it in 0\.1 s \(2 in a row\)/);
    expect(gaveUp).toEqual([]);
  });

  it('keeps restarting a child that crashes at once, each time a little later', async () => {
    const lines: string[] = [];
    supervised = supervise({
      name: 'api',
      start: node('process.exit(1)'),
      log: (line) => lines.push(line),
      giveUp: () => undefined,
      backoffMs: (streak) => 20 * streak,
    });
    await waitFor(() => supervised!.restarts() >= 3);
    expect(lines.slice(0, 3).map((l) => /\((\d+) in a row\)/.exec(l)?.[1])).toEqual(['1', '2', '3']);
    expect(lines[0]).toContain('(code 1)');
  });

  it('gives up on a child that refuses its configuration (exit 78): that needs the operator', async () => {
    const gaveUp: string[] = [];
    const lines: string[] = [];
    supervised = supervise({
      name: 'api',
      start: node(`process.exit(${EXIT_CONFIG})`),
      log: (line) => lines.push(line),
      giveUp: (reason) => gaveUp.push(reason),
      backoffMs: () => 10,
    });
    await waitFor(() => gaveUp.length === 1);
    await new Promise((r) => setTimeout(r, 100));
    expect(supervised.restarts()).toBe(0);
    expect(lines).toEqual([]);
    expect(gaveUp[0]).toMatch(/refused its configuration/);
  });

  it('stop() ends the child and restarts nothing afterwards', async () => {
    supervised = supervise({
      name: 'sandbox',
      start: node('setInterval(() => {}, 1000)'),
      log: () => undefined,
      giveUp: () => undefined,
      backoffMs: () => 10,
    });
    const child = supervised.current();
    await waitFor(() => child.pid !== undefined);
    await supervised.stop(1000);
    expect(child.signalCode ?? child.exitCode).not.toBeNull();
    await new Promise((r) => setTimeout(r, 100));
    expect(supervised.restarts()).toBe(0);
  });
});
