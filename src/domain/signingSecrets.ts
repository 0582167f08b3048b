import { randomBytes } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { KeyEnvironment } from '../db/entities';
import { AppError } from '../errors';
import { ProviderSecretError, type ProviderSecrets } from '../providers/secrets';

/**
 * A merchant's callbackUrl signing secret per environment (PRODUCT.md, "Events, webhook
 * endpoints and deliveries"; decision 0067), in table merchant_signing_secrets. A stored secret
 * is sealed like provider secrets: `v1:...` (AES-256-GCM under PROVIDER_SECRETS_KEY, bound to the
 * merchant, environment and field) or, only where no key is configured (production requires
 * one), `plain:<secret>`, which the first process with the key seals when it reads the row (and
 * `db:migrate`, for every row). A secret is never logged; the CLI prints it only when it is
 * created or rotated.
 */
/** A signing secret stored in plain text by a keyless process (db:migrate seals it). */
export const PLAIN = 'plain:';

/** The overlap of a rotation unless told otherwise: the previous secret still signs this long. */
export const DEFAULT_ROTATION_OVERLAP_HOURS = 24;
export const MAX_ROTATION_OVERLAP_HOURS = 168;

/** A stored signing secret that cannot be opened (no or another PROVIDER_SECRETS_KEY, or altered). */
export class SigningSecretUnusable extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SigningSecretUnusable';
  }
}

/** What signs a delivery now: the current secret, and the previous one during a rotation's overlap. */
export interface SigningSecrets {
  current: string;
  previous: string | null;
}

interface Row {
  secret: string;
  previous_secret: string | null;
  previous_live: boolean;
}

const newSecret = () => `whsec_${randomBytes(32).toString('base64url')}`;

function sealer(secrets: ProviderSecrets | null, merchantId: string, environment: KeyEnvironment) {
  const context = { merchantId, environment, field: 'signing_secret' as const };
  return {
    seal: (value: string): string => (secrets ? secrets.encrypt(value, context) : `${PLAIN}${value}`),
    open: (stored: string): string => {
      if (stored.startsWith(PLAIN)) return stored.slice(PLAIN.length);
      if (!secrets) {
        throw new SigningSecretUnusable(
          `the signing secret of ${merchantId} (${environment}) is encrypted and PROVIDER_SECRETS_KEY is not set`,
        );
      }
      try {
        return secrets.decrypt(stored, context);
      } catch (err) {
        if (err instanceof ProviderSecretError) throw new SigningSecretUnusable(err.message);
        throw err;
      }
    },
  };
}

async function requireMerchant(em: EntityManager, merchantId: string): Promise<void> {
  const found: unknown[] = await em.getConnection().execute('select 1 from merchants where id = ?', [merchantId]);
  if (found.length === 0) throw new AppError('not_found', `Merchant ${merchantId} not found.`);
}

async function readRow(em: EntityManager, merchantId: string, environment: KeyEnvironment): Promise<Row | undefined> {
  const rows: Row[] = await em.getConnection().execute(
    `select secret, previous_secret, coalesce(previous_until > now(), false) as previous_live
       from merchant_signing_secrets where merchant_id = ? and environment = ?`,
    [merchantId, environment],
  );
  return rows[0];
}

/** Seals a row's `plain:` secrets when a key is at hand; a concurrent change wins (the row is unchanged then). */
async function sealRow(
  em: EntityManager,
  secrets: ProviderSecrets | null,
  merchantId: string,
  environment: KeyEnvironment,
  row: { secret: string; previous_secret: string | null },
): Promise<boolean> {
  const plain = (v: string | null) => v !== null && v.startsWith(PLAIN);
  if (!secrets || !(plain(row.secret) || plain(row.previous_secret))) return false;
  const { seal, open } = sealer(secrets, merchantId, environment);
  const reseal = (v: string | null) => (v !== null && plain(v) ? seal(open(v)) : v);
  const updated: unknown[] = await em.getConnection().execute(
    `update merchant_signing_secrets set secret = ?, previous_secret = ?, updated_at = now()
      where merchant_id = ? and environment = ? and secret = ? and previous_secret is not distinct from ?
      returning merchant_id`,
    [reseal(row.secret), reseal(row.previous_secret), merchantId, environment, row.secret, row.previous_secret],
  );
  return updated.length === 1;
}

/**
 * The secrets that sign the merchant's callbackUrl deliveries of an environment; the current one
 * is created on first use (concurrent first uses agree: the first insert wins).
 */
export async function signingSecrets(
  em: EntityManager,
  secrets: ProviderSecrets | null,
  merchantId: string,
  environment: KeyEnvironment,
): Promise<SigningSecrets> {
  const { seal, open } = sealer(secrets, merchantId, environment);
  let row = await readRow(em, merchantId, environment);
  if (!row) {
    await requireMerchant(em, merchantId);
    await em.getConnection().execute(
      `insert into merchant_signing_secrets (merchant_id, environment, secret, created_at, updated_at)
       values (?, ?, ?, now(), now()) on conflict do nothing`,
      [merchantId, environment, seal(newSecret())],
    );
    row = await readRow(em, merchantId, environment);
    if (!row) throw new AppError('not_found', `Merchant ${merchantId} not found.`);
  }
  await sealRow(em, secrets, merchantId, environment, row);
  return {
    current: open(row.secret),
    previous: row.previous_live && row.previous_secret !== null ? open(row.previous_secret) : null,
  };
}

/**
 * A new current secret for the environment. The replaced one keeps signing (a second `v1`) for
 * `overlapHours`, so receivers can switch without a gap; a rotation during an overlap drops the
 * oldest. Without a secret yet, the new one is simply the first.
 */
export async function rotateSigningSecret(
  em: EntityManager,
  secrets: ProviderSecrets | null,
  merchantId: string,
  environment: KeyEnvironment,
  overlapHours = DEFAULT_ROTATION_OVERLAP_HOURS,
): Promise<string> {
  await requireMerchant(em, merchantId);
  const { seal } = sealer(secrets, merchantId, environment);
  const fresh = newSecret();
  const sealed = seal(fresh);
  await em.getConnection().execute(
    `insert into merchant_signing_secrets (merchant_id, environment, secret, created_at, updated_at)
     values (?, ?, ?, now(), now())
     on conflict (merchant_id, environment) do update
       set previous_secret = merchant_signing_secrets.secret,
           previous_until = now() + make_interval(hours => ?),
           secret = excluded.secret, updated_at = now()`,
    [merchantId, environment, sealed, overlapHours],
  );
  const row = await readRow(em, merchantId, environment);
  if (row) await sealRow(em, secrets, merchantId, environment, row);
  return fresh;
}

/** Seals every `plain:` row (after `db:migrate`, with PROVIDER_SECRETS_KEY); answers how many. */
export async function sealSigningSecrets(em: EntityManager, secrets: ProviderSecrets): Promise<number> {
  const rows: Array<{
    merchant_id: string;
    environment: KeyEnvironment;
    secret: string;
    previous_secret: string | null;
  }> = await em.getConnection().execute(
    `select merchant_id, environment, secret, previous_secret from merchant_signing_secrets
        where secret like 'plain:%' or previous_secret like 'plain:%'`,
  );
  let sealed = 0;
  for (const row of rows) {
    if (await sealRow(em, secrets, row.merchant_id, row.environment, row)) sealed += 1;
  }
  return sealed;
}
