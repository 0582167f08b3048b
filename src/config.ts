import fs from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { previousKeysProblem, secretsKeyProblem } from './providers/secrets';
import { WORKER_ROLES } from './temporal/taskQueues';
import { payloadKeysProblem } from './temporal/payloadCodec';

/**
 * Every environment variable the processes read, validated once at start.
 * A bad value stops the process with a message naming the variable.
 * The keys of this schema are the contract that docker-compose.yml is checked against.
 */
const port = (fallback: number) => z.coerce.number().int().min(1).max(65535).default(fallback);
/** A port where `0` turns the listener off. */
const optionalPort = (fallback: number) => z.coerce.number().int().min(0).max(65535).default(fallback);
const positiveInt = (fallback: number) => z.coerce.number().int().positive().default(fallback);
const flag = z
  .enum(['true', 'false', '1', '0', 'yes', 'no'])
  .optional()
  .transform((v) => v === 'true' || v === '1' || v === 'yes');
/** A flag that is on unless set to false / 0 / no. */
const flagOn = z
  .enum(['true', 'false', '1', '0', 'yes', 'no'])
  .optional()
  .transform((v) => v === undefined || v === 'true' || v === '1' || v === 'yes');

// Development defaults: fine for `npm start`, refused in production.
const DEV_SANDBOX_API_KEY = 'sk_sandbox_dev';
const DEV_SANDBOX_WEBHOOK_SECRET = 'whsec_sandbox_dev';
const DEV_CURSOR_SECRET = 'cursor-secret-for-development-only';
/** A rate or burst of the rate limits (PRODUCT.md, "Rate limits"); 0 disables that limit. */
const limit = (fallback: number) => z.coerce.number().int().min(0).max(1_000_000_000).default(fallback);

/** Workflows a worker caches unless WORKER_MAX_CACHED_WORKFLOWS says otherwise. */
export const DEFAULT_WORKER_MAX_CACHED_WORKFLOWS = 1000;

