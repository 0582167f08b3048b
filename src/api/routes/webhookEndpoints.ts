import { z } from 'zod';
import type { EntityManager } from '@mikro-orm/postgresql';
import { WEBHOOK_ENDPOINT_STATUSES } from '../../db/entities';
import { isId } from '../../ids';
import type { ProviderSecrets } from '../../providers/secrets';
import { EVENT_PREFIXES, isKnownEventFilter } from '../../rules/eventFilters';
import {
  DEFAULT_OVERLAP_HOURS,
  MAX_OVERLAP_HOURS,
  MAX_WEBHOOK_ENDPOINTS,
  createWebhookEndpoint,
  deleteWebhookEndpoint,
  findWebhookEndpoint,
  listWebhookEndpoints,
  presentWebhookEndpoint,
  rotateWebhookEndpointSecret,
  updateWebhookEndpoint,
  webhookEndpointNotFound,
} from '../../domain/webhookEndpoints';
import { AUTH_ERRORS, defineRoute } from '../routing';
import { assertCallbackAllowed, httpUrl } from '../inputs';
import { timestamp } from '../schemas';

export interface WebhookEndpointDeps {
  em: EntityManager;
  /** PROVIDER_SECRETS_KEY: endpoint secrets are stored only encrypted with it. */
  secrets: ProviderSecrets | null;
}

const eventFilter = z
  .string()
  .max(100)
  .refine(isKnownEventFilter, 'Unknown event type: an event type, `<object>.*` or `*`.')
  .describe(`an event type, \`<object>.*\` (${EVENT_PREFIXES.join(', ')}) or \`*\``);

const enabledEvents = z.array(eventFilter).min(1).max(64).describe('the events sent to this endpoint (1..64 filters)');

const description = z.string().max(500).nullable().describe('free text for the merchant, <= 500 characters');

export const webhookEndpointSchema = z
  .object({
    id: z.string(),
    url: z.string(),
    enabledEvents: z.array(z.string()),
    description: z.string().nullable(),
    status: z.enum(WEBHOOK_ENDPOINT_STATUSES),
    createdAt: timestamp,
    updatedAt: timestamp,
  })
  .meta({ id: 'WebhookEndpoint' });

export const webhookEndpointWithSecretSchema = webhookEndpointSchema
  .extend({
    secret: z.string().describe('`whsec_...`: the signing secret, shown only here (create and rotate-secret)'),
  })
  .meta({ id: 'WebhookEndpointWithSecret' });

export const createWebhookEndpointBody = z
  .object({
    url: httpUrl.describe('http(s); loopback and private addresses only for test keys (the callback rules)'),
    enabledEvents,
    description: description.optional(),
  })
  .strict();

export const updateWebhookEndpointBody = z
  .object({
    url: httpUrl.optional(),
    enabledEvents: enabledEvents.optional(),
    description: description.optional(),
    status: z.enum(WEBHOOK_ENDPOINT_STATUSES).optional(),
  })
  .strict();

export const rotateWebhookSecretBody = z
  .object({
    overlapHours: z
      .number()
      .int()
      .min(0)
      .max(MAX_OVERLAP_HOURS)
      .optional()
      .describe(
        `how long the previous secret still signs, 0..${MAX_OVERLAP_HOURS} hours (default ${DEFAULT_OVERLAP_HOURS})`,
      ),
  })
  .strict();

const endpointParams = z.object({ webhookEndpointId: z.string() });

