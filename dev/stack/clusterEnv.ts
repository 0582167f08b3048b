import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import {
  devPayloadKeysPath,
  devSecretsKeyPath,
  sandboxProcessEnv,
  secretWeakness,
  type Config,
} from '../../src/config';

/**
 * The environment of `npm run cluster`'s API and worker processes: the production profile
 * (NODE_ENV=production, decision 0081) on one machine. The cluster gives them what production
 * requires: the services it started (DATABASE_URL, TEMPORAL_ADDRESS, SANDBOX_URL, SMTP_URL), its
 * PUBLIC_BASE_URL (http to the loopback, which production accepts), and strong secrets: the
 * operator's own when set and strong, else ones made for this DATA_DIR on its first start and
 * kept in `cluster-secrets.json` (mode 0600), so restarts and tools reading it agree.
 * PROVIDER_SECRETS_KEY and TEMPORAL_PAYLOAD_KEYS are the data dir's keys (devSecretsKeyPath,
 * devPayloadKeysPath) that the CLI also reads.
 *
 * The provider sandbox is not ours: it stands for an outside provider and keeps the development
 * profile (its `/_admin` routes open to the tools that drive it: `npm run chaos`, the benches).
 */
export const CLUSTER_SECRET_NAMES = [
  'SANDBOX_API_KEY',
  'SANDBOX_WEBHOOK_SECRET',
  'SANDBOX_ADMIN_TOKEN',
  'CURSOR_SECRET',
] as const;

/**
 * The password of the cluster's application database role (CLUSTER_APP_ROLE), kept with the
 * secrets above but never passed as a variable of its own: it is in DATABASE_URL.
 */
const APP_ROLE_PASSWORD = 'applicationDatabasePassword';

const KEPT_NAMES = [...CLUSTER_SECRET_NAMES, APP_ROLE_PASSWORD] as const;

type ClusterSecrets = Record<(typeof KEPT_NAMES)[number], string>;

export function clusterSecretsPath(dataDir: string): string {
  return path.join(dataDir, 'cluster-secrets.json');
}

/** The secrets of this data dir: kept ones, else new ones (written 0600). */
export function clusterSecrets(dataDir: string): ClusterSecrets {
  const file = clusterSecretsPath(dataDir);
  let kept: Partial<ClusterSecrets> = {};
  try {
    kept = JSON.parse(fs.readFileSync(file, 'utf8')) as Partial<ClusterSecrets>;
  } catch {
    // first start
  }
  const secrets = Object.fromEntries(
    KEPT_NAMES.map((name) => [
      name,
      kept[name] && !secretWeakness(kept[name]) ? kept[name] : randomBytes(32).toString('base64url'),
    ]),
  ) as ClusterSecrets;
  if (KEPT_NAMES.some((name) => secrets[name] !== kept[name])) {
    fs.writeFileSync(file, JSON.stringify(secrets, null, 2), { mode: 0o600 });
  }
  return secrets;
}

/** The operator's value when set and strong enough for production, else the kept one. */
function chosen(source: NodeJS.ProcessEnv, name: (typeof CLUSTER_SECRET_NAMES)[number], kept: ClusterSecrets) {
  const given = source[name];
  return given && !secretWeakness(given) ? given : kept[name];
}

/** The role the cluster's API, workers, sweeper and CLI connect as (decision 0086, amended). */
export const CLUSTER_APP_ROLE = 'payments_app';

/** The cluster's two ways into its payments database (decision 0086, amended). */
export interface ClusterDatabase {
  /**
   * The schema owner's URL (the embedded PostgreSQL's superuser, which created the database and
   * every table in it): the migration step's alone.
   */
  migrationDatabaseUrl: string;
  /** CLUSTER_APP_ROLE's URL: rows only, never the schema. DATABASE_URL of every other process. */
  databaseUrl: string;
  appRole: string;
  appPassword: string;
}

/**
 * The cluster's database URLs from the owner's: the same server and database as CLUSTER_APP_ROLE,
 * with the password kept for this data dir (cluster-secrets.json, 0600). The role itself is made
 * (or its password set) in the embedded PostgreSQL by `ensureLoginRole` (dev/infra/embeddedPostgres.ts).
 */
export function clusterDatabase(ownerUrl: string, dataDir: string): ClusterDatabase {
  const appPassword = clusterSecrets(dataDir)[APP_ROLE_PASSWORD];
  const url = new URL(ownerUrl);
  url.username = CLUSTER_APP_ROLE;
  url.password = encodeURIComponent(appPassword);
  return { migrationDatabaseUrl: ownerUrl, databaseUrl: url.toString(), appRole: CLUSTER_APP_ROLE, appPassword };
}

/**
 * The API's and workers' environment. `services.databaseUrl` is the application role's
 * (ClusterDatabase.databaseUrl); MIGRATION_DATABASE_URL is never passed on, even when the
 * caller's shell has one: only the migration step connects as the owner.
 */
export function clusterProductionEnv(
  config: Config,
  services: { databaseUrl: string; temporalAddress: string; workflowBundlePath: string },
  source: NodeJS.ProcessEnv = process.env,
): NodeJS.ProcessEnv {
  const kept = clusterSecrets(config.dataDir);
  const secretsKey = config.PROVIDER_SECRETS_KEY ?? fs.readFileSync(devSecretsKeyPath(config.dataDir), 'utf8').trim();
  const payloadKeys =
    config.TEMPORAL_PAYLOAD_KEYS ?? fs.readFileSync(devPayloadKeysPath(config.dataDir), 'utf8').trim();
  const { MIGRATION_DATABASE_URL: _ownerUrl, ...inherited } = source;
  return {
    ...inherited,
    NODE_ENV: 'production',
    DATA_DIR: config.dataDir,
    DATABASE_URL: services.databaseUrl,
    TEMPORAL_ADDRESS: services.temporalAddress,
    SANDBOX_URL: config.sandboxUrl,
    SMTP_URL: config.smtpUrl,
    PUBLIC_BASE_URL: config.publicBaseUrl,
    METRICS_HOST: config.metricsHost,
    ...Object.fromEntries(CLUSTER_SECRET_NAMES.map((name) => [name, chosen(source, name, kept)])),
    PROVIDER_SECRETS_KEY: secretsKey,
    // The data dir's key ring (decision 0078): its histories stay readable across restarts.
    TEMPORAL_PAYLOAD_KEYS: payloadKeys,
    // Everything here is on the loopback: merchants' test endpoints and callbacks too.
    ALLOW_PRIVATE_CALLBACKS: source.ALLOW_PRIVATE_CALLBACKS || 'true',
    // Production runs a built bundle: the one the cluster built at start (unless one is named).
    WORKFLOW_BUNDLE_PATH: source.WORKFLOW_BUNDLE_PATH || services.workflowBundlePath,
  };
}

/** The sandbox's environment: the same keys as the API and workers, the development profile. */
export function clusterSandboxEnv(productionEnv: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  // Only its own variables: never the database, the secrets key or the payload keys (item 11).
  const env: NodeJS.ProcessEnv = { ...sandboxProcessEnv(productionEnv), NODE_ENV: 'development' };
  delete env.SANDBOX_ADMIN_TOKEN;
  return env;
}