export const envSchema = z.object({
  NODE_ENV: z.enum(['development', 'production', 'test']).default('development'),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),

  // Embedded stack (npm start) and its ports, so two stacks can run side by side.
  DATA_DIR: z.string().min(1).default('.data'),
  HOST: z.string().min(1).default('0.0.0.0'),
  PORT: port(3000),
  SANDBOX_PORT: port(3100),
  TEMPORAL_PORT: port(7233),
  TEMPORAL_UI_PORT: port(8233),
  PG_PORT: port(5433),
  SMTP_PORT: port(2525),
  TEMPORAL_CLI_PATH: z.string().min(1).optional(),
  /**
   * Prometheus `/metrics` (docs/observability.md), each on a port of its own, never behind
   * merchant auth: the API's on METRICS_PORT, a worker's on WORKER_METRICS_PORT (`npm run
   * cluster` gives worker #i WORKER_METRICS_PORT + i - 1). `0` turns one off. METRICS_HOST: the
   * address both bind to (default 127.0.0.1); bind it where only the scraper reaches it.
   */
  METRICS_PORT: optionalPort(9464),
  WORKER_METRICS_PORT: optionalPort(9465),
  METRICS_HOST: z.string().min(1).optional(),
  /** `npm run cluster`: API processes sharing PORT (Node's cluster module) and worker processes. */
  API_PROCESSES: z.coerce.number().int().min(1).max(64).default(2),
  WORKER_PROCESSES: z.coerce.number().int().min(1).max(64).default(2),
  /**
   * `npm run cluster`: event delivery workers (WORKER_ROLE `deliveries`) beside the
   * WORKER_PROCESSES, which then poll every queue but the delivery one (`payments-subscriptions`);
   * 0: none, the WORKER_PROCESSES poll every queue (`all`). Decision 0071.
   */
  DELIVERY_WORKER_PROCESSES: z.coerce.number().int().min(0).max(64).default(1),

  // Production services: when set, the embedded parts are skipped.
  DATABASE_URL: z.url({ protocol: /^postgres(ql)?$/ }).optional(),
  /**
   * The schema owner's URL, used only by `db:migrate` (decision 0086): it migrates as the owner and
   * grants DATABASE_URL's role rows, never the schema. Unset: migrations run as DATABASE_URL's role.
   */
  MIGRATION_DATABASE_URL: z.url({ protocol: /^postgres(ql)?$/ }).optional(),
  DATABASE_POOL_MAX: positiveInt(10),
  TEMPORAL_ADDRESS: z.string().min(1).optional(),
  TEMPORAL_NAMESPACE: z.string().min(1).default('default'),
  TEMPORAL_TASK_QUEUE: z.string().min(1).default('payments'),
  TEMPORAL_TLS: flag,
  TEMPORAL_TLS_CERT_PATH: z.string().min(1).optional(),
  TEMPORAL_TLS_KEY_PATH: z.string().min(1).optional(),
  TEMPORAL_API_KEY: z.string().min(1).optional(),
  SMTP_URL: z.string().min(1).optional(),
  /** Where the provider and customers reach this API (provider webhooks); default http://127.0.0.1:$PORT. */
  PUBLIC_BASE_URL: z.url().optional(),

  // The provider sandbox: the processor of test keys (docs/provider-sandbox.md).
  SANDBOX_URL: z.url().optional(),
  SANDBOX_API_KEY: z.string().min(1).default(DEV_SANDBOX_API_KEY),
  SANDBOX_WEBHOOK_SECRET: z.string().min(1).default(DEV_SANDBOX_WEBHOOK_SECRET),
  /** When set, the sandbox's `/_admin/*` routes need `Authorization: Bearer <token>`; required in production. */
  SANDBOX_ADMIN_TOKEN: z.string().min(1).optional(),
  /** How long the sandbox keeps a `tok_processing` charge `processing` before it settles it. */
  SANDBOX_PROCESSING_SECONDS: z.coerce.number().nonnegative().default(5),
  /** The sandbox opens a `tok_dispute` capture's dispute this long after it (docs/provider-sandbox.md). */
  SANDBOX_DISPUTE_SECONDS: z.coerce.number().min(0).max(86_400).default(2),
  /** The sandbox forgets settled payments, refunds and ledger entries older than this (default 30 days; 0 keeps them; decision 0079). */
  SANDBOX_RETENTION_SECONDS: limit(2_592_000),
  /** The sandbox's ledger keeps at most this many entries, the newest (0: no limit; decision 0079). */
  SANDBOX_MAX_LEDGER_ENTRIES: limit(100_000),
  /** A sandbox dispute's evidence is due this long after it opens (default 7 days). */
  SANDBOX_DISPUTE_EVIDENCE_SECONDS: z.coerce.number().min(1).max(31_536_000).default(604_800),
  /** Every provider call gives up after this long; its outcome is then asked for, never guessed. */
  PROVIDER_TIMEOUT_MS: positiveInt(3000),
  /**
   * 32 bytes, base64: encrypts merchants' provider secrets and callback signing secrets at rest
   * (AES-256-GCM). Required in production. Unset: no provider can be configured with secrets
   * (Stripe), stored ones cannot be used, and signing secrets stay in plain text (decision 0067).
   */
  PROVIDER_SECRETS_KEY: z
    .string()
    .optional()
    .superRefine((value, ctx) => {
      const problem = value === undefined ? null : secretsKeyProblem(value);
      if (problem) ctx.addIssue({ code: 'custom', message: problem });
    }),
  /**
   * Encrypts every Temporal payload (workflow and activity arguments and results, updates,
   * signals, memos) before it reaches history: `id:base64[,id:base64...]`, 32-byte keys; the first
   * encrypts, every one listed decrypts (rotation: new key first, old ones kept while their
   * histories are; decision 0078). Required in production; `npm start` keeps one under DATA_DIR.
   */
  TEMPORAL_PAYLOAD_KEYS: z
    .string()
    .optional()
    .superRefine((value, ctx) => {
      const problem = value === undefined ? null : payloadKeysProblem(value);
      if (problem) ctx.addIssue({ code: 'custom', message: problem });
    }),
  /**
   * Bearer token of the codec endpoint (`/codec/decode`, `/codec/encode` on the API's port) that
   * lets the Temporal UI show decrypted payloads to operators. Unset: open in development, off
   * (401) in production. At least 32 characters.
   */
  TEMPORAL_CODEC_TOKEN: z.string().min(32).optional(),
  /** Origins of the Temporal UI allowed to call the codec endpoint (CORS; comma-separated). Default: the embedded UI. */
  TEMPORAL_CODEC_CORS_ORIGINS: z.string().min(1).optional(),
  /**
   * Comma-separated 32-byte base64 keys that still decrypt after PROVIDER_SECRETS_KEY was rotated
   * (decision 0080); `npm run cli -- secrets:reencrypt` moves every row to the current key.
   */
  PROVIDER_SECRETS_PREVIOUS_KEYS: z
    .string()
    .optional()
    .superRefine((value, ctx) => {
      const problem = value === undefined ? null : previousKeysProblem(value);
      if (problem) ctx.addIssue({ code: 'custom', message: problem });
    }),
  /** Where the Stripe adapter sends its requests (stripe-mock in tests). */
  STRIPE_API_BASE: z.url({ protocol: /^https?$/ }).default('https://api.stripe.com'),

  // Timing knobs of PRODUCT.md (used by the money workflows).
  PAYMENT_WAIT_MS: positiveInt(5000),
  PAYMENT_EXPIRY_SECONDS: positiveInt(86400),
  /** A processing payment without a webhook asks the provider after this long, doubling to daily. */
  PAYMENT_PROCESSING_POLL_SECONDS: positiveInt(60),
  REFUND_WAIT_MS: positiveInt(5000),
  /** A refund the provider holds pending is polled after this long, doubling to hourly (webhooks settle it sooner). */
  REFUND_POLL_INITIAL_SECONDS: positiveInt(30),
  /**
   * A payment's or refund's question to the provider without an answer the code knows for this
   * long marks its workflow `Stuck` (search attribute, `workflows_stuck` gauge); it keeps asking.
   */
  WORKFLOW_STUCK_AFTER_SECONDS: positiveInt(3600),
  BILLING_DAY_SECONDS: positiveInt(86400),
  SUBSCRIPTION_AUTHORIZATION_EXPIRY_SECONDS: positiveInt(86400),
  CALLBACK_RETRY_INITIAL_SECONDS: positiveInt(10),
  /** Test-key callbacks may target private addresses in production (live keys never may). */
  ALLOW_PRIVATE_CALLBACKS: flag,
  /** Deliveries of one merchant (callbackUrls and endpoints) that run at once (decision 0069). */
  EVENT_DELIVERY_CONCURRENCY_PER_MERCHANT: positiveInt(4),
  /**
   * Activity and local activity slots of a worker process per connection of its pool
   * (DATABASE_POOL_MAX), shared by its money queues (decision 0085).
   */
  WORKER_ACTIVITY_SLOTS_PER_CONNECTION: z.coerce.number().int().min(1).max(100).default(4),
  /**
   * Per merchant and worker process: provider calls per second sustained (0: no rate limit), the
   * burst above it, and the calls in flight at once (0: half the process's activity slots).
   * Over a limit, the call is not sent: its activity is retried later (decision 0085).
   */
  PROVIDER_CALLS_PER_SECOND_PER_MERCHANT: limit(100),
  PROVIDER_CALL_BURST_PER_MERCHANT: positiveInt(200),
  PROVIDER_CALL_CONCURRENCY_PER_MERCHANT: limit(0),
  /** How often a delivery worker looks for merchants with due deliveries (decision 0069). */
  EVENT_DELIVERY_POLL_MS: positiveInt(500),
  /**
   * Only these merchants' deliveries are woken by this process (comma-separated ids): for tests
   * and development processes that share one database. Unset: every merchant's.
   */
  EVENT_DELIVERY_MERCHANTS: z
    .string()
    .optional()
    .transform((v) =>
      v === undefined
        ? undefined
        : v
            .split(',')
            .map((id) => id.trim())
            .filter(Boolean),
    ),
  /**
   * The worker touches this file every 10 s while it is running (polling its task queue): a
   * container healthcheck reads its age. Unset: no file.
   */
  WORKER_HEALTH_FILE: z.string().min(1).optional(),
  /**
   * The task queues a worker polls (src/temporal/taskQueues.ts): `all` (TEMPORAL_TASK_QUEUE, its
   * subscription queue and its delivery queue), `payments` (the main queue only), `subscriptions`,
   * `deliveries`, or `payments-subscriptions` (every queue but the delivery one, beside
   * `deliveries` workers), so renewal workers and event deliveries scale apart from checkout's.
   */
  WORKER_ROLE: z.enum(WORKER_ROLES).default('all'),
  /**
   * Workflows a worker keeps in memory. Explicit, not the SDK's size from the V8 heap limit (2310 on
   * a 4 GiB heap, a handful in a small container): a worker's memory then does not depend on its
   * host. With the worker's heap limit (WORKER_NODE_ARGS, dev/stack/stackParts.ts) a worker of 10,000
   * live subscriptions stays under 1 GB (bench/RESULTS.md); one that is not cached replays its short
   * history when its timer fires.
   */
  WORKER_MAX_CACHED_WORKFLOWS: z.coerce.number().int().min(0).default(DEFAULT_WORKER_MAX_CACHED_WORKFLOWS),
  /**
   * The subscription queue's worker (roles `all` and `subscriptions`; src/temporal/workflowCache.ts):
   * how many subscription runs it caches (default: WORKER_MAX_CACHED_WORKFLOWS), and how long a
   * renewal's task waits on the sticky queue of the worker that caches its run before any worker may
   * take it (default: the SDK's 10 s). A cache that holds every subscription of the worker, with a
   * timeout outlasting a renewal storm's backlog (60 s for 3,000 here), renews at the bare Temporal
   * floor's pace; each cached run costs about 0.15-0.2 MiB, and a renewal whose worker was killed
   * waits out the timeout (docs/decisions.md, "The subscription worker's cache and sticky timeout").
   */
  WORKER_SUBSCRIPTION_MAX_CACHED_WORKFLOWS: z.coerce.number().int().min(0).optional(),
  WORKER_SUBSCRIPTION_STICKY_TIMEOUT_SECONDS: z.coerce.number().int().min(1).max(3600).default(10),
  /**
   * The workflow stack-trace query (the Temporal UI's "Stack Trace" tab, `temporal workflow stack`).
   * Off by default: it costs about a tenth of the stack's throughput. Read by the worker's preload
   * (src/main/workflowThreads.ts); parsed here so that a bad value stops the worker.
   */
  WORKFLOW_STACK_TRACES: flag,

  // Safe deploys (README, "Deploying workflow changes").
  /** The built workflow bundle (`npm run build`); production default dist/workflow-bundle.js. Unset in development: bundled at start. */
  WORKFLOW_BUNDLE_PATH: z.string().min(1).optional(),
  /** Worker Deployment Versioning; false for a Temporal server without Worker Deployments (< 1.28). */
  WORKER_VERSIONING: flagOn,
  WORKER_DEPLOYMENT_NAME: z.string().min(1).max(255).default('payment-platform'),
  /** Default: the build id in the bundle's manifest (its content hash, or WORKER_BUILD_ID at build time). */
  WORKER_BUILD_ID: z.string().min(1).max(255).optional(),
  /**
   * The worker makes its version Current at start if it is the newest (development). Default off
   * in production: the deploy step promotes (`workers:promote`, decision 0083).
   */
  WORKER_SET_CURRENT_VERSION: z.enum(['true', 'false', '1', '0', 'yes', 'no']).optional(),

  // Verified API keys are cached at most this long; a revoked key is refused within it.
  AUTH_CACHE_TTL_MS: z.coerce.number().int().min(0).max(5000).default(5000),

  /** Signs list cursors (PRODUCT.md, "Lists"); the same in every API process. Required in production. */
  CURSOR_SECRET: z.string().min(32).default(DEV_CURSOR_SECRET),
  // Rate limits (PRODUCT.md, "Rate limits"; docs/decisions.md), shared by every API process through PostgreSQL.
  /** Requests per second per API key, sustained; 0 disables the per-key limit. */
  RATE_LIMIT_PER_SECOND: limit(100),
  /** Requests per API key at once (the bucket's size); 0 disables the per-key limit. */
  RATE_LIMIT_BURST: limit(200),
  // Per-merchant quotas on long-lived work (decision 0079); 0 disables one. Over one: 429 `quota_exceeded`.
  /** Hosted payments waiting on the customer at once, per merchant and environment. */
  QUOTA_OPEN_HOSTED_PAYMENTS: limit(1000),
  /** Non-cancelled subscriptions of the test environment at once, per merchant. */
  QUOTA_LIVE_TEST_SUBSCRIPTIONS: limit(500),
  /** Refunds one payment may have, whatever their status (keeps GET /payments/{id}/refunds bounded). */
  QUOTA_REFUNDS_PER_PAYMENT: limit(100),
  /** Failed authentications per minute per client address, sustained; 0 disables that limit. */
  RATE_LIMIT_AUTH_FAILURES_PER_MINUTE: limit(10),
  /** Failed authentications per client address at once; 0 disables that limit. */
  RATE_LIMIT_AUTH_FAILURES_BURST: limit(20),
  /**
   * The routes without authentication, per client address and API process, counted in memory
   * (decision 0081): every `GET /readyz`, and every refused provider webhook (a verified one is
   * never limited). Over it: 429 with Retry-After. 0 disables.
   */
  RATE_LIMIT_UNAUTHENTICATED_PER_SECOND: limit(10),
  RATE_LIMIT_UNAUTHENTICATED_BURST: limit(50),
  /**
   * Proxies in front of the API whose X-Forwarded-For entries are trusted (0: none, the socket's
   * peer is the client): the failed-authentication limit counts the address the farthest of them
   * saw. Never more than there are, or a client picks the address it is counted under.
   */
  TRUST_PROXY_HOPS: z.coerce.number().int().min(0).max(10).default(0),
});

