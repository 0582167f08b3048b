import type { Middleware } from 'koa';
import { AppError } from '../../errors';
import type { AppState } from '../context';
import { decodeUtf8Strictly } from '../storableText';

export const MAX_BODY_BYTES = 1024 * 1024;
/** Arrays and objects nested deeper than this are refused (RFC 8259 §9 allows a limit). */
export const MAX_JSON_DEPTH = 64;

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
      throw new AppError('unsupported_media_type', 'Request bodies must be application/json.', {
        contentType: ctx.get('Content-Type') || null,
      });
    }
    const declared = Number(ctx.get('Content-Length') || 0);
    if (declared > MAX_BODY_BYTES) throw tooLarge();
    const text = decodeUtf8Strictly(await readLimitedBytes(ctx.req, MAX_BODY_BYTES));
    if (text === undefined) {
      throw new AppError('invalid_json', 'The request body is not valid UTF-8.', {
        reason: 'The body holds bytes that are not UTF-8.',
      });
    }
    try {
      ctx.state.body = JSON.parse(text) as unknown;
    } catch (err) {
      throw new AppError('invalid_json', 'The request body is not valid JSON.', {
        reason: (err as Error).message,
      });
    }
    // A 1 MB body can nest 500,000 levels; recursive code downstream (JSON.stringify of a
    // free-form field) would overflow the stack on it.
    if (nestedDeeperThan(ctx.state.body, MAX_JSON_DEPTH)) {
      throw new AppError('invalid_json', `The request body nests deeper than ${MAX_JSON_DEPTH} levels.`, {
        reason: 'too deeply nested',
        maxDepth: MAX_JSON_DEPTH,
      });
    }
    return next();
  };
}

/** Iterative, so the check itself cannot overflow the stack. */
function nestedDeeperThan(value: unknown, max: number): boolean {
  const pending: { value: unknown; depth: number }[] = [{ value, depth: 0 }];
  while (pending.length > 0) {
    const next = pending.pop()!;
    if (next.value === null || typeof next.value !== 'object') continue;
    if (next.depth >= max) return true;
    for (const child of Object.values(next.value)) pending.push({ value: child, depth: next.depth + 1 });
  }
  return false;
}

function tooLarge(): AppError {
  return new AppError('payload_too_large', 'The request body is over 1 MB.', { limitBytes: MAX_BODY_BYTES });
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
