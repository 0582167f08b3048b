import { LockMode } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/postgresql';
import { KEY_ENVIRONMENTS, Merchant, MerchantProvider, type KeyEnvironment, type Processor } from '../db/entities';
import { PROVIDER_CHANGE_CHANNEL } from '../db/hintChannels';
import { AppError } from '../errors';
import type { ProviderSecrets } from '../providers/secrets';
import { stripeKeyMode } from '../providers/stripe/mapping';

/**
 * Merchants' provider configuration (PRODUCT.md, "Providers"), for the operator CLI. At most
 * one provider per merchant and environment. Secrets are write-only: encrypted before they are
 * stored, never returned.
 */

/** A configuration the operator asked for that cannot be stored as asked (a usage error). */
export class ProviderSettingRefused extends Error {}

export interface SetProviderInput {
  merchantId: string;
  environment: KeyEnvironment;
  processor: Processor;
  /** Omitted: the stored one is kept when the processor stays the same. */
  secretKey?: string;
  webhookSecret?: string;
}

export function presentProvider(row: MerchantProvider) {
  return {
    merchantId: row.merchant.id,
    environment: row.environment,
    processor: row.processor,
    createdAt: row.createdAt.toISOString(),
    updatedAt: row.updatedAt.toISOString(),
  };
}

function refuseBadInput(input: SetProviderInput, secrets: ProviderSecrets | null): void {
  const given = [
    ['--secret-key', input.secretKey],
    ['--webhook-secret', input.webhookSecret],
  ] as const;
  for (const [flag, value] of given) {
    if (value !== undefined && value.trim() === '') throw new ProviderSettingRefused(`${flag} must not be empty`);
  }
  const anySecret = given.some(([, value]) => value !== undefined);
  if (input.processor === 'sandbox' && anySecret) {
    throw new ProviderSettingRefused(
      'the sandbox processor takes no secrets (it uses SANDBOX_API_KEY and SANDBOX_WEBHOOK_SECRET)',
    );
  }
  if (anySecret && !secrets) {
    throw new ProviderSettingRefused(
      'PROVIDER_SECRETS_KEY is not set: provider secrets are stored only encrypted (32 bytes, base64; e.g. `openssl rand -base64 32`)',
    );
  }
  if (input.processor === 'stripe' && input.secretKey !== undefined) {
    const mode = stripeKeyMode(input.secretKey);
    if (mode === null) {
      throw new ProviderSettingRefused(
        '--secret-key is not a Stripe secret or restricted key (sk_live_..., rk_live_..., sk_test_... or rk_test_...)',
      );
    }
    if (mode !== input.environment) {
      throw new ProviderSettingRefused(
        mode === 'live'
          ? 'a live Stripe key cannot serve the test environment'
          : 'a test Stripe key (sk_test_/rk_test_) cannot serve the live environment: it would take no real money',
      );
    }
  }
}

async function findMerchant(em: EntityManager, merchantId: string): Promise<Merchant> {
  const merchant = await em.findOne(Merchant, { id: merchantId });
  if (!merchant) throw new AppError('not_found', `Merchant ${merchantId} not found.`);
  return merchant;
}

/**
 * Configures the merchant's provider for one environment. The same processor again: the
 * secrets given replace the stored ones, an omitted one is kept (rotating only the webhook
 * secret). Another processor: the row is replaced (a new createdAt, no secret carried over).
 */
export async function setProvider(
  em: EntityManager,
  input: SetProviderInput,
  secrets: ProviderSecrets | null,
): Promise<MerchantProvider> {
  refuseBadInput(input, secrets);
  return em.transactional(async (tx) => {
    const merchant = await findMerchant(tx, input.merchantId);
    const existing = await tx.findOne(
      MerchantProvider,
      { merchant: merchant.id, environment: input.environment },
      { lockMode: LockMode.PESSIMISTIC_WRITE },
    );
    const kept = existing?.processor === input.processor ? existing : null;
    if (input.processor === 'stripe' && input.secretKey === undefined && !kept?.secretKeyCiphertext) {
      throw new ProviderSettingRefused('--secret-key is required to configure stripe');
    }
    const seal = (field: 'secret_key' | 'webhook_secret', value: string | undefined, stored: string | null) =>
      value === undefined
        ? stored
        : secrets!.encrypt(value, { merchantId: merchant.id, environment: input.environment, field });
    const now = new Date();
    const values = {
      processor: input.processor,
      secretKeyCiphertext: seal('secret_key', input.secretKey, kept?.secretKeyCiphertext ?? null),
      webhookSecretCiphertext: seal('webhook_secret', input.webhookSecret, kept?.webhookSecretCiphertext ?? null),
      updatedAt: now,
    };
    if (existing) {
      tx.assign(existing, kept ? values : { ...values, createdAt: now });
      await tx.flush();
      await announceProviderChange(tx, merchant.id, input.environment);
      return existing;
    }
    const row = tx.create(MerchantProvider, {
      merchant,
      environment: input.environment,
      ...values,
      createdAt: now,
    });
    await tx.flush();
    await announceProviderChange(tx, merchant.id, input.environment);
    return row;
  });
}

/**
 * Tells every API process (LISTEN, src/db/outcomeHints.ts) that this configuration changed.
 * Sent inside the change's transaction: PostgreSQL delivers it at the commit, never for a
 * change rolled back, so the next request in any process reads the committed row.
 */
async function announceProviderChange(tx: EntityManager, merchantId: string, environment: KeyEnvironment) {
  const message: ProviderChangeMessage = { merchantId, environment };
  await tx.execute('select pg_notify(?, ?)', [PROVIDER_CHANGE_CHANNEL, JSON.stringify(message)]);
}

export interface ProviderChangeMessage {
  merchantId: string;
  environment: KeyEnvironment;
}

/** The merchant's providers, test before live. */
export async function listProviders(em: EntityManager, merchantId: string): Promise<MerchantProvider[]> {
  await findMerchant(em, merchantId);
  const rows = await em.find(MerchantProvider, { merchant: merchantId });
  return rows.sort((a, b) => KEY_ENVIRONMENTS.indexOf(a.environment) - KEY_ENVIRONMENTS.indexOf(b.environment));
}

/** Removes the configuration; false when there was none. Existing records keep their processor. */
export async function removeProvider(
  em: EntityManager,
  merchantId: string,
  environment: KeyEnvironment,
): Promise<boolean> {
  const deleted = await em.transactional(async (tx) => {
    const count = await tx.nativeDelete(MerchantProvider, { merchant: merchantId, environment });
    if (count > 0) await announceProviderChange(tx, merchantId, environment);
    return count;
  });
  if (deleted > 0) return true;
  await findMerchant(em, merchantId);
  return false;
}