export type Env = z.infer<typeof envSchema>;

export interface Config extends Omit<Env, 'WORKER_SET_CURRENT_VERSION'> {
  /** Unset: on in development, off in production (decision 0083). */
  WORKER_SET_CURRENT_VERSION: boolean;
  /** Absolute data directory. */
  dataDir: string;
  databaseUrl: string;
  temporalAddress: string;
  sandboxUrl: string;
  publicBaseUrl: string;
  smtpUrl: string;
  /** Where the metrics endpoints bind: METRICS_HOST, else the loopback. */
  metricsHost: string;
  /** True when PostgreSQL / Temporal are external services rather than embedded ones. */
  externalDatabase: boolean;
  externalTemporal: boolean;
}

export class ConfigError extends Error {}

/**
 * Where `/metrics` binds unless METRICS_HOST says otherwise: the loopback, as the metrics are
 * not behind merchant auth (decision 0081). A scraper on another host needs METRICS_HOST set
 * (docker-compose.yml sets 0.0.0.0: the port is reached on the compose network, never published).
 */
export const DEFAULT_METRICS_HOST = '127.0.0.1';

/** Connection facts a running `npm start` leaves in its data dir for the CLI and lone processes. */
export interface StackFile {
  databaseUrl: string;
  temporalAddress: string;
  /**
   * `npm run cluster`: the schema owner's URL (decision 0086, amended), MIGRATION_DATABASE_URL of
   * a CLI without DATABASE_URL (its `db:migrate`); `databaseUrl` is then the application role's.
   */
  migrationDatabaseUrl?: string;
}

