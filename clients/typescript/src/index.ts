import { createHmac, timingSafeEqual } from 'node:crypto';
import createClient, { type Client } from 'openapi-fetch';
import type { components, paths } from './schema';

export type { components, paths };
export type Payment = components['schemas']['Payment'];
export type Refund = components['schemas']['Refund'];
export type Subscription = components['schemas']['Subscription'];
export type Dispute = components['schemas']['Dispute'];
export type Customer = components['schemas']['Customer'];
export type PaymentMethod = components['schemas']['PaymentMethod'];
export type TestClock = components['schemas']['TestClock'];

export interface PaymentsClientOptions {
  /** The API's base URL, e.g. `http://localhost:3000`. */
  baseUrl: string;
  /** The API key pair (HTTP Basic: public key as user, secret key as password). */
  publicKey: string;
  secretKey: string;
  /** Another fetch (tests, proxies); default the global one. */
  fetch?: typeof fetch;
}

/** A client whose paths, bodies, query strings and answers are typed from the API's OpenAPI document. */
export function createPaymentsClient(options: PaymentsClientOptions): Client<paths> {
  const credentials = Buffer.from(`${options.publicKey}:${options.secretKey}`).toString('base64');
  return createClient<paths>({
    baseUrl: options.baseUrl,
    headers: { authorization: `Basic ${credentials}` },
    ...(options.fetch ? { fetch: options.fetch } : {}),
  });
}

/**
 * Checks a delivery's `X-Signature: t=<unix>,v1=<hex HMAC-SHA256(secret, t + "." + body)>` (a
 * callbackUrl's or a webhook endpoint's) on the raw body exactly as received, in constant time.
 * `secrets`: the secret, or several (during a rotation overlap: the new one and the old one);
 * accepted when any `v1` of the header matches any of them (a delivery during a rotation carries
 * one `v1` per secret: `t=<unix>,v1=<new>,v1=<old>`). A signature older (or newer) than
 * `toleranceSeconds` is refused, so a captured delivery cannot be replayed later.
 */
export function verifyCallbackSignature(
  rawBody: string,
  signatureHeader: string | null | undefined,
  secrets: string | readonly string[],
  toleranceSeconds = 300,
  nowMs = Date.now(),
): boolean {
  if (!signatureHeader) return false;
  let timestamp = NaN;
  const macs: Buffer[] = [];
  for (const part of signatureHeader.split(',')) {
    const [key, ...rest] = part.trim().split('=');
    const value = rest.join('=');
    if (key === 't') timestamp = Number(value);
    // Several `v1` during a secret rotation (the new secret's and the old one's): any may match.
    else if (key === 'v1' && /^[0-9a-f]{64}$/.test(value)) macs.push(Buffer.from(value, 'hex'));
  }
  if (!Number.isSafeInteger(timestamp) || macs.length === 0) return false;
  if (Math.abs(nowMs / 1000 - timestamp) > toleranceSeconds) return false;
  const candidates = (typeof secrets === 'string' ? [secrets] : secrets).filter((s) => s.length > 0);
  // Every pair is compared (no early exit), so the time taken does not tell which one matched.
  let matched = false;
  for (const secret of candidates) {
    const expected = createHmac('sha256', Buffer.from(secret, 'utf8')).update(`${timestamp}.${rawBody}`).digest();
    for (const mac of macs) if (timingSafeEqual(expected, mac)) matched = true;
  }
  return matched;
}

/** The same check under the name of what it verifies for webhook endpoints. */
export const verifyWebhookSignature = verifyCallbackSignature;

/** Walks every page of a list (`nextCursor` until null), yielding its items. */
export async function* allPages<T>(
  page: (cursor: string | undefined) => Promise<{ items: T[]; nextCursor: string | null }>,
): AsyncGenerator<T> {
  let cursor: string | undefined;
  do {
    const { items, nextCursor } = await page(cursor);
    yield* items;
    cursor = nextCursor ?? undefined;
  } while (cursor);
}
