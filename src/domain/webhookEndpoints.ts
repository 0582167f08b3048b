import { randomBytes } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import { LockMode } from '@mikro-orm/core';
import { Merchant, WebhookEndpoint, type WebhookEndpointStatus } from '../db/entities';
import { AppError, errors } from '../errors';
import { newId } from '../ids';
import type { ProviderSecrets, ProviderSecretContext } from '../providers/secrets';
import type { EndpointSecrets } from '../rules/eventFilters';
import type { RecordScope } from './scope';

/**
 * Webhook endpoints (PRODUCT.md, "Events, webhook endpoints and deliveries"; decision 0068):
 * per merchant and environment, at most MAX_WEBHOOK_ENDPOINTS. The signing secret is returned
 * only by create and rotate-secret and stored only encrypted (PROVIDER_SECRETS_KEY, AAD bound to
 * the merchant, environment and endpoint). Delivery is activities/eventDeliveries.ts (0069); disabling
 * or deleting an endpoint stops its pending deliveries here (0070).
 */

export const MAX_WEBHOOK_ENDPOINTS = 16;
export const DEFAULT_OVERLAP_HOURS = 24;
export const MAX_OVERLAP_HOURS = 168;

/** What the API shows of an endpoint (`secret` only on create and rotation). */
export function presentWebhookEndpoint(e: WebhookEndpoint) {
  return {
    id: e.id,
    url: e.url,
    enabledEvents: e.enabledEvents,
    description: e.description,
    status: e.status,
    createdAt: e.createdAt.toISOString(),
    updatedAt: e.updatedAt.toISOString(),
  };
}

export type WebhookEndpointResponse = ReturnType<typeof presentWebhookEndpoint>;

export const webhookEndpointNotFound = () => errors.notFound('Webhook endpoint');

/** A new signing secret: `whsec_` and 32 random bytes (base64url). */
export function newWebhookSecret(): string {
  return `whsec_${randomBytes(32).toString('base64url')}`;
}

function secretContext(e: Pick<WebhookEndpoint, 'id' | 'environment'>, merchantId: string): ProviderSecretContext {
  return { merchantId, environment: e.environment, field: `webhook_endpoint:${e.id}` };
}

/** The secrets key, or an operator-visible fault (production requires PROVIDER_SECRETS_KEY). */
function requireSecrets(secrets: ProviderSecrets | null): ProviderSecrets {
  if (!secrets) throw new Error('PROVIDER_SECRETS_KEY is not set: webhook endpoint secrets are stored only encrypted');
  return secrets;
}

/** An endpoint's secrets decrypted, for the delivery step (signingSecretsOf picks the ones in use). */
export function revealEndpointSecrets(secrets: ProviderSecrets, e: WebhookEndpoint): EndpointSecrets {
  const context = secretContext(e, e.merchant.id);
  return {
    secret: secrets.decrypt(e.secretCiphertext, context),
    previousSecret: e.previousSecretCiphertext === null ? null : secrets.decrypt(e.previousSecretCiphertext, context),
    previousSecretExpiresAt: e.previousSecretExpiresAt,
  };
}

export interface WebhookEndpointInput {
  url: string;
  enabledEvents: string[];
  description?: string | null | undefined;
}

export interface WebhookEndpointChange {
  url?: string | undefined;
  enabledEvents?: string[] | undefined;
  description?: string | null | undefined;
  status?: WebhookEndpointStatus | undefined;
}

const unique = (filters: string[]): string[] => [...new Set(filters)];

/**
 * Creates an endpoint and answers it with its secret. The count and the insert run under a
 * transaction-scoped advisory lock of the merchant and environment, so concurrent creates cannot
 * pass the limit together.
 */
export async function createWebhookEndpoint(
  em: EntityManager,
  secretsKey: ProviderSecrets | null,
  scope: RecordScope,
  input: WebhookEndpointInput,
): Promise<{ endpoint: WebhookEndpoint; secret: string }> {
  const secrets = requireSecrets(secretsKey);
  return em.fork().transactional(async (tx) => {
    await tx.execute(`select pg_advisory_xact_lock(hashtext(?))`, [
      `webhook_endpoints:${scope.merchantId}:${scope.environment}`,
    ]);
    const count = await tx.count(WebhookEndpoint, { merchant: scope.merchantId, environment: scope.environment });
    if (count >= MAX_WEBHOOK_ENDPOINTS) {
      throw new AppError(
        'webhook_endpoint_limit',
        `At most ${MAX_WEBHOOK_ENDPOINTS} webhook endpoints per merchant and environment; delete one first.`,
        { limit: MAX_WEBHOOK_ENDPOINTS },
      );
    }
    const now = new Date();
    const id = newId('webhookEndpoint');
    const secret = newWebhookSecret();
    const endpoint = tx.create(WebhookEndpoint, {
      id,
      merchant: tx.getReference(Merchant, scope.merchantId),
      environment: scope.environment,
      url: input.url,
      enabledEvents: unique(input.enabledEvents),
      description: input.description ?? null,
      status: 'enabled',
      secretCiphertext: secrets.encrypt(
        secret,
        secretContext({ id, environment: scope.environment }, scope.merchantId),
      ),
      previousSecretCiphertext: null,
      previousSecretExpiresAt: null,
      failingSince: null,
      createdAt: now,
      updatedAt: now,
    });
    await tx.flush();
    return { endpoint, secret };
  });
}

