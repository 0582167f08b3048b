import { parseArgs } from 'node:util';
import type { EntityManager } from '@mikro-orm/postgresql';
import { ConfigError, loadConfig, type Config } from '../config';
import { openOrm, migrate } from '../db/orm';
import { grantApplicationRole, roleOfUrl } from '../db/roles';
import { errorText } from '../db/dbErrors';
import {
  KEY_ENVIRONMENTS,
  KEY_ROLES,
  PROCESSORS,
  type ApiKey,
  type KeyEnvironment,
  type KeyRole,
  type Merchant,
  type Processor,
} from '../db/entities';
import { createKey, createMerchant, revokeKey, setMerchantEmail, setMerchantStatus } from '../domain/merchants';
import {
  DEFAULT_ROTATION_OVERLAP_HOURS,
  MAX_ROTATION_OVERLAP_HOURS,
  rotateSigningSecret,
  sealSigningSecrets,
  signingSecrets,
  SigningSecretUnusable,
} from '../domain/signingSecrets';
import { presentApiKey } from '../api/routes/apiKeys';
import {
  ProviderSettingRefused,
  listProviders,
  presentProvider,
  removeProvider,
  setProvider,
} from '../domain/merchantProviders';
import { AppError } from '../errors';
import { ProviderSecrets } from '../providers/secrets';
import { reencryptSecrets } from '../domain/secretsReencryption';
import { PROMOTE_USAGE, PromoteUsageError, runPromote } from './promote';
import { HAND_OVER_USAGE, HandOverUsageError, runHandOver } from './handOver';
import { VersionNotPolled } from '../temporal/deploymentVersion';

/**
 * Operator CLI: `npm run cli -- <command> [options] --json`. It reaches the database of a
 * running `npm start` with the same DATA_DIR (through $DATA_DIR/stack.json), or DATABASE_URL.
 */
const USAGE = `Usage: npm run cli -- <command> [options] [--json]

Commands:
  merchants:create --name N [--email E]      create a merchant and its first (test) key
  merchants:deactivate <merchantId>          refuse the merchant's calls (403 merchant_inactive)
  merchants:activate <merchantId>            allow them again
  merchants:email <merchantId> --email E|--clear
                                             the merchant's contact email (test-mode emails in
                                             production go there: never to customers)
  keys:create --merchant <merchantId> [--environment test|live] [--role merchant|admin]
  keys:revoke <keyId>                        refused everywhere within 5 s
  webhooks:secret --merchant <merchantId> [--environment test|live] [--rotate [--overlap-hours H]]
                                             the secret that signs the callbacks of one
                                             environment (default test; X-Signature), created
                                             on first use; --rotate replaces it, the old one
                                             still signing for H hours (0..168, default 24).
                                             Stored encrypted under PROVIDER_SECRETS_KEY
  providers:set --merchant <merchantId> --environment test|live --processor sandbox|stripe
                [--secret-key K|-] [--webhook-secret S|-]
                                             the merchant's provider for one environment; the
                                             same processor again keeps an omitted secret,
                                             another processor replaces the configuration.
                                             Secrets need PROVIDER_SECRETS_KEY (stored
                                             encrypted) and are never printed back; "-" reads
                                             one from standard input (a line each, in order)
  providers:list --merchant <merchantId>     the merchant's providers (never their secrets)
  providers:remove --merchant <merchantId> --environment test|live
                                             new payments of that environment get no provider
                                             (test: the built-in sandbox again); existing
                                             records keep the processor that served them
${PROMOTE_USAGE}
  secrets:reencrypt [--dry-run]              seal every stored secret again under
                                             PROVIDER_SECRETS_KEY (after a rotation; decision
                                             0080): counts per column; rows no listed key opens
                                             are counted by key id and left alone
${HAND_OVER_USAGE}
  db:migrate                                 apply pending database migrations, as the owner of
                                             MIGRATION_DATABASE_URL when set (then DATABASE_URL's
                                             role gets rows, never the schema), and, with
                                             PROVIDER_SECRETS_KEY, encrypt signing secrets
                                             still stored in plain text)

API key secrets are printed once, at creation, and can never be shown again; provider secrets are never printed.`;

class UsageError extends Error {}

/** An address with one `@`, no spaces, at most 320 characters (the column's length). */
const EMAIL_ADDRESS = /^(?=.{3,320}$)[^\s@]+@[^\s@]+$/;

function presentMerchant(m: Merchant) {
  return { id: m.id, name: m.name, email: m.email, status: m.status, createdAt: m.createdAt.toISOString() };
}