export function webhookEndpointRoutes(deps: WebhookEndpointDeps) {
  const { em, secrets } = deps;
  return [
    defineRoute({
      method: 'post',
      path: '/webhook-endpoints',
      operationId: 'createWebhookEndpoint',
      tag: 'Webhook endpoints',
      summary:
        "Create a webhook endpoint for the key's environment; the answer carries its signing secret (only here).",
      description: `At most ${MAX_WEBHOOK_ENDPOINTS} per merchant and environment (409 \`webhook_endpoint_limit\`).`,
      body: createWebhookEndpointBody,
      response: webhookEndpointWithSecretSchema,
      errors: ['validation_error', ...AUTH_ERRORS, 'webhook_endpoint_limit'],
      handler: async ({ body, caller }) => {
        assertCallbackAllowed(body.url, caller.environment, 'url');
        const { endpoint, secret } = await createWebhookEndpoint(em, secrets, caller, body);
        return { ...presentWebhookEndpoint(endpoint), secret };
      },
    }),
    defineRoute({
      method: 'get',
      path: '/webhook-endpoints',
      operationId: 'listWebhookEndpoints',
      tag: 'Webhook endpoints',
      summary: "The webhook endpoints of the key's environment, newest first (secrets are never listed).",
      response: z.object({ webhookEndpoints: z.array(webhookEndpointSchema) }),
      errors: [...AUTH_ERRORS],
      handler: async ({ caller }) => {
        const endpoints = await listWebhookEndpoints(em, caller);
        return { webhookEndpoints: endpoints.map(presentWebhookEndpoint) };
      },
    }),
    defineRoute({
      method: 'get',
      path: '/webhook-endpoints/{webhookEndpointId}',
      operationId: 'getWebhookEndpoint',
      tag: 'Webhook endpoints',
      summary: 'Retrieve a webhook endpoint (without its secret).',
      params: endpointParams,
      response: webhookEndpointSchema,
      errors: [...AUTH_ERRORS, 'not_found'],
      handler: async ({ params, caller }) => {
        if (!isId('webhookEndpoint', params.webhookEndpointId)) throw webhookEndpointNotFound();
        const endpoint = await findWebhookEndpoint(em, caller, params.webhookEndpointId);
        if (!endpoint) throw webhookEndpointNotFound();
        return presentWebhookEndpoint(endpoint);
      },
    }),
    defineRoute({
      method: 'patch',
      path: '/webhook-endpoints/{webhookEndpointId}',
      operationId: 'updateWebhookEndpoint',
      tag: 'Webhook endpoints',
      summary: 'Change the url, enabledEvents, description or status (`enabled` | `disabled`) of an endpoint.',
      description: 'Only the fields given change; `description: null` clears it.',
      params: endpointParams,
      body: updateWebhookEndpointBody,
      response: webhookEndpointSchema,
      errors: ['validation_error', ...AUTH_ERRORS, 'not_found'],
      handler: async ({ params, body, caller }) => {
        if (!isId('webhookEndpoint', params.webhookEndpointId)) throw webhookEndpointNotFound();
        assertCallbackAllowed(body.url, caller.environment, 'url');
        const endpoint = await updateWebhookEndpoint(em, caller, params.webhookEndpointId, body);
        return presentWebhookEndpoint(endpoint);
      },
    }),
    defineRoute({
      method: 'delete',
      path: '/webhook-endpoints/{webhookEndpointId}',
      operationId: 'deleteWebhookEndpoint',
      tag: 'Webhook endpoints',
      summary: 'Delete a webhook endpoint: nothing is sent to it any more.',
      params: endpointParams,
      response: z.object({ id: z.string(), deleted: z.literal(true) }).meta({ id: 'DeletedWebhookEndpoint' }),
      errors: [...AUTH_ERRORS, 'not_found'],
      handler: async ({ params, caller }) => {
        if (!isId('webhookEndpoint', params.webhookEndpointId)) throw webhookEndpointNotFound();
        await deleteWebhookEndpoint(em, caller, params.webhookEndpointId);
        return { id: params.webhookEndpointId, deleted: true as const };
      },
    }),
    defineRoute({
      method: 'post',
      path: '/webhook-endpoints/{webhookEndpointId}/rotate-secret',
      operationId: 'rotateWebhookEndpointSecret',
      tag: 'Webhook endpoints',
      summary: 'A new signing secret (answered only here); the previous one still signs for `overlapHours`.',
      description: `During the overlap deliveries carry both signatures. \`overlapHours\` 0..${MAX_OVERLAP_HOURS} (default ${DEFAULT_OVERLAP_HOURS}); 0 drops the previous secret at once.`,
      params: endpointParams,
      body: rotateWebhookSecretBody,
      response: webhookEndpointWithSecretSchema,
      errors: ['validation_error', ...AUTH_ERRORS, 'not_found'],
      handler: async ({ params, body, caller }) => {
        if (!isId('webhookEndpoint', params.webhookEndpointId)) throw webhookEndpointNotFound();
        const { endpoint, secret } = await rotateWebhookEndpointSecret(
          em,
          secrets,
          caller,
          params.webhookEndpointId,
          body.overlapHours ?? DEFAULT_OVERLAP_HOURS,
        );
        return { ...presentWebhookEndpoint(endpoint), secret };
      },
    }),
  ];
}