export function stackFilePath(dataDir: string): string {
  return path.join(dataDir, 'stack.json');
}

/**
 * Outside production, `npm start` keeps a PROVIDER_SECRETS_KEY of its own in the data dir (made
 * on first start, mode 0600), so merchants' Stripe secrets can be configured with the CLI on a
 * development stack; every process with the same DATA_DIR reads it. Production never does: it
 * takes the key from the environment only.
 */
export function devSecretsKeyPath(dataDir: string): string {
  return path.join(dataDir, 'provider-secrets.key');
}

/** As devSecretsKeyPath, for TEMPORAL_PAYLOAD_KEYS (decision 0078). */
export function devPayloadKeysPath(dataDir: string): string {
  return path.join(dataDir, 'temporal-payload.keys');
}

function readDevSecretsKey(dataDir: string, file = devSecretsKeyPath(dataDir)): string | undefined {
  try {
    return fs.readFileSync(file, 'utf8').trim() || undefined;
  } catch {
    return undefined;
  }
}

export function embeddedDatabaseUrl(pgPort: number): string {
  return `postgres://postgres:postgres@127.0.0.1:${pgPort}/payments`;
}

function readStackFile(dataDir: string): StackFile | undefined {
  try {
    return JSON.parse(fs.readFileSync(stackFilePath(dataDir), 'utf8')) as StackFile;
  } catch {
    return undefined;
  }
}

