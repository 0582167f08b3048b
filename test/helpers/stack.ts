import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import http, { type Server } from 'node:http';
import { Client, Connection } from '@temporalio/client';
import { DefaultLogger, NativeConnection, Runtime, type Worker } from '@temporalio/worker';
import type { MikroORM } from '@mikro-orm/postgresql';
import { openOrm } from '../../src/db/orm';
import { createApp, type ApiSettings, type AppDeps } from '../../src/api/app';
import { OutcomeHintListener } from '../../src/db/outcomeHints';
import { createLogger } from '../../src/logger';
import { createMerchant } from '../../src/domain/merchants';
import { createWorkers } from '../../src/worker';
import { deliveryTaskQueue, workerTaskQueues, type WorkerRole } from '../../src/temporal/taskQueues';
import { startDeliveryKicker } from '../../src/temporal/deliveryKicker';
import { ProviderRegistry, type ProviderSettings } from '../../src/providers/registry';
import { createSandbox, type SandboxOptions } from '../../dev/sandbox/server';
import type { ProviderRequestLog, SandboxStore } from '../../dev/sandbox/state';
import type { SandboxDisputes } from '../../dev/sandbox/disputes';
import { startMailCatcher } from '../../dev/mail/catcher';
import { testStack } from '../setup/stackInfo';
import { requestIdClientOptions } from '../../src/temporal/requestId';
import { clientInterceptors } from '../../src/temporal/connection';
import { newPayloadKeys, payloadDataConverter } from '../../src/temporal/payloadCodec';
import { codecEndpoint } from '../../src/api/routes/codec';
import type { Logger } from '../../src/logger';
import { activitiesInFlight, isForcedShutdown } from '../../src/temporal/workerShutdown';

export const testLogger = createLogger(process.env.TEST_LOG_LEVEL ?? 'silent', 'test');

// Keep the SDK's worker chatter (state changes, expected activity retries) out of test output.
Runtime.install({ logger: new DefaultLogger((process.env.TEST_SDK_LOG_LEVEL as 'WARN' | undefined) ?? 'ERROR') });

export const SANDBOX_API_KEY = 'sk_sandbox_test';
export const SANDBOX_WEBHOOK_SECRET = 'whsec_sandbox_test';

let queueCounter = 0;
/** A task queue of its own for each test file (and each stack within it). */
export function uniqueTaskQueue(name: string): string {
  return `test-${name}-${process.pid}-${++queueCounter}`;
}

export async function openTestOrm(databaseUrl = testStack().databaseUrl): Promise<MikroORM> {
  return openOrm({ databaseUrl, poolMax: 10 });
}

/**
 * PROVIDER_SECRETS_KEY of this test file's registries and of the CLI it runs (test/helpers/cli.ts):
 * a fresh key per test file, so no file can read another's secrets by accident.
 */
export const TEST_PROVIDER_SECRETS_KEY = randomBytes(32).toString('base64');

/**
 * The registry of a test: the sandbox at `sandboxUrl`, Stripe at the run's stripe-mock,
 * merchants' configurations read from `orm` on every resolution (no cache, so a test sees a CLI
 * change at once) unless told.
 */
export function testProviders(
  orm: MikroORM,
  sandboxUrl = 'http://127.0.0.1:9',
  timeoutMs = 2000,
  options: Partial<ProviderSettings> = {},
): ProviderRegistry {
  return new ProviderRegistry({
    sandboxUrl,
    sandboxApiKey: SANDBOX_API_KEY,
    sandboxWebhookSecret: SANDBOX_WEBHOOK_SECRET,
    timeoutMs,
    orm,
    cacheTtlMs: 0,
    secretsKey: TEST_PROVIDER_SECRETS_KEY,
    stripeApiBase: testStack().stripeApiBase,
    ...options,
  });
}

/**
 * TEMPORAL_PAYLOAD_KEYS of this test file's APIs, workers and worker processes: payloads are
 * encrypted in tests as in production (decision 0078), under a fresh key per test file.
 */
export const TEST_PAYLOAD_KEYS = newPayloadKeys('test');
/** The data converter of this file's clients and workers (spread into Client options). */
export const testPayloads = payloadDataConverter(TEST_PAYLOAD_KEYS);

let payloadsInClear = false;
/**
 * For scripts/record-histories.ts only: the stacks of this process write payloads in clear, so the
 * recorded histories replay without any key (test/integration/replay.test.ts; decision 0078).
 */
