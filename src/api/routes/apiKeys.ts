import { z } from 'zod';
import type { EntityManager } from '@mikro-orm/postgresql';
import { KEY_ENVIRONMENTS, KEY_ROLES, type ApiKey } from '../../db/entities';
import { listApiKeys } from '../../domain/merchants';
import { AUTH_ERRORS, defineRoute } from '../routing';
import { iso, nullableTimestamp, timestamp } from '../schemas';

export const apiKeySchema = z
  .object({
    id: z.string(),
    publicKey: z.string().describe('public part only; secrets are never returned'),
    environment: z.enum(KEY_ENVIRONMENTS),
    role: z.enum(KEY_ROLES),
    isActive: z.boolean(),
    createdAt: timestamp,
    revokedAt: nullableTimestamp,
    lastUsedAt: nullableTimestamp,
  })
  .meta({ id: 'ApiKey' });

export type ApiKeyResponse = z.infer<typeof apiKeySchema>;

export function presentApiKey(key: ApiKey): ApiKeyResponse {
  return {
    id: key.id,
    publicKey: key.publicKey,
    environment: key.environment,
    role: key.role,
    isActive: key.isActive,
    createdAt: iso(key.createdAt),
    revokedAt: iso(key.revokedAt),
    lastUsedAt: iso(key.lastUsedAt),
  };
}

export function apiKeyRoutes(em: EntityManager) {
  return [
    defineRoute({
      method: 'get',
      path: '/merchant/api-keys',
      operationId: 'listApiKeys',
      tag: 'API keys',
      summary:
        "List the caller's API keys of the calling key's environment, active and revoked (public part only), newest first.",
      response: z.object({ apiKeys: z.array(apiKeySchema) }),
      errors: [...AUTH_ERRORS],
      handler: async ({ caller }) => {
        const keys = await listApiKeys(em, caller.merchantId, caller.environment);
        return { apiKeys: keys.map(presentApiKey) };
      },
    }),
  ];
}