export function loadConfig(source: NodeJS.ProcessEnv = process.env): Config {
  // Empty strings count as unset, as docker-compose passes them for `${VAR:-}`.
  const cleaned = Object.fromEntries(Object.entries(source).filter(([, v]) => v !== undefined && v !== ''));
  const parsed = envSchema.safeParse(cleaned);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `  ${i.path.join('.')}: ${i.message}`);
    throw new ConfigError(`Invalid configuration:\n${lines.join('\n')}`);
  }
  const env = parsed.data;
  const refusals = productionRefusals(env);
  if (refusals.length > 0) {
    throw new ConfigError(`Invalid configuration:\n${refusals.map((r) => `  ${r}`).join('\n')}`);
  }
  const dataDir = path.resolve(env.DATA_DIR);
  const stack = readStackFile(dataDir);
  return {
    ...env,
    PROVIDER_SECRETS_KEY:
      env.PROVIDER_SECRETS_KEY ?? (env.NODE_ENV === 'production' ? undefined : readDevSecretsKey(dataDir)),
    TEMPORAL_PAYLOAD_KEYS:
      env.TEMPORAL_PAYLOAD_KEYS ??
      (env.NODE_ENV === 'production' ? undefined : readDevSecretsKey(dataDir, devPayloadKeysPath(dataDir))),
    WORKER_SET_CURRENT_VERSION:
      env.WORKER_SET_CURRENT_VERSION === undefined
        ? env.NODE_ENV !== 'production'
        : ['true', '1', 'yes'].includes(env.WORKER_SET_CURRENT_VERSION),
    dataDir,
    databaseUrl: env.DATABASE_URL ?? stack?.databaseUrl ?? embeddedDatabaseUrl(env.PG_PORT),
    // The stack's owner URL goes only with the stack's own DATABASE_URL (decision 0086, amended).
    MIGRATION_DATABASE_URL:
      env.MIGRATION_DATABASE_URL ?? (env.DATABASE_URL === undefined ? stack?.migrationDatabaseUrl : undefined),
    temporalAddress: env.TEMPORAL_ADDRESS ?? stack?.temporalAddress ?? `127.0.0.1:${env.TEMPORAL_PORT}`,
    sandboxUrl: env.SANDBOX_URL ?? `http://127.0.0.1:${env.SANDBOX_PORT}`,
    smtpUrl: env.SMTP_URL ?? `smtp://127.0.0.1:${env.SMTP_PORT}`,
    publicBaseUrl: (env.PUBLIC_BASE_URL ?? `http://127.0.0.1:${env.PORT}`).replace(/\/$/, ''),
    metricsHost: env.METRICS_HOST ?? DEFAULT_METRICS_HOST,
    externalDatabase: env.DATABASE_URL !== undefined,
    externalTemporal: env.TEMPORAL_ADDRESS !== undefined,
  };
}

