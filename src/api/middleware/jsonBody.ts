import type { Middleware } from 'koa';
import { AppError } from '../../errors';
import type { AppState } from '../context';

export const MAX_BODY_BYTES = 1024 * 1024;

function hasBody(headers: Record<string, string | string[] | undefined>): boolean {
  const length = headers['content-length'];
  if (length !== undefined) return Number(length) > 0;
  return headers['transfer-encoding'] !== undefined;
}

/**
 * Reads a JSON body: 415 for another content type, 413 past 1 MB (checked on the declared
 * length first, then while streaming), 400 `invalid_json` for a body that does not parse.
 */
export function jsonBody(): Middleware<AppState> {
  return async (ctx, next) => {
    if (!hasBody(ctx.req.headers)) return next();
    if (!ctx.is('application/json', 'application/*+json')) {
      throw new AppError(415, 'unsupported_media_type', 'Request bodies must be application/json.', {
        contentType: ctx.get('Content-Type') || null,
      });
    }
    const declared = Number(ctx.get('Content-Length') || 0);
    if (declared > MAX_BODY_BYTES) throw tooLarge();
    const text = await readLimited(ctx.req, MAX_BODY_BYTES);
    try {
      ctx.state.body = JSON.parse(text) as unknown;
    } catch (err) {
      throw new AppError(400, 'invalid_json', 'The request body is not valid JSON.', {
        reason: (err as Error).message,
      });
    }
    return next();
  };
}

function tooLarge(): AppError {
  return new AppError(413, 'payload_too_large', 'The request body is over 1 MB.', { limitBytes: MAX_BODY_BYTES });
}

export async function readLimited(stream: NodeJS.ReadableStream, limit: number): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of stream) {
    const buf = typeof chunk === 'string' ? Buffer.from(chunk) : (chunk as Buffer);
    size += buf.length;
    if (size > limit) throw tooLarge();
    chunks.push(buf);
  }
  return Buffer.concat(chunks).toString('utf8');
}
