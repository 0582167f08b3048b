import { z } from 'zod';
import { ERROR_CODES, statusOf, type ErrorCode } from '../errors';
import type { RouteDef } from './routing';
import { errorBody } from './schemas';

type JsonSchema = Record<string, unknown>;

const STATUS_TEXT: Record<number, string> = {
  400: 'Bad request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not found',
  409: 'Conflict',
  413: 'Payload too large',
  415: 'Unsupported media type',
  422: 'Unprocessable',
  429: 'Too many requests',
  500: 'Internal error',
  502: 'Bad gateway',
  503: 'Service unavailable',
};

/** The header of a 503 `service_unavailable` (a dependency down or restarting). */
const SERVICE_UNAVAILABLE_HEADERS = {
  'Retry-After': {
    description: 'Whole seconds to wait before retrying; sent with `service_unavailable`.',
    schema: { type: 'integer' },
  },
};

/** The headers of a 429 `rate_limited` (PRODUCT.md, "Rate limits"). */
const RATE_LIMITED_HEADERS = {
  'Retry-After': { description: 'Whole seconds to wait before retrying.', schema: { type: 'integer' } },
  'RateLimit-Limit': {
    description:
      'Requests allowed at once (the bucket size; RATE_LIMIT_BURST for an API key). Sent on every response of an authenticated route while limits are on.',
    schema: { type: 'integer' },
  },
  'RateLimit-Remaining': { description: 'Requests left now (0 when limited).', schema: { type: 'integer' } },
  'RateLimit-Reset': {
    description: 'Whole seconds until the full limit is available again.',
    schema: { type: 'integer' },
  },
};

/**
 * OpenAPI 3.1 generated from the same zod schemas that validate requests. Schemas with a
 * `meta({ id })` land in components and are referenced.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- heterogeneous route list
export function buildOpenApi(routes: RouteDef<any, any, any>[], serverUrl?: string): JsonSchema {
  const components: Record<string, JsonSchema> = {};
  const toSchema = (schema: z.ZodType, io: 'input' | 'output'): JsonSchema => {
    const json = z.toJSONSchema(schema, {
      target: 'draft-2020-12',
      io,
      unrepresentable: 'any',
      metadata: z.globalRegistry,
    }) as JsonSchema & { $defs?: Record<string, JsonSchema> };
    // Schemas with a `meta({ id })` come back under $defs; OpenAPI wants them in components.
    const relinked = JSON.parse(JSON.stringify(json).replaceAll('"#/$defs/', '"#/components/schemas/')) as typeof json;
    const { $defs, ...rest } = relinked;
    delete rest.$schema;
    Object.assign(components, $defs ?? {});
    return rest;
  };

  const paths: Record<string, Record<string, unknown>> = {};
  for (const route of routes) {
    const success = route.successStatus ?? 200;
    const responses: Record<string, unknown> = {
      [success]: {
        description: success === 202 ? 'Accepted' : 'OK',
        content: { 'application/json': { schema: toSchema(route.response, 'output') } },
      },
    };
    // Each code's status comes from the one table (src/errors.ts); the route names its codes.
    const codes = new Set<ErrorCode>(route.errors);
    const takesInput = Boolean(route.body || route.query || route.params);
    if (takesInput && ![...codes].some((c) => statusOf(c) === 400)) codes.add('validation_error');
    if (route.params && ![...codes].some((c) => statusOf(c) === 404)) codes.add('not_found');
    // Every route reads PostgreSQL (its key, its records): while it or Temporal is down or
    // restarting, any of them answers 503 `service_unavailable` with Retry-After (PRODUCT.md).
    codes.add('service_unavailable');
    const errorStatuses: Record<number, ErrorCode[]> = {};
    for (const code of codes) {
      // A route without input answers no 400 (nothing of the request is read).
      if (!takesInput && statusOf(code) === 400) continue;
      (errorStatuses[statusOf(code)] ??= []).push(code);
    }
    for (const [status, codes] of Object.entries(errorStatuses)) {
      responses[status] = {
        description: `${STATUS_TEXT[Number(status)] ?? 'Error'}: ${codes.map((c) => `\`${c}\``).join(', ')}`,
        ...(status === '429' ? { headers: RATE_LIMITED_HEADERS } : {}),
        ...(status === '503' ? { headers: SERVICE_UNAVAILABLE_HEADERS } : {}),
        content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
      };
    }
    const parameters: unknown[] = [];
    for (const [where, schema] of [
      ['path', route.params],
      ['query', route.query],
    ] as const) {
      if (!schema) continue;
      const json = toSchema(schema, 'input') as { properties?: Record<string, JsonSchema>; required?: string[] };
      for (const [name, prop] of Object.entries(json.properties ?? {})) {
        parameters.push({
          name,
          in: where,
          required: where === 'path' || (json.required ?? []).includes(name),
          schema: prop,
        });
      }
    }
    (paths[route.path] ??= {})[route.method] = {
      operationId: route.operationId,
      summary: route.summary,
      ...(route.description ? { description: route.description } : {}),
      tags: [route.tag],
      security: [{ basicAuth: [] }],
      ...(parameters.length ? { parameters } : {}),
      ...(route.body
        ? {
            requestBody: { required: true, content: { 'application/json': { schema: toSchema(route.body, 'input') } } },
          }
        : {}),
      responses,
    };
  }
  // A schema with an id comes back as a $ref with its body in $defs (now in components).
  const error = toSchema(errorBody, 'output');
  if (!('$ref' in error)) components.Error = error;

  return {
    openapi: '3.1.0',
    info: {
      title: 'Payment platform API',
      version: '1',
      description:
        'Merchant-facing payment API. HTTP Basic auth with `publicKey:secretKey`. Errors are `{ code, message, details }`; codes:\n\n' +
        Object.entries(ERROR_CODES)
          .map(([code, { status, description }]) => `- \`${code}\` (${status}): ${description}`)
          .join('\n'),
    },
    ...(serverUrl ? { servers: [{ url: serverUrl }] } : {}),
    components: {
      securitySchemes: { basicAuth: { type: 'http', scheme: 'basic' } },
      schemas: components,
    },
    paths,
  };
}
