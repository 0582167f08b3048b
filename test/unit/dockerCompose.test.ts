import fs from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import { envSchema, loadConfig } from '../../src/config';
import { customSearchAttributes } from '../../workflows/searchAttributes';

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

const APP_SERVICES = ['api', 'worker', 'migrate', 'provider-sandbox'];
const REQUIRED_SERVICES = [
  'postgres',
  'temporal',
  'temporal-admin-tools',
  'temporal-ui',
  'migrate',
  'api',
  'worker',
  'provider-sandbox',
  'smtp',
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

  it.each(APP_SERVICES)('gives %s only variables that src/config.ts reads', (name) => {
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

  it.each(APP_SERVICES)(
    'starts %s under the production profile once the operator sets the required secrets',
    (name) => {
      const environment = services[name]?.environment as Record<string, unknown>;
      const required: string[] = [];
      // Compose interpolation as `docker compose` does it with only the `${VAR:?}` variables set.
      const env = Object.fromEntries(
        Object.entries(environment).map(([key, value]) => [
          key,
          String(value).replace(
            /\$\{(\w+)(?::([-?])([^}]*))?\}/g,
            (_, variable: string, kind?: string, rest?: string) => {
              if (kind === '?') {
                required.push(variable);
                return `operator-set-${variable.toLowerCase()}`;
              }
              return kind === '-' ? (rest ?? '') : '';
            },
          ),
        ]),
      );
      expect(env.NODE_ENV).toBe('production');
      expect(() => loadConfig({ ...env, DATA_DIR: '/tmp/nowhere-compose-test' })).not.toThrow();
      // Secrets have no default in the file: compose stops with a message when one is unset.
      expect(required).toEqual(
        expect.arrayContaining(['SANDBOX_API_KEY', 'SANDBOX_WEBHOOK_SECRET', 'SANDBOX_ADMIN_TOKEN']),
      );
    },
  );

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
});

describe('Dockerfile', () => {
  it('exists', () => {
    expect(fs.existsSync(DOCKERFILE_PATH)).toBe(true);
  });

  const stages = fs.existsSync(DOCKERFILE_PATH) ? dockerfileStages(fs.readFileSync(DOCKERFILE_PATH, 'utf8')) : [];
  const final = stages.at(-1);

  it('is a multi-stage build on node:20-bookworm-slim', () => {
    expect(stages.length).toBeGreaterThanOrEqual(2);
    const stageNames = stages.map((s) => s.name);
    for (const stage of stages) {
      expect(stage.from === 'node:20-bookworm-slim' || stageNames.includes(stage.from.toLowerCase())).toBe(true);
    }
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
});
