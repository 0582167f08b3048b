import type { Middleware } from 'koa';
import { AppError } from '../../errors';
import type { AppState } from '../context';
import { decodeUtf8Strictly } from '../storableText';

export const MAX_BODY_BYTES = 1024 * 1024;

function hasBody(headers: Record<string, string | string[] | undefined>): boolean {
  const length = headers['content-length'];
  if (length !== undefined) return Number(length) > 0;
  return headers['transfer-encoding'] !== undefined;
}

/**
 * Reads a JSON body: 415 for another content type, 413 past 1 MB (checked on the declared
 * length first, then while streaming), 400 `invalid_json` for a body that is not UTF-8 (JSON
 * exchanged between systems is UTF-8, RFC 8259 §8.1; replacing bad bytes with U+FFFD would store
 * text the client did not send) or does not parse.
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
    const text = decodeUtf8Strictly(await readLimitedBytes(ctx.req, MAX_BODY_BYTES));
    if (text === undefined) {
      throw new AppError(400, 'invalid_json', 'The request body is not valid UTF-8.', {
        reason: 'The body holds bytes that are not UTF-8.',
      });
    }
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
  return (await readLimitedBytes(stream, limit)).toString('utf8');
}

export async function readLimitedBytes(stream: NodeJS.ReadableStream, limit: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of stream) {
    const buf = typeof chunk === 'string' ? Buffer.from(chunk) : (chunk as Buffer);
    size += buf.length;
    if (size > limit) throw tooLarge();
    chunks.push(buf);
  }
  return Buffer.concat(chunks);
}