/**
 * PRODUCT.md, "Production profile": production never runs on development secrets or embedded
 * services. Every offending variable is named at once, so one restart fixes them all.
 */
function productionRefusals(env: Env): string[] {
  if (env.NODE_ENV !== 'production') return [];
  const refusals: string[] = [];
  if (env.SANDBOX_API_KEY === DEV_SANDBOX_API_KEY) refusals.push('SANDBOX_API_KEY: is the development default');
  if (env.SANDBOX_WEBHOOK_SECRET === DEV_SANDBOX_WEBHOOK_SECRET) {
    refusals.push('SANDBOX_WEBHOOK_SECRET: is the development default');
  }
  if (env.CURSOR_SECRET === DEV_CURSOR_SECRET)
    refusals.push('CURSOR_SECRET: required in production (the development default is refused)');
  // Secrets an operator chooses: long and not a pattern (decision 0081). CURSOR_SECRET's length
  // is checked everywhere by the schema; its development default is refused above.
  for (const name of ['SANDBOX_API_KEY', 'SANDBOX_WEBHOOK_SECRET', 'SANDBOX_ADMIN_TOKEN', 'CURSOR_SECRET'] as const) {
    const value = env[name];
    const weakness = value === undefined || refusedAlready(refusals, name) ? null : secretWeakness(value);
    if (weakness) refusals.push(`${name}: ${weakness}`);
  }
  // Reached over the network by providers and customers, and carrying merchants' Stripe keys:
  // https only; plain http to the loopback is the one-machine production shape (`npm run cluster`).
  for (const name of ['PUBLIC_BASE_URL', 'STRIPE_API_BASE'] as const) {
    const value = env[name];
    if (value !== undefined && !httpsOrLoopback(value)) {
      refusals.push(`${name}: must be an https URL in production (plain http only to the loopback)`);
    }
  }
  const required = [
    'SANDBOX_ADMIN_TOKEN',
    'DATABASE_URL',
    'TEMPORAL_ADDRESS',
    'PUBLIC_BASE_URL',
    // Merchants' signing secrets are stored only encrypted under it (decision 0067).
    'PROVIDER_SECRETS_KEY',
    // Card tokens and customer data stay out of Temporal history (decision 0078).
    'TEMPORAL_PAYLOAD_KEYS',
  ] as const;
  for (const name of required) {
    if (env[name] === undefined) refusals.push(`${name}: required in production`);
  }
  return refusals;
}