/** The caller's endpoints (merchant and environment), newest first. */
export async function listWebhookEndpoints(em: EntityManager, scope: RecordScope): Promise<WebhookEndpoint[]> {
  return em
    .fork()
    .find(
      WebhookEndpoint,
      { merchant: scope.merchantId, environment: scope.environment },
      { orderBy: { createdAt: 'desc', id: 'desc' } },
    );
}

export async function findWebhookEndpoint(
  em: EntityManager,
  scope: RecordScope,
  id: string,
): Promise<WebhookEndpoint | null> {
  return em.fork().findOne(WebhookEndpoint, { id, merchant: scope.merchantId, environment: scope.environment });
}

/**
 * An endpoint's pending deliveries stop (decision 0070): its pending jobs are cancelled, and an
 * attempt a resend announced (`pending`, not yet begun) is `failed` with `reason`, so GET
 * /events/{id} never shows it pending for ever. An attempt in flight ends as it ends (its answer
 * overwrites the row). Run in the transaction that disables or deletes the endpoint.
 */
export async function stopEndpointDeliveries(tx: EntityManager, endpointId: string, reason: string): Promise<void> {
  await tx.execute(
    `update event_deliveries set status = 'failed', error = ?
      where status = 'pending'
        and id in (select pending_delivery_id from delivery_jobs
                    where endpoint_id = ? and status = 'pending' and pending_delivery_id is not null)`,
    [reason, endpointId],
  );
  await tx.execute(
    `update delivery_jobs set status = 'cancelled', last_error = ?, updated_at = now()
      where endpoint_id = ? and status = 'pending'`,
    [reason, endpointId],
  );
}

/** The caller's endpoint, its row locked to the end of the transaction; another's is not found. */
async function lockedEndpoint(tx: EntityManager, scope: RecordScope, id: string): Promise<WebhookEndpoint> {
  const endpoint = await tx.findOne(
    WebhookEndpoint,
    { id, merchant: scope.merchantId, environment: scope.environment },
    { lockMode: LockMode.PESSIMISTIC_WRITE },
  );
  if (!endpoint) throw webhookEndpointNotFound();
  return endpoint;
}

/**
 * Applies the fields given; another merchant's or environment's endpoint is not found. Disabled:
 * its pending deliveries stop at once (a later re-enable resumes only new ones).
 */
export async function updateWebhookEndpoint(
  em: EntityManager,
  scope: RecordScope,
  id: string,
  change: WebhookEndpointChange,
): Promise<WebhookEndpoint> {
  return em.fork().transactional(async (tx) => {
    const endpoint = await lockedEndpoint(tx, scope, id);
    const fields: Partial<WebhookEndpoint> = {};
    if (change.url !== undefined) fields.url = change.url;
    if (change.enabledEvents !== undefined) fields.enabledEvents = unique(change.enabledEvents);
    if (change.description !== undefined) fields.description = change.description;
    if (change.status !== undefined) fields.status = change.status;
    // Re-enabled: its failing streak starts over (3 more days before it is disabled again).
    if (change.status === 'enabled' && endpoint.status === 'disabled') fields.failingSince = null;
    const disabling = change.status === 'disabled' && endpoint.status === 'enabled';
    if (Object.keys(fields).length > 0) {
      tx.assign(endpoint, { ...fields, updatedAt: new Date() });
      await tx.flush();
    }
    if (disabling) await stopEndpointDeliveries(tx, id, 'endpoint disabled');
    return endpoint;
  });
}

/**
 * Deletes the endpoint: its delivery jobs go with it (cascade), so nothing more is sent to it;
 * its attempts so far stay on their events (GET /events/{id}), a resend's announced one `failed`.
 */
export async function deleteWebhookEndpoint(em: EntityManager, scope: RecordScope, id: string): Promise<void> {
  await em.fork().transactional(async (tx) => {
    await lockedEndpoint(tx, scope, id);
    await stopEndpointDeliveries(tx, id, 'endpoint deleted');
    await tx.nativeDelete(WebhookEndpoint, { id });
  });
}

/**
 * A new secret; the one it replaces signs too for `overlapHours` (0: not at all). An older
 * previous secret still in its overlap is dropped: at most two secrets sign at once.
 */
export async function rotateWebhookEndpointSecret(
  em: EntityManager,
  secretsKey: ProviderSecrets | null,
  scope: RecordScope,
  id: string,
  overlapHours: number,
): Promise<{ endpoint: WebhookEndpoint; secret: string }> {
  const secrets = requireSecrets(secretsKey);
  return em.fork().transactional(async (tx) => {
    const endpoint = await lockedEndpoint(tx, scope, id);
    const now = new Date();
    const secret = newWebhookSecret();
    const context = secretContext(endpoint, scope.merchantId);
    tx.assign(endpoint, {
      secretCiphertext: secrets.encrypt(secret, context),
      previousSecretCiphertext: overlapHours > 0 ? endpoint.secretCiphertext : null,
      previousSecretExpiresAt: overlapHours > 0 ? new Date(now.getTime() + overlapHours * 3_600_000) : null,
      updatedAt: now,
    });
    await tx.flush();
    return { endpoint, secret };
  });
}
