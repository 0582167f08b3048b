import { EntitySchema } from '@mikro-orm/core';

/**
 * Persistence model. Plain classes mapped with EntitySchema (no decorators, so the
 * compiler needs no metadata emission). Money is never stored here as a float: amounts
 * are bigint minor units (see src/domain/money.ts).
 */
export const MERCHANT_STATUSES = ['active', 'inactive'] as const;
export type MerchantStatus = (typeof MERCHANT_STATUSES)[number];

export const KEY_ENVIRONMENTS = ['test', 'live'] as const;
export type KeyEnvironment = (typeof KEY_ENVIRONMENTS)[number];

export const KEY_ROLES = ['merchant', 'admin'] as const;
export type KeyRole = (typeof KEY_ROLES)[number];

export class Merchant {
  id!: string;
  name!: string;
  email!: string | null;
  status!: MerchantStatus;
  createdAt!: Date;
  updatedAt!: Date;
}

export class ApiKey {
  id!: string;
  merchant!: Merchant;
  publicKey!: string;
  /** SHA-256 of the secret, hex. The secret itself is never stored. */
  secretHash!: string;
  environment!: KeyEnvironment;
  role!: KeyRole;
  isActive!: boolean;
  createdAt!: Date;
  revokedAt!: Date | null;
  lastUsedAt!: Date | null;
}

const timestamp = { type: 'Date', columnType: 'timestamptz(3)' } as const;

export const MerchantSchema = new EntitySchema<Merchant>({
  class: Merchant,
  tableName: 'merchants',
  properties: {
    id: { type: 'string', primary: true, length: 40 },
    name: { type: 'string', length: 255 },
    email: { type: 'string', length: 320, nullable: true },
    status: { enum: true, items: () => [...MERCHANT_STATUSES] },
    createdAt: { ...timestamp },
    updatedAt: { ...timestamp },
  },
});

export const ApiKeySchema = new EntitySchema<ApiKey>({
  class: ApiKey,
  tableName: 'api_keys',
  indexes: [{ properties: ['merchant', 'createdAt'], name: 'api_keys_merchant_created_idx' }],
  checks: [
    // A revoked key is inactive and says when; an active key has no revocation time.
    {
      name: 'api_keys_revocation_check',
      expression: '(is_active and revoked_at is null) or (not is_active and revoked_at is not null)',
    },
  ],
  properties: {
    id: { type: 'string', primary: true, length: 40 },
    merchant: { kind: 'm:1', entity: () => Merchant, deleteRule: 'cascade' },
    publicKey: { type: 'string', length: 64, unique: 'api_keys_public_key_unique' },
    secretHash: { type: 'string', length: 64 },
    environment: { enum: true, items: () => [...KEY_ENVIRONMENTS] },
    role: { enum: true, items: () => [...KEY_ROLES] },
    isActive: { type: 'boolean' },
    createdAt: { ...timestamp },
    revokedAt: { ...timestamp, nullable: true },
    lastUsedAt: { ...timestamp, nullable: true },
  },
});

export const entities = [MerchantSchema, ApiKeySchema];