function presentNewKey(key: ApiKey, secretKey: string) {
  return { id: key.id, publicKey: key.publicKey, secretKey, environment: key.environment, role: key.role };
}

function oneOf<T extends string>(value: string | undefined, allowed: readonly T[], name: string, fallback: T): T {
  if (value === undefined) return fallback;
  if (!(allowed as readonly string[]).includes(value))
    throw new UsageError(`--${name} must be one of ${allowed.join(', ')}`);
  return value as T;
}

function required(value: string | undefined, what: string): string {
  if (!value) throw new UsageError(`${what} is required`);
  return value;
}

function requiredOneOf<T extends string>(value: string | undefined, allowed: readonly T[], name: string): T {
  if (value === undefined) throw new UsageError(`--${name} is required (${allowed.join(' or ')})`);
  return oneOf(value, allowed, name, allowed[0]!);
}

function overlapHoursOf(value: string | undefined): number {
  if (value === undefined) return DEFAULT_ROTATION_OVERLAP_HOURS;
  const hours = Number(value);
  if (!/^\d+$/.test(value) || hours > MAX_ROTATION_OVERLAP_HOURS) {
    throw new UsageError(`--overlap-hours must be a whole number of hours from 0 to ${MAX_ROTATION_OVERLAP_HOURS}`);
  }
  return hours;
}

export interface CommandOptions {
  /** PROVIDER_SECRETS_KEY (base64), validated by the configuration. */
  providerSecretsKey?: string;
  /** PROVIDER_SECRETS_PREVIOUS_KEYS: keys that still decrypt (decision 0080). */
  providerSecretsPreviousKeys?: string;
  /** Standard input, for secrets given as `-` (kept out of `ps` and shell history). */
  readStdin?: () => Promise<string>;
}

/**
 * `--secret-key -` / `--webhook-secret -`: the secret is read from standard input, one line each,
 * in that order, so it never appears in the process list or the shell's history.
 */
async function secretsFromStdin(
  given: { secretKey: string | undefined; webhookSecret: string | undefined },
  readStdin: (() => Promise<string>) | undefined,
): Promise<{ secretKey: string | undefined; webhookSecret: string | undefined }> {
  if (given.secretKey !== '-' && given.webhookSecret !== '-') return given;
  if (!readStdin) throw new UsageError('a secret given as - needs standard input');
  const lines = (await readStdin()).split(/\r?\n/);
  const next = (what: string) => {
    const line = lines.shift();
    if (!line) throw new UsageError(`${what} given as - but standard input has no line for it`);
    return line;
  };
  return {
    secretKey: given.secretKey === '-' ? next('--secret-key') : given.secretKey,
    webhookSecret: given.webhookSecret === '-' ? next('--webhook-secret') : given.webhookSecret,
  };
}

