import { timingSafeEqual, createHash } from 'node:crypto';
import Router from '@koa/router';
import type { Context } from 'koa';
import type { DataConverter, Payload, PayloadCodec } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import type { Config } from '../../config';
import { AppError } from '../../errors';
import type { AppState } from '../context';
import { MAX_BODY_BYTES, readLimited } from '../middleware/jsonBody';

/** Where the API serves the Temporal UI's remote codec (`<path>/decode`, `<path>/encode`). */
export const CODEC_PATH = '/codec';

export interface CodecSettings {
  /** The payload codec of the product's clients and workers (src/temporal/payloadCodec.ts). */
  codec: PayloadCodec;
  /** TEMPORAL_CODEC_TOKEN; unset: open when `open` (development), else every request is 401. */
  token?: string;
  open: boolean;
  /** Origins of the Temporal UI (CORS). */
  corsOrigins: readonly string[];
}

const digest = (text: string) => createHash('sha256').update(text, 'utf8').digest();

function authorized(ctx: Context, settings: CodecSettings): boolean {
  if (settings.token === undefined) return settings.open;
  const match = /^Bearer (.+)$/.exec(ctx.get('authorization'));
  // Constant time over equal-length digests, whatever the presented token's length.
  return match !== null && timingSafeEqual(digest(match[1]!), digest(settings.token));
}

function payloadsOf(raw: string): Payload[] {
  let body: unknown;
  try {
    body = JSON.parse(raw);
  } catch {
    throw new AppError('invalid_json', 'The body is not valid JSON.');
  }
  const list = (body as { payloads?: unknown } | null)?.payloads;
  if (!Array.isArray(list)) throw new AppError('validation_error', 'The body must be `{ "payloads": [...] }`.');
  try {
    return temporal.api.common.v1.Payloads.fromObject({ payloads: list }).payloads;
  } catch {
    throw new AppError('validation_error', 'A payload is not `{ metadata: { key: base64 }, data: base64 }`.');
  }
}

const jsonPayloads = (payloads: Payload[]) =>
  temporal.api.common.v1.Payloads.toObject(temporal.api.common.v1.Payloads.create({ payloads }), { bytes: String });

/**
 * The Temporal UI's Remote Codec Server protocol (decision 0078): `POST <path>/decode` and
 * `<path>/encode` with `{ payloads: [{ metadata, data }] }` (proto JSON, bytes in base64), the
 * answer in the same shape. Only for operators: `Authorization: Bearer <TEMPORAL_CODEC_TOKEN>`,
 * compared in constant time (401 otherwise); CORS for the UI's origins, preflights unauthenticated.
 */
export function codecRoutes(settings: CodecSettings): Router<AppState> {
  const router = new Router<AppState>({ prefix: CODEC_PATH });
  router.use(async (ctx, next) => {
    const origin = ctx.get('origin');
    if (origin && settings.corsOrigins.includes(origin)) {
      ctx.set('Access-Control-Allow-Origin', origin);
      ctx.set('Access-Control-Allow-Credentials', 'true');
      ctx.vary('Origin');
    }
    if (ctx.method === 'OPTIONS') {
      ctx.set('Access-Control-Allow-Methods', 'POST, OPTIONS');
      ctx.set('Access-Control-Allow-Headers', 'Authorization, Content-Type, X-Namespace');
      ctx.set('Access-Control-Max-Age', '600');
      ctx.status = 204;
      return;
    }
    await next();
  });
  for (const direction of ['decode', 'encode'] as const) {
    router.options(`/${direction}`, () => undefined);
    router.post(`/${direction}`, async (ctx) => {
      if (!authorized(ctx, settings)) {
        throw new AppError(
          'unauthorized',
          'An operator bearer token is required.',
          {},
          {
            'WWW-Authenticate': 'Bearer realm="temporal-codec"',
          },
        );
      }
      const payloads = payloadsOf(await readLimited(ctx.req, MAX_BODY_BYTES));
      let answer: Payload[];
      try {
        answer = await settings.codec[direction](payloads);
      } catch (err) {
        throw new AppError('validation_error', err instanceof Error ? err.message : 'A payload does not decode.');
      }
      ctx.body = jsonPayloads(answer);
    });
  }
  return router;
}

/**
 * The codec endpoint's settings: served only with a key ring;
 * TEMPORAL_CODEC_TOKEN required by every request when set; unset, open in development and off
 * (401) in production. CORS for TEMPORAL_CODEC_CORS_ORIGINS, default the embedded UI's.
 */
export function codecEndpoint(
  config: Pick<Config, 'NODE_ENV' | 'TEMPORAL_CODEC_TOKEN' | 'TEMPORAL_CODEC_CORS_ORIGINS' | 'TEMPORAL_UI_PORT'>,
  dataConverter: DataConverter | undefined,
): { codec?: CodecSettings } {
  const codec = dataConverter?.payloadCodecs?.[0];
  if (!codec) return {};
  const corsOrigins = config.TEMPORAL_CODEC_CORS_ORIGINS
    ? config.TEMPORAL_CODEC_CORS_ORIGINS.split(',').map((o) => o.trim().replace(/\/$/, ''))
    : [`http://localhost:${config.TEMPORAL_UI_PORT}`, `http://127.0.0.1:${config.TEMPORAL_UI_PORT}`];
  return {
    codec: {
      codec,
      ...(config.TEMPORAL_CODEC_TOKEN ? { token: config.TEMPORAL_CODEC_TOKEN } : {}),
      open: config.NODE_ENV !== 'production',
      corsOrigins,
    },
  };
}