/** Random secrets of at least this many characters (as `openssl rand -base64 32` gives 44). */
export const MIN_SECRET_LENGTH = 32;
/** The least entropy a secret shows, estimated as length x log2(distinct characters). */
const MIN_SECRET_BITS = 96;

function refusedAlready(refusals: string[], name: string): boolean {
  return refusals.some((r) => r.startsWith(`${name}:`));
}

/**
 * Why a secret chosen by an operator is too weak for production, or null. Not a proof of
 * randomness: it refuses the short and the patterned (`changeme` repeated, one character, a
 * word list of few letters), which is what a hand-typed secret looks like. 32 random characters
 * of base64 or hex pass (`openssl rand -hex 16` shows 11 or more of the 16 digits all but never:
 * 32 x log2(11) = 110 bits); `changeme` repeated to 32 (7 distinct: 90 bits) does not.
 */
export function secretWeakness(value: string): string | null {
  const length = [...value].length;
  if (length < MIN_SECRET_LENGTH) {
    return `too short for production (${length} characters; at least ${MIN_SECRET_LENGTH} random ones, e.g. \`openssl rand -base64 32\`)`;
  }
  const distinct = new Set(value).size;
  const bits = length * Math.log2(Math.max(distinct, 1));
  if (bits < MIN_SECRET_BITS) {
    return `too little variety for a random secret (${distinct} distinct characters over ${length}); use e.g. \`openssl rand -base64 32\``;
  }
  return null;
}