export async function runCommand(
  em: EntityManager,
  command: string,
  argv: string[],
  options: CommandOptions = {},
): Promise<Record<string, unknown>> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      name: { type: 'string' },
      email: { type: 'string' },
      merchant: { type: 'string' },
      environment: { type: 'string' },
      role: { type: 'string' },
      processor: { type: 'string' },
      'secret-key': { type: 'string' },
      'webhook-secret': { type: 'string' },
      rotate: { type: 'boolean' },
      'overlap-hours': { type: 'string' },
      clear: { type: 'boolean' },
      'dry-run': { type: 'boolean' },
      json: { type: 'boolean' },
    },
  });
  switch (command) {
    case 'merchants:create': {
      const name = required(values.name, '--name');
      const { merchant, apiKey, secretKey } = await createMerchant(em, { name, email: values.email ?? null });
      return { merchant: presentMerchant(merchant), apiKey: presentNewKey(apiKey, secretKey) };
    }
    case 'merchants:deactivate':
    case 'merchants:activate': {
      const id = required(positionals[0], '<merchantId>');
      const merchant = await setMerchantStatus(em, id, command === 'merchants:activate');
      return { merchant: presentMerchant(merchant) };
    }
    case 'merchants:email': {
      const id = required(positionals[0], '<merchantId>');
      if ((values.clear === true) === (values.email !== undefined))
        throw new UsageError('give either --email E or --clear');
      const email = values.clear ? null : values.email!.trim();
      if (email !== null && !EMAIL_ADDRESS.test(email)) throw new UsageError('--email must be an email address');
      return { merchant: presentMerchant(await setMerchantEmail(em, id, email)) };
    }
    case 'keys:create': {
      const merchantId = required(values.merchant, '--merchant');
      const environment = oneOf<KeyEnvironment>(values.environment, KEY_ENVIRONMENTS, 'environment', 'test');
      const role = oneOf<KeyRole>(values.role, KEY_ROLES, 'role', 'merchant');
      const { apiKey, secretKey } = await createKey(em, merchantId, { environment, role });
      return { apiKey: presentNewKey(apiKey, secretKey) };
    }
    case 'keys:revoke': {
      const apiKey = await revokeKey(em, required(positionals[0], '<keyId>'));
      return { apiKey: presentApiKey(apiKey) };
    }
    case 'webhooks:secret': {
      const merchantId = required(values.merchant, '--merchant');
      const environment = oneOf<KeyEnvironment>(values.environment, KEY_ENVIRONMENTS, 'environment', 'test');
      const secrets = options.providerSecretsKey
        ? ProviderSecrets.fromBase64(options.providerSecretsKey, options.providerSecretsPreviousKeys)
        : null;
      if (!values.rotate) {
        if (values['overlap-hours'] !== undefined) throw new UsageError('--overlap-hours goes with --rotate');
        return { secret: (await signingSecrets(em, secrets, merchantId, environment)).current, environment };
      }
      const overlapHours = overlapHoursOf(values['overlap-hours']);
      return { secret: await rotateSigningSecret(em, secrets, merchantId, environment, overlapHours), environment };
    }
    case 'providers:set': {
      const merchantId = required(values.merchant, '--merchant');
      const environment = requiredOneOf<KeyEnvironment>(values.environment, KEY_ENVIRONMENTS, 'environment');
      const processor = requiredOneOf<Processor>(values.processor, PROCESSORS, 'processor');
      const secrets = options.providerSecretsKey
        ? ProviderSecrets.fromBase64(options.providerSecretsKey, options.providerSecretsPreviousKeys)
        : null;
      const given = await secretsFromStdin(
        { secretKey: values['secret-key'], webhookSecret: values['webhook-secret'] },
        options.readStdin,
      );
      const row = await setProvider(em, { merchantId, environment, processor, ...given }, secrets);
      return { provider: presentProvider(row) };
    }
    case 'secrets:reencrypt': {
      if (!options.providerSecretsKey)
        throw new UsageError('PROVIDER_SECRETS_KEY is required: it is the key secrets move to');
      const secrets = ProviderSecrets.fromBase64(options.providerSecretsKey, options.providerSecretsPreviousKeys);
      const dryRun = values['dry-run'] === true;
      return {
        reencryption: { dryRun, keyId: secrets.keyId, columns: await reencryptSecrets(em, secrets, { dryRun }) },
      };
    }
    case 'providers:list': {
      const merchantId = required(values.merchant, '--merchant');
      return { providers: (await listProviders(em, merchantId)).map(presentProvider) };
    }
    case 'providers:remove': {
      const merchantId = required(values.merchant, '--merchant');
      const environment = requiredOneOf<KeyEnvironment>(values.environment, KEY_ENVIRONMENTS, 'environment');
      return { removed: await removeProvider(em, merchantId, environment) };
    }
    default:
      throw new UsageError(command ? `Unknown command "${command}"` : 'No command given');
  }
}

function printFields(value: Record<string, unknown>, indent: string): void {
  for (const [k, v] of Object.entries(value)) process.stdout.write(`${indent}${k}: ${String(v)}\n`);
}

function printHuman(result: Record<string, unknown>): void {
  for (const [name, value] of Object.entries(result)) {
    if (Array.isArray(value)) {
      process.stdout.write(`${name}:${value.length === 0 ? ' (none)' : ''}\n`);
      value.forEach((item, i) => {
        if (i > 0) process.stdout.write('\n');
        printFields(item as Record<string, unknown>, '  ');
      });
    } else if (typeof value === 'object' && value !== null) {
      process.stdout.write(`${name}:\n`);
      printFields(value as Record<string, unknown>, '  ');
    } else {
      process.stdout.write(`${name}: ${String(value)}\n`);
    }
  }
  if (JSON.stringify(result).includes('"secretKey"')) {
    process.stdout.write('\nThe secret key is shown only now. Store it safely.\n');
  }
}