export function recordPayloadsInClear(): void {
  payloadsInClear = true;
}
/** The data converter of this process's stacks: encrypted, unless recording histories (recordPayloadsInClear). */
export const stackPayloads = () => (payloadsInClear ? {} : testPayloads);

/** TEMPORAL_CODEC_TOKEN of the test APIs' codec endpoint (`/codec/decode`, `/codec/encode`). */
export const TEST_CODEC_TOKEN = 'codec-token-of-the-test-apis-0123456789';

/** CURSOR_SECRET of the test APIs: one for the run, so a cursor from one test API is valid on another. */
export const TEST_CURSOR_SECRET = 'cursor-secret-of-the-test-apis-0123456789';

export interface TestApi {
  baseUrl: string;
  orm: MikroORM;
  client: Client;
  close(): Promise<void>;
}

export interface TestApiOptions {
  databaseUrl?: string;
  orm?: MikroORM;
  providers?: ProviderRegistry;
  settings?: Partial<ApiSettings>;
  extraRoutes?: AppDeps['extraRoutes'];
  /** Another Temporal address (e.g. one where nothing listens); connected lazily. */
  temporalAddress?: string;
  /** Another namespace (e.g. one the server does not know); default `default`. */
  namespace?: string;
  /** The API's logger (default: the quiet test logger); a test reading log lines gives its own. */
  logger?: Logger;
}

