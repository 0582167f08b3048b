import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { ownChild, stopProcess } from './processes';
import { goInstall, goModuleDir, hasGo, isExecutable, onPath, toolCacheDir } from './goTools';

/**
 * stripe-mock, Stripe's official mock server (validates every request against Stripe's OpenAPI
 * spec, answers fixtures): found like the Temporal CLI, in this order: STRIPE_MOCK_PATH,
 * `stripe-mock` on PATH, a cached build in the per-user cache, else `go install` into that cache.
 * The version is pinned so that every clone validates against the same spec.
 */
export const STRIPE_MOCK_VERSION = 'v0.203.0';

export function stripeMockCacheDir(): string {
  return toolCacheDir(`stripe-mock-${STRIPE_MOCK_VERSION}`);
}

export async function locateStripeMock(log: (msg: string) => void = () => {}): Promise<string> {
  const explicit = process.env.STRIPE_MOCK_PATH;
  if (explicit) {
    if (!isExecutable(explicit)) throw new Error(`STRIPE_MOCK_PATH=${explicit} is not an executable file`);
    return explicit;
  }
  const fromPath = onPath('stripe-mock');
  if (fromPath) return fromPath;
  const cacheDir = stripeMockCacheDir();
  const cached = path.join(cacheDir, 'stripe-mock');
  if (isExecutable(cached)) return cached;
  if (!hasGo()) {
    throw new Error(
      'stripe-mock is needed (STRIPE_MOCK_PATH, on PATH, or built with Go into ' +
        `${cacheDir}), and Go is not available to build it`,
    );
  }
  log(`Building stripe-mock ${STRIPE_MOCK_VERSION} with Go into ${cacheDir} (once)...`);
  await goInstall(cacheDir, [`github.com/stripe/stripe-mock@${STRIPE_MOCK_VERSION}`], { 'stripe-mock': 'stripe-mock' });
  log('stripe-mock built.');
  return cached;
}

/**
 * The fixtures this stripe-mock version answers with (fixtures3.json of its module), copied into
 * the per-user cache on first use (from Go's module cache, downloading the module if needed).
 */
export async function bundledStripeMockFixtures(): Promise<string> {
  const cached = path.join(stripeMockCacheDir(), 'fixtures3.json');
  if (fs.existsSync(cached)) return cached;
  const moduleDir = await goModuleDir('github.com/stripe/stripe-mock', STRIPE_MOCK_VERSION);
  fs.mkdirSync(path.dirname(cached), { recursive: true });
  const staging = `${cached}.${process.pid}.tmp`;
  fs.copyFileSync(path.join(moduleDir, 'embedded', 'openapi', 'fixtures3.json'), staging);
  fs.renameSync(staging, cached);
  return cached;
}

/**
 * stripe-mock's fixtures, edited so that what we create comes back settled: a PaymentIntent
 * succeeded, a Checkout Session a completed card authorization whose SetupIntent succeeded with
 * a saved PaymentMethod of a Customer. stripe-mock is stateless (its answers are fixtures, with request
 * parameters reflected), so this is how a test walks a payment through capture and refund on
 * requests stripe-mock has validated. Pure: takes and returns the parsed fixtures file.
 */
export function settledFixtures(bundled: { resources: Record<string, Record<string, unknown>> }) {
  const r = structuredClone(bundled.resources);
  const customer = r.customer!.id as string;
  const paymentMethod = r.payment_method!.id as string;
  r.payment_intent = {
    ...r.payment_intent,
    status: 'succeeded',
    amount_received: r.payment_intent!.amount,
    last_payment_error: null,
  };
  // A session read back is a completed card authorization (setup mode; hosted payments are
  // covered by the bundled fixtures, whose session stays open).
  r['checkout.session'] = {
    ...r['checkout.session'],
    mode: 'setup',
    status: 'complete',
    payment_status: 'no_payment_required',
    payment_intent: null,
    setup_intent: r.setup_intent!.id,
    customer,
  };
  r.setup_intent = { ...r.setup_intent, status: 'succeeded', payment_method: paymentMethod, customer };
  return { ...bundled, resources: r };
}

/** Writes the settled fixtures beside the run's other files; returns their path. */
export async function writeSettledFixtures(dir: string): Promise<string> {
  const bundled = JSON.parse(fs.readFileSync(await bundledStripeMockFixtures(), 'utf8'));
  fs.mkdirSync(dir, { recursive: true });
  const file = path.join(dir, 'fixtures-settled.json');
  fs.writeFileSync(file, JSON.stringify(settledFixtures(bundled)));
  return file;
}

export interface StripeMock {
  /** e.g. `http://127.0.0.1:41234` (what STRIPE_API_BASE takes). */
  apiBase: string;
  process: ChildProcess;
  stop(): Promise<void>;
}

export interface StripeMockOptions {
  binPath: string;
  /** A private directory: holds the HTTPS listener's Unix socket (see below). */
  dir: string;
  readyTimeoutMs?: number;
  /** A fixtures file instead of the bundled one (e.g. writeSettledFixtures). */
  fixturesPath?: string;
}

/**
 * The arguments: HTTP on a loopback port the system picks (read back from its output, so no
 * race for a port). `-http-addr` alone still opens HTTPS on the fixed port 12112 on every
 * interface (a second run on the machine would then die on "address in use"), so HTTPS goes
 * to a Unix socket in our own directory instead.
 */
export function stripeMockArgs(dir: string): string[] {
  return ['-http-addr', '127.0.0.1:', '-https-unix', path.join(dir, 'stripe-mock-https.sock')];
}

/** Starts stripe-mock and resolves once it listens (it prints the address after binding it). */
export async function startStripeMock(opts: StripeMockOptions): Promise<StripeMock> {
  fs.mkdirSync(opts.dir, { recursive: true });
  const args = [...stripeMockArgs(opts.dir), ...(opts.fixturesPath ? ['-fixtures', opts.fixturesPath] : [])];
  const child = spawn(opts.binPath, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  const owned = ownChild(child);
  const stop = () => stopProcess(child, 5_000);
  let output = '';
  const address = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => {
      void stop();
      reject(new Error(`stripe-mock did not listen within ${opts.readyTimeoutMs ?? 60_000} ms: ${output.slice(-500)}`));
    }, opts.readyTimeoutMs ?? 60_000);
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      const match = /Listening for HTTP at address: (127\.0\.0\.1:\d+)/.exec(output);
      if (match) {
        clearTimeout(timer);
        resolve(match[1]!);
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('exit', () => {
      clearTimeout(timer);
      reject(new Error(`stripe-mock ${owned.exited() ?? 'exited'} before listening: ${output.slice(-500)}`));
    });
    child.once('error', (err) => {
      clearTimeout(timer);
      reject(new Error(`stripe-mock failed to start: ${err.message}`));
    });
  });
  // Keep draining its output (a full pipe would block it); nothing in it is needed any more.
  child.stdout!.removeAllListeners('data');
  child.stderr!.removeAllListeners('data');
  child.stdout!.resume();
  child.stderr!.resume();
  return { apiBase: `http://${address}`, process: child, stop };
}
