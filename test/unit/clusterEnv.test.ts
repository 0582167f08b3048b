import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  devPayloadKeysPath,
  devSecretsKeyPath,
  loadConfig,
  loadSandboxConfig,
  secretWeakness,
  stackFilePath,
} from '../../src/config';
import { roleOfUrl } from '../../src/db/roles';
import { newPayloadKeys } from '../../src/temporal/payloadCodec';
import {
  CLUSTER_APP_ROLE,
  CLUSTER_SECRET_NAMES,
  clusterDatabase,
  clusterProductionEnv,
  clusterSandboxEnv,
  clusterSecretsPath,
} from '../../dev/stack/clusterEnv';

/**
 * `npm run cluster` runs its API and workers under the production profile (issue 44 item 14,
 * decision 0081): the environment it gives them passes src/config.ts's production refusals.
 */
describe("npm run cluster's production environment", () => {
  let dataDir: string;
  const services = {
    databaseUrl: 'postgres://postgres:postgres@127.0.0.1:5999/payments',
    temporalAddress: '127.0.0.1:7999',
    workflowBundlePath: '/tmp/cluster/workflow-bundle.js',
  };
  // What the cluster's primary sees: a developer's shell, the development profile.
  const shell = (dir: string): NodeJS.ProcessEnv => ({ PATH: '/usr/bin', DATA_DIR: dir, PORT: '3999' });

  beforeEach(() => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'cluster-env-'));
    fs.writeFileSync(devSecretsKeyPath(dataDir), randomBytes(32).toString('base64'));
    fs.writeFileSync(devPayloadKeysPath(dataDir), newPayloadKeys('dev'));
  });
  afterEach(() => fs.rmSync(dataDir, { recursive: true, force: true }));

  it('starts the API and workers under NODE_ENV=production, every production check passed', () => {
    const env = clusterProductionEnv(loadConfig(shell(dataDir)), services, shell(dataDir));
    const config = loadConfig(env); // throws (exit 78 in the process) on any refusal
    expect(config).toMatchObject({
      NODE_ENV: 'production',
      databaseUrl: services.databaseUrl,
      temporalAddress: services.temporalAddress,
      publicBaseUrl: 'http://127.0.0.1:3999',
      metricsHost: '127.0.0.1',
      ALLOW_PRIVATE_CALLBACKS: true,
      WORKFLOW_BUNDLE_PATH: services.workflowBundlePath,
      PROVIDER_SECRETS_KEY: fs.readFileSync(devSecretsKeyPath(dataDir), 'utf8').trim(),
      // Decision 0078: the data dir's key ring, so its histories stay readable across restarts.
      TEMPORAL_PAYLOAD_KEYS: fs.readFileSync(devPayloadKeysPath(dataDir), 'utf8').trim(),
    });
    // The sandbox (an outside provider's stand-in) shares the keys, in the development profile.
    const sandbox = loadConfig(clusterSandboxEnv(env));
    expect(sandbox.NODE_ENV).toBe('development');
    expect(sandbox.SANDBOX_ADMIN_TOKEN).toBeUndefined();
    expect(sandbox.SANDBOX_API_KEY).toBe(config.SANDBOX_API_KEY);
    expect(sandbox.SANDBOX_WEBHOOK_SECRET).toBe(config.SANDBOX_WEBHOOK_SECRET);
    // Issue 44, item 11: the stand-in processor never sees the product's database or secrets.
    const sandboxEnv = clusterSandboxEnv(env);
    for (const name of ['DATABASE_URL', 'PROVIDER_SECRETS_KEY', 'TEMPORAL_PAYLOAD_KEYS', 'CURSOR_SECRET', 'DATA_DIR']) {
      expect({ name, value: sandboxEnv[name] }).toEqual({ name, value: undefined });
    }
    expect(loadSandboxConfig(sandboxEnv)).toMatchObject({ SANDBOX_API_KEY: config.SANDBOX_API_KEY });
  });

  it('keeps the secrets of a data dir across restarts (0600), and takes strong ones the caller gives', () => {
    const first = clusterProductionEnv(loadConfig(shell(dataDir)), services, shell(dataDir));
    const again = clusterProductionEnv(loadConfig(shell(dataDir)), services, shell(dataDir));
    for (const name of CLUSTER_SECRET_NAMES) expect(again[name]).toBe(first[name]);
    expect(fs.statSync(clusterSecretsPath(dataDir)).mode & 0o777).toBe(0o600);

    const strong = randomBytes(32).toString('base64url');
    const given = clusterProductionEnv(loadConfig(shell(dataDir)), services, {
      ...shell(dataDir),
      SANDBOX_API_KEY: strong,
      SANDBOX_WEBHOOK_SECRET: 'whsec_sandbox_dev', // a development default: replaced
    });
    expect(given.SANDBOX_API_KEY).toBe(strong);
    expect(given.SANDBOX_WEBHOOK_SECRET).toBe(first.SANDBOX_WEBHOOK_SECRET);
    expect(() => loadConfig(given)).not.toThrow();
  });

  it('runs the API and workers as the application database role; the owner only migrates (decision 0086, amended)', () => {
    const ownerUrl = 'postgres://postgres:postgres@127.0.0.1:5999/payments';
    const database = clusterDatabase(ownerUrl, dataDir);
    expect(database.migrationDatabaseUrl).toBe(ownerUrl);
    expect(database.appRole).toBe(CLUSTER_APP_ROLE);
    expect(roleOfUrl(database.databaseUrl)).toBe(CLUSTER_APP_ROLE);
    expect(roleOfUrl(database.databaseUrl)).not.toBe(roleOfUrl(ownerUrl));
    const [owner, app] = [new URL(ownerUrl), new URL(database.databaseUrl)];
    expect([app.host, app.pathname]).toEqual([owner.host, owner.pathname]);
    // Its password: strong, made once per data dir and kept (0600) across restarts.
    expect(decodeURIComponent(app.password)).toBe(database.appPassword);
    expect(secretWeakness(database.appPassword)).toBeNull();
    expect(clusterDatabase(ownerUrl, dataDir).databaseUrl).toBe(database.databaseUrl);
    expect(fs.statSync(clusterSecretsPath(dataDir)).mode & 0o777).toBe(0o600);

    // As the cluster publishes it for the CLI (stack.json), then the API's and workers' environment,
    // even from a shell that has an owner's URL of its own.
    fs.writeFileSync(
      stackFilePath(dataDir),
      JSON.stringify({
        databaseUrl: database.databaseUrl,
        temporalAddress: services.temporalAddress,
        migrationDatabaseUrl: ownerUrl,
      }),
    );
    const env = clusterProductionEnv(
      loadConfig(shell(dataDir)),
      { ...services, databaseUrl: database.databaseUrl },
      { ...shell(dataDir), MIGRATION_DATABASE_URL: ownerUrl },
    );
    expect(env.DATABASE_URL).toBe(database.databaseUrl);
    expect(env).not.toHaveProperty('MIGRATION_DATABASE_URL');
    expect(Object.values(env)).not.toContain(ownerUrl);
    const config = loadConfig(env);
    expect(roleOfUrl(config.databaseUrl)).toBe(CLUSTER_APP_ROLE);
    expect(config.MIGRATION_DATABASE_URL).toBeUndefined();
    // The password travels in DATABASE_URL only, never as a variable of its own.
    expect(Object.entries(env).filter(([, value]) => value === database.appPassword)).toEqual([]);

    // A CLI of the cluster's data dir (no DATABASE_URL): rows as the application role, and its
    // `db:migrate` as the owner (MIGRATION_DATABASE_URL from the stack file).
    const cli = loadConfig(shell(dataDir));
    expect(cli.databaseUrl).toBe(database.databaseUrl);
    expect(cli.MIGRATION_DATABASE_URL).toBe(ownerUrl);
    // A DATABASE_URL of the caller's own never goes with the stack's owner.
    expect(loadConfig({ ...shell(dataDir), DATABASE_URL: ownerUrl }).MIGRATION_DATABASE_URL).toBeUndefined();
  });
});