/** The real Koa app on an ephemeral port, against the run's PostgreSQL and Temporal. */
export async function startTestApi(opts: TestApiOptions = {}): Promise<TestApi> {
  const orm = opts.orm ?? (await openTestOrm(opts.databaseUrl));
  const temporal = opts.temporalAddress
    ? Connection.lazy({ address: opts.temporalAddress, connectTimeout: 500, interceptors: clientInterceptors() })
    : await Connection.connect({ address: testStack().temporalAddress, interceptors: clientInterceptors() });
  const client = new Client({
    connection: temporal,
    namespace: opts.namespace ?? 'default',
    ...requestIdClientOptions,
    ...stackPayloads(),
  });
  const outcomes = OutcomeHintListener.start(opts.databaseUrl ?? testStack().databaseUrl, opts.logger ?? testLogger);
  const app = createApp({
    outcomes,
    orm,
    client,
    temporal,
    providers: opts.providers ?? testProviders(orm),
    logger: opts.logger ?? testLogger,
    ...codecEndpoint(
      {
        NODE_ENV: 'production',
        TEMPORAL_CODEC_TOKEN: TEST_CODEC_TOKEN,
        TEMPORAL_CODEC_CORS_ORIGINS: undefined,
        TEMPORAL_UI_PORT: 8233,
      },
      stackPayloads().dataConverter,
    ),
    settings: {
      authCacheTtlMs: 5000,
      taskQueue: 'unused',
      paymentWaitMs: 5000,
      paymentExpirySeconds: 86400,
      callbackRetryInitialSeconds: 1,
      refundWaitMs: 5000,
      refundPollInitialSeconds: 2,
      billingDaySeconds: 86400,
      subscriptionAuthorizationExpirySeconds: 86400,
      cursorSecret: TEST_CURSOR_SECRET,
      secretsKey: TEST_PROVIDER_SECRETS_KEY,
      ...opts.settings,
    },
    extraRoutes: opts.extraRoutes,
  });
  // Requests still being handled when the test closes (a client that gave up does not stop its
  // handler) are awaited before the Temporal connection closes under them.
  let inFlight = 0;
  const handle = app.callback();
  const server: Server = await new Promise((resolve) => {
    const s = http
      .createServer((req, res) => {
        inFlight++;
        void Promise.resolve(handle(req, res)).finally(() => inFlight--);
      })
      .listen(0, '127.0.0.1', () => resolve(s));
  });
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}`,
    orm,
    client,
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      for (let waited = 0; inFlight > 0 && waited < 15_000; waited += 50) {
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      await temporal.close();
      await outcomes.close();
      if (!opts.orm) await orm.close();
    },
  };
}

export interface TestMerchant {
  merchantId: string;
  apiKeyId: string;
  publicKey: string;
  secretKey: string;
  /** `Authorization` header value. */
  auth: string;
}

export function basicAuth(publicKey: string, secretKey: string): string {
  return `Basic ${Buffer.from(`${publicKey}:${secretKey}`).toString('base64')}`;
}

/**
 * The merchants this test file made: its delivery kickers wake only theirs (test files share one
 * database; each delivers its own merchants' events with its own keys). Jest gives every test
 * file its own copy of this module.
 */
const testMerchantIds = new Set<string>();

/** Adds a merchant made without createTestMerchant to this file's deliveries. */
export function registerTestMerchant(merchantId: string): void {
  testMerchantIds.add(merchantId);
}

/** This file's merchants so far (for a worker process: EVENT_DELIVERY_MERCHANTS). */
export function testMerchants(): readonly string[] {
  return [...testMerchantIds];
}

export async function createTestMerchant(orm: MikroORM, name = 'Test Merchant'): Promise<TestMerchant> {
  const { merchant, apiKey, secretKey } = await createMerchant(orm.em.fork(), { name, email: 'merchant@example.com' });
  registerTestMerchant(merchant.id);
  return {
    merchantId: merchant.id,
    apiKeyId: apiKey.id,
    publicKey: apiKey.publicKey,
    secretKey,
    auth: basicAuth(apiKey.publicKey, secretKey),
  };
}

export interface TestWorker {
  /** One SDK worker per task queue of its role: the main queue's, then the subscription queue's. */
  workers: Worker[];
  client: Client;
  taskQueue: string;
  stop(): Promise<void>;
}

/**
 * Real workers on the given task queue and its subscription queue (as a worker process of role
 * `all` runs them; `role` picks one), using the run's workflow bundle.
 */
export async function startTestWorker(
  orm: MikroORM,
  opts: {
    taskQueue: string;
    providers?: ProviderRegistry;
    publicBaseUrl?: string;
    smtpUrl?: string;
    /** The worker's logger (default: the quiet test logger); a test reading log lines gives its own. */
    logger?: Logger;
    /** Which queues it polls (WORKER_ROLE; default `all`). */
    role?: WorkerRole;
    /** NODE_ENV=production's email addressing (decision 0066); default false. */
    productionProfile?: boolean;
    /** The sweeper's subscription starts (a revived run's billing day and authorization expiry): the API's. */
    billingDaySeconds?: number;
    subscriptionAuthorizationExpirySeconds?: number;
    /** Another workflow bundle (a fixture's: test/fixtures/legacy-subscription); default the shipped one. */
    workflowBundlePath?: string;
  },
): Promise<TestWorker> {
  const stack = testStack();
  const connection = await NativeConnection.connect({ address: stack.temporalAddress });
  const clientConnection = await Connection.connect({
    address: stack.temporalAddress,
    interceptors: clientInterceptors(),
  });
  const client = new Client({
    connection: clientConnection,
    namespace: 'default',
    ...requestIdClientOptions,
    ...stackPayloads(),
  });
  const taskQueues = workerTaskQueues(opts.role ?? 'all', opts.taskQueue);
  const workers = await createWorkers({
    connection,
    namespace: 'default',
    taskQueue: opts.taskQueue,
    taskQueues,
    orm,
    logger: opts.logger ?? testLogger,
    providers: opts.providers ?? testProviders(orm),
    publicBaseUrl: opts.publicBaseUrl ?? 'http://127.0.0.1:9',
    client,
    callbackRetryInitialSeconds: 1,
    ...(opts.billingDaySeconds ? { billingDaySeconds: opts.billingDaySeconds } : {}),
    ...(opts.subscriptionAuthorizationExpirySeconds
      ? { subscriptionAuthorizationExpirySeconds: opts.subscriptionAuthorizationExpirySeconds }
      : {}),
    ...(opts.smtpUrl ? { smtpUrl: opts.smtpUrl } : {}),
    ...(opts.productionProfile ? { productionProfile: true } : {}),
    workflowBundle: { codePath: opts.workflowBundlePath ?? stack.workflowBundlePath },
    ...stackPayloads(),
  });
  const running = workers.map((worker) =>
    worker.run().catch((err: unknown) => {
      // A stop that outlasted the force time (decision 0075): say what it left behind.
      if (isForcedShutdown(err)) {
        process.stderr.write(
          `worker on ${worker.options.taskQueue} stopped by force; activities running: ${JSON.stringify(activitiesInFlight())}\n`,
        );
      }
    }),
  );
  // As a worker process that delivers events does (src/main/worker.ts), for this file's merchants.
  const deliveries = deliveryTaskQueue(opts.taskQueue);
  const kicker = taskQueues.includes(deliveries)
    ? startDeliveryKicker({
        orm,
        client,
        taskQueue: deliveries,
        logger: opts.logger ?? testLogger,
        intervalMs: 100,
        merchantIds: testMerchants,
      })
    : undefined;
  const stop = async () => {
    await kicker?.stop();
    for (const worker of workers) if (worker.getState() === 'RUNNING') worker.shutdown();
    await Promise.all(running);
    await clientConnection.close();
    // After a forced stop the abandoned worker still holds the connection.
    await connection.close().catch(() => undefined);
  };
  let stopped: Promise<void> | undefined;
  return {
    workers,
    client,
    taskQueue: opts.taskQueue,
    stop: () => (stopped ??= stop()),
  };
}

/** A sandbox ledger entry (docs/provider-sandbox.md). */
export interface LedgerEntry {
  id: string;
  type: 'capture' | 'refund' | 'dispute';
  status:
    | 'succeeded'
    | 'failed'
    | 'pending'
    | 'requires_action'
    | 'processing'
    | 'canceled'
    | 'needs_response'
    | 'under_review'
    | 'won'
    | 'lost'
    | 'accepted';
  amount: number;
  currency: string;
  idempotencyKey: string | null;
  reference: string | null;
  transactionId: string;
  paymentTransactionId: string | null;
  metadata: Record<string, string>;
  createdAt: string;
}

export interface PaymentStack {
  orm: MikroORM;
  api: TestApi;
  worker: TestWorker;
  sandboxUrl: string;
  /** The sandbox's state, in this process: a change made here sends no webhook (a lost one). */
  sandboxStore: SandboxStore;
  /** The sandbox's disputes, in this process: a change made here sends no webhook (a lost one). */
  sandboxDisputes: SandboxDisputes;
  taskQueue: string;
  providers: ProviderRegistry;
  /** Starts another worker on the same task queues (after a simulated crash), or on its role's. */
  restartWorker(role?: WorkerRole): Promise<TestWorker>;
  sandbox(path: string, body?: unknown): Promise<unknown>;
  /**
   * A POST to the provider's API on the platform's account by someone else (not through our
   * API): another request under one of our keys, a card saved elsewhere.
   */
  provider(path: string, body: unknown, idempotencyKey?: string, signal?: AbortSignal): Promise<Response>;
  /** The sandbox ledger entries of one kind tied to a record (metadata.paymentId by default). */
  ledger(type: LedgerEntry['type'], id: string, key?: string): Promise<LedgerEntry[]>;
  /**
   * The `/v1` requests the sandbox received (`GET /_admin/requests`) that name `id` in their URL
   * or Idempotency-Key (a record's id is its keys' prefix), oldest first.
   */
  requests(id: string): Promise<ProviderRequestLog[]>;
  /** Emails the worker sent, as caught by this stack's SMTP server. */
  mail(): CaughtEmail[];
  close(): Promise<void>;
}

export interface CaughtEmail {
  to: string;
  subject: string;
  messageId: string;
  /** The Date header (a test clock's time for a clock subscription's email). */
  date: string;
  text: string;
}

function readCaught(dir: string): CaughtEmail[] {
  return fs
    .readdirSync(dir)
    .filter((f) => f.endsWith('.eml'))
    .sort()
    .map((f) => {
      const raw = fs.readFileSync(path.join(dir, f), 'utf8');
      const [head = '', ...body] = raw.split(/\r?\n\r?\n/);
      const header = (name: string) =>
        new RegExp(`^${name}: (.*(?:\\r?\\n[ \\t].*)*)`, 'mi').exec(head)?.[1]?.replace(/\r?\n[ \t]+/g, ' ') ?? '';
      let text = body.join('\n\n');
      if (/quoted-printable/i.test(header('Content-Transfer-Encoding'))) {
        text = text
          .replace(/=\r?\n/g, '')
          .replace(/=([0-9A-F]{2})/g, (_m, hex: string) => String.fromCharCode(parseInt(hex, 16)));
      }
      return {
        to: header('To'),
        subject: header('Subject'),
        messageId: header('Message-ID'),
        date: header('Date'),
        text,
      };
    });
}

/**
 * Everything a money test needs, all real: its own provider sandbox (HTTP), the API and a
 * worker on a task queue of its own, against the run's PostgreSQL and Temporal.
 */
export async function startPaymentStack(
  name: string,
  settings: Partial<ApiSettings> = {},
  providerTimeoutMs = 1500,
  providerOptions: Partial<ProviderSettings> = {},
  /**
   * One logger for the API and the worker (default: the quiet test logger); how long the sandbox
   * keeps a `tok_processing` charge processing (default 5 s, as SANDBOX_PROCESSING_SECONDS);
   * `sandbox`: the sandbox's dispute timings (SANDBOX_DISPUTE_SECONDS, SANDBOX_DISPUTE_EVIDENCE_SECONDS).
   */
  {
    logger,
    sandboxProcessingSeconds,
    sandbox: sandboxTimings = {},
    productionProfile,
    workflowBundlePath,
  }: {
    logger?: Logger;
    /** The worker runs this workflow bundle (a fixture's) instead of the shipped one. */
    workflowBundlePath?: string;
    /** The worker addresses emails as NODE_ENV=production does (decision 0066). */
    productionProfile?: boolean;
    sandboxProcessingSeconds?: number;
    sandbox?: Pick<SandboxOptions, 'disputeSeconds' | 'disputeEvidenceSeconds'>;
  } = {},
): Promise<PaymentStack> {
  const orm = await openTestOrm();
  const sandbox = createSandbox({
    apiKey: SANDBOX_API_KEY,
    webhookSecret: SANDBOX_WEBHOOK_SECRET,
    ...(sandboxProcessingSeconds === undefined ? {} : { processingSeconds: sandboxProcessingSeconds }),
    ...sandboxTimings,
  });
  const running = await sandbox.listen(0);
  const providers = testProviders(orm, running.url, providerTimeoutMs, providerOptions);
  const taskQueue = uniqueTaskQueue(name);
  const api = await startTestApi({
    orm,
    providers,
    settings: { taskQueue, ...settings },
    ...(logger ? { logger } : {}),
  });
  const mailDir = fs.mkdtempSync(path.join(os.tmpdir(), `mail-${name}-`));
  const catcher = await startMailCatcher({ port: 0, dir: mailDir });
  const smtpUrl = `smtp://127.0.0.1:${catcher.port}`;
  const workerOptions = {
    taskQueue,
    providers,
    publicBaseUrl: api.baseUrl,
    smtpUrl,
    ...(logger ? { logger } : {}),
    ...(productionProfile ? { productionProfile } : {}),
    ...(workflowBundlePath ? { workflowBundlePath } : {}),
    ...(settings.billingDaySeconds ? { billingDaySeconds: settings.billingDaySeconds } : {}),
    ...(settings.subscriptionAuthorizationExpirySeconds
      ? { subscriptionAuthorizationExpirySeconds: settings.subscriptionAuthorizationExpirySeconds }
      : {}),
  };
  let worker = await startTestWorker(orm, workerOptions);
  const stack: PaymentStack = {
    orm,
    api,
    get worker() {
      return worker;
    },
    sandboxUrl: running.url,
    sandboxStore: sandbox.store,
    sandboxDisputes: sandbox.disputes,
    taskQueue,
    providers,
    restartWorker: async (role?: WorkerRole) => {
      worker = await startTestWorker(orm, { ...workerOptions, ...(role ? { role } : {}) });
      return worker;
    },
    sandbox: async (path: string, body?: unknown) => {
      const res = await fetch(`${running.url}${path}`, {
        method: body === undefined ? 'GET' : 'POST',
        headers: body === undefined ? {} : { 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      return res.json();
    },
    provider: (path, body, idempotencyKey, signal) =>
      fetch(`${running.url}${path}`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${SANDBOX_API_KEY}`,
          'content-type': 'application/json',
          ...(idempotencyKey ? { 'idempotency-key': idempotencyKey } : {}),
        },
        body: JSON.stringify(body),
        signal,
      }),
    ledger: async (type, id, key = 'paymentId') => {
      const { entries } = (await stack.sandbox('/_admin/ledger')) as { entries: LedgerEntry[] };
      return entries.filter((e) => e.type === type && e.metadata?.[key] === id);
    },
    requests: async (id) => {
      const { requests } = (await stack.sandbox('/_admin/requests')) as { requests: ProviderRequestLog[] };
      return requests.filter((r) => r.url.includes(id) || (r.idempotencyKey ?? '').includes(id));
    },
    mail: () => readCaught(mailDir),
    close: async () => {
      await worker.stop();
      await api.close();
      await running.close();
      await catcher.close();
      await orm.close();
      fs.rmSync(mailDir, { recursive: true, force: true });
    },
  };
  return stack;
}
