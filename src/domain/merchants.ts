import type { EntityManager } from '@mikro-orm/postgresql';
import { ApiKey, Merchant, type KeyEnvironment, type KeyRole } from '../db/entities';
import { generateKey } from '../auth/secrets';
import { newId } from '../ids';
import { AppError } from '../errors';

/** Merchant and key administration, shared by the operator CLI and the first-start seed. */

export interface CreatedKey {
  apiKey: ApiKey;
  /** Shown once, at creation; never stored. */
  secretKey: string;
}

export async function createMerchant(
  em: EntityManager,
  input: { name: string; email?: string | null },
): Promise<{ merchant: Merchant } & CreatedKey> {
  return em.transactional(async (tx) => {
    const now = new Date();
    const merchant = tx.create(Merchant, {
      id: newId('merchant'),
      name: input.name,
      email: input.email ?? null,
      status: 'active',
      createdAt: now,
      updatedAt: now,
    });
    // A new merchant's first key is a test key (PRODUCT.md).
    const key = addKey(tx, merchant, { environment: 'test', role: 'merchant' });
    await tx.flush();
    return { merchant, ...key };
  });
}

function addKey(
  em: EntityManager,
  merchant: Merchant,
  opts: { environment: KeyEnvironment; role: KeyRole },
): CreatedKey {
  const generated = generateKey(opts.environment);
  const apiKey = em.create(ApiKey, {
    id: newId('apiKey'),
    merchant,
    publicKey: generated.publicKey,
    secretHash: generated.secretHash,
    environment: opts.environment,
    role: opts.role,
    isActive: true,
    createdAt: new Date(),
    revokedAt: null,
    lastUsedAt: null,
  });
  return { apiKey, secretKey: generated.secretKey };
}

export async function createKey(
  em: EntityManager,
  merchantId: string,
  opts: { environment: KeyEnvironment; role: KeyRole },
): Promise<CreatedKey> {
  const merchant = await findMerchant(em, merchantId);
  const key = addKey(em, merchant, opts);
  await em.flush();
  return key;
}

export async function revokeKey(em: EntityManager, keyId: string): Promise<ApiKey> {
  const key = await em.findOne(ApiKey, { id: keyId });
  if (!key) throw new AppError('not_found', `API key ${keyId} not found.`);
  if (key.isActive) {
    key.isActive = false;
    key.revokedAt = new Date();
    await em.flush();
  }
  return key;
}

export async function setMerchantStatus(em: EntityManager, merchantId: string, active: boolean): Promise<Merchant> {
  const merchant = await findMerchant(em, merchantId);
  const status = active ? 'active' : 'inactive';
  if (merchant.status !== status) {
    merchant.status = status;
    merchant.updatedAt = new Date();
    await em.flush();
  }
  return merchant;
}

/**
 * The merchant's contact email (the operator CLI's `merchants:email`): where the merchant's
 * subscription emails go when a customer has none, and, in production, every email of its
 * test-environment subscriptions (decision 0066). Null: none.
 */
export async function setMerchantEmail(em: EntityManager, merchantId: string, email: string | null): Promise<Merchant> {
  const merchant = await findMerchant(em, merchantId);
  if (merchant.email !== email) {
    merchant.email = email;
    merchant.updatedAt = new Date();
    await em.flush();
  }
  return merchant;
}

async function findMerchant(em: EntityManager, merchantId: string): Promise<Merchant> {
  const merchant = await em.findOne(Merchant, { id: merchantId });
  if (!merchant) throw new AppError('not_found', `Merchant ${merchantId} not found.`);
  return merchant;
}

/** A merchant's API keys, active and revoked, newest first. */
/** A merchant's keys of one environment (the caller's: a test key never sees a live key, decision 0081). */
export async function listApiKeys(
  em: EntityManager,
  merchantId: string,
  environment: KeyEnvironment,
): Promise<ApiKey[]> {
  return em.fork().find(ApiKey, { merchant: merchantId, environment }, { orderBy: { createdAt: 'desc', id: 'desc' } });
}