/** https, or http to a loopback host (127.0.0.0/8, ::1, localhost). */
function httpsOrLoopback(value: string): boolean {
  const url = new URL(value);
  if (url.protocol === 'https:') return true;
  if (url.protocol !== 'http:') return false;
  const host = url.hostname.replace(/^\[|\]$/g, '');
  return host === 'localhost' || host === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);
}

/** For process entry points: print the reason and exit instead of a stack trace. */
export function loadConfigOrExit(): Config {
  try {
    return loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`${err.message}\n`);
      process.exit(78); // EX_CONFIG
    }
    throw err;
  }
}

/**
 * What the provider sandbox process may see of the environment (issue 44, item 11; decision
 * 0086): its own SANDBOX_* settings, the profile and the log level, and what a
 * Node process needs to run. Never DATABASE_URL, PROVIDER_SECRETS_KEY or
 * any other secret of the product: it stands in for an outside processor.
 */
const SANDBOX_PROCESS_VARIABLES =
  /^(SANDBOX_[A-Z_]+|NODE_ENV|LOG_LEVEL|PATH|HOME|TZ|LANG|LC_[A-Z]+|NODE_OPTIONS|TMPDIR)$/;

export function sandboxProcessEnv(source: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(source).filter(([name]) => SANDBOX_PROCESS_VARIABLES.test(name)));
}

const sandboxSchema = envSchema.pick({
  NODE_ENV: true,
  LOG_LEVEL: true,
  SANDBOX_PORT: true,
  SANDBOX_URL: true,
  SANDBOX_API_KEY: true,
  SANDBOX_WEBHOOK_SECRET: true,
  SANDBOX_ADMIN_TOKEN: true,
  SANDBOX_PROCESSING_SECONDS: true,
  SANDBOX_DISPUTE_SECONDS: true,
  SANDBOX_RETENTION_SECONDS: true,
  SANDBOX_MAX_LEDGER_ENTRIES: true,
  SANDBOX_DISPUTE_EVIDENCE_SECONDS: true,
});
export type SandboxConfig = z.infer<typeof sandboxSchema> & { sandboxUrl: string };

/**
 * The sandbox process's configuration: from its own variables only (sandboxProcessEnv), never
 * the data dir's files; in production its development defaults and a missing admin token are
 * refused, as for the product (exit 78).
 */
export function loadSandboxConfig(source: NodeJS.ProcessEnv = process.env): SandboxConfig {
  const cleaned = Object.fromEntries(
    Object.entries(sandboxProcessEnv(source)).filter(([, v]) => v !== undefined && v !== ''),
  );
  const parsed = sandboxSchema.safeParse(cleaned);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `  ${i.path.join('.')}: ${i.message}`);
    throw new ConfigError(`Invalid configuration:\n${lines.join('\n')}`);
  }
  const env = parsed.data;
  const refusals: string[] = [];
  if (env.NODE_ENV === 'production') {
    if (env.SANDBOX_API_KEY === DEV_SANDBOX_API_KEY) refusals.push('SANDBOX_API_KEY: is the development default');
    if (env.SANDBOX_WEBHOOK_SECRET === DEV_SANDBOX_WEBHOOK_SECRET) {
      refusals.push('SANDBOX_WEBHOOK_SECRET: is the development default');
    }
    if (env.SANDBOX_ADMIN_TOKEN === undefined) refusals.push('SANDBOX_ADMIN_TOKEN: required in production');
  }
  if (refusals.length > 0) {
    throw new ConfigError(`Invalid configuration:\n${refusals.map((r) => `  ${r}`).join('\n')}`);
  }
  return { ...env, sandboxUrl: env.SANDBOX_URL ?? `http://127.0.0.1:${env.SANDBOX_PORT}` };
}