async function main(): Promise<number> {
  const [command = '', ...rest] = process.argv.slice(2);
  const json = rest.includes('--json');
  if (command === '' || command === 'help' || command === '--help') {
    process.stdout.write(`${USAGE}\n`);
    return command === '' ? 2 : 0;
  }
  let config;
  try {
    config = loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) return fail(json, 'invalid_configuration', err.message, 78);
    throw err;
  }
  // The deploy step's promotion asks Temporal, never the database.
  if (command === 'workers:promote') return promote(config, rest, json);
  if (command === 'workflows:hand-over') return handOver(config, rest, json);
  let orm;
  try {
    // Migrations as the schema's owner when it is a role of its own (decision 0086).
    const migrating = command === 'db:migrate' && config.MIGRATION_DATABASE_URL;
    orm = await openOrm({ databaseUrl: migrating || config.databaseUrl, poolMax: 2 });
  } catch (err) {
    return fail(
      json,
      'database_unreachable',
      `Cannot reach the database (${errorText(err)}). Is \`npm start\` running with DATA_DIR=${config.DATA_DIR}, or DATABASE_URL set?`,
      3,
    );
  }
  try {
    const result =
      command === 'db:migrate'
        ? await migrateAndSeal(orm, config.PROVIDER_SECRETS_KEY, config)
        : await runCommand(orm.em.fork(), command, rest, {
            providerSecretsKey: config.PROVIDER_SECRETS_KEY,
            providerSecretsPreviousKeys: config.PROVIDER_SECRETS_PREVIOUS_KEYS,
            readStdin: async () => {
              const chunks: Buffer[] = [];
              for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
              return Buffer.concat(chunks).toString('utf8');
            },
          });
    if (json) process.stdout.write(`${JSON.stringify(result)}\n`);
    else printHuman(result);
    return 0;
  } catch (err) {
    if (err instanceof UsageError || err instanceof ProviderSettingRefused)
      return fail(json, 'usage', `${err.message}\n\n${USAGE}`, 2);
    if (err instanceof AppError) return fail(json, err.code, err.message, 1);
    if (err instanceof SigningSecretUnusable) return fail(json, 'signing_secret_unusable', err.message, 1);
    return fail(json, 'error', errorText(err), 1);
  } finally {
    await orm.close();
  }
}

/**
 * Migrations, then (with PROVIDER_SECRETS_KEY) the signing secrets a migration or a keyless
 * process left in plain text are encrypted (decision 0067).
 */
async function migrateAndSeal(
  orm: Awaited<ReturnType<typeof openOrm>>,
  secretsKey: string | undefined,
  config: Pick<Config, 'MIGRATION_DATABASE_URL' | 'databaseUrl'>,
) {
  const migrations = await migrate(orm);
  // The application's role (DATABASE_URL's user) gets rows, never the schema (decision 0086).
  const appRole =
    config.MIGRATION_DATABASE_URL && roleOfUrl(config.MIGRATION_DATABASE_URL) !== roleOfUrl(config.databaseUrl)
      ? roleOfUrl(config.databaseUrl)
      : null;
  if (appRole) await grantApplicationRole(orm.em.fork(), appRole);
  if (!secretsKey) return { migrations, appRole };
  return {
    migrations,
    appRole,
    signingSecretsEncrypted: await sealSigningSecrets(orm.em.fork(), ProviderSecrets.fromBase64(secretsKey)),
  };
}

async function promote(config: Config, argv: string[], json: boolean): Promise<number> {
  try {
    const result = await runPromote(config, argv);
    if (json) process.stdout.write(`${JSON.stringify({ promotion: result })}\n`);
    else printHuman({ promotion: result });
    return 0;
  } catch (err) {
    if (err instanceof PromoteUsageError) return fail(json, 'usage', `${err.message}\n\n${USAGE}`, 2);
    if (err instanceof VersionNotPolled) {
      if (json) {
        const error = { code: 'version_not_polled', message: err.message, missingTaskQueues: err.missingTaskQueues };
        process.stdout.write(`${JSON.stringify({ error })}\n`);
      } else process.stderr.write(`${err.message}\n`);
      return 4;
    }
    return fail(json, 'error', errorText(err), 1);
  }
}

async function handOver(config: Config, argv: string[], json: boolean): Promise<number> {
  try {
    const result = await runHandOver(config, argv);
    if (json) process.stdout.write(`${JSON.stringify({ handOver: result })}\n`);
    else printHuman({ handOver: result });
    return 0;
  } catch (err) {
    if (err instanceof HandOverUsageError) return fail(json, 'usage', `${err.message}\n\n${USAGE}`, 2);
    return fail(json, 'error', errorText(err), 1);
  }
}

function fail(json: boolean, code: string, message: string, exitCode: number): number {
  if (json) process.stdout.write(`${JSON.stringify({ error: { code, message } })}\n`);
  else process.stderr.write(`${message}\n`);
  return exitCode;
}

if (require.main === module) {
  void main().then((code) => process.exit(code));
}
