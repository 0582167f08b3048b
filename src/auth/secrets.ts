import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { KeyEnvironment } from '../db/entities';

/**
 * API key material. Secrets are 32 random bytes; only their SHA-256 is stored. A fast hash
 * is right here: the secret has 256 bits of entropy, so there is nothing to brute-force,
 * and a slow password hash would cost every request.
 */
const SECRET_BYTES = 32;
const PUBLIC_BYTES = 18;

export interface GeneratedKey {
  publicKey: string;
  secretKey: string;
  secretHash: string;
}

export function hashSecret(secret: string): string {
  return createHash('sha256').update(secret, 'utf8').digest('hex');
}

export function generateKey(environment: KeyEnvironment): GeneratedKey {
  const publicKey = `pk_${environment}_${randomBytes(PUBLIC_BYTES).toString('base64url')}`;
  const secretKey = `sk_${environment}_${randomBytes(SECRET_BYTES).toString('base64url')}`;
  return { publicKey, secretKey, secretHash: hashSecret(secretKey) };
}

/** Constant-time comparison of a presented secret with a stored hash. */
export function secretMatches(presented: string, storedHash: string): boolean {
  const a = Buffer.from(hashSecret(presented), 'hex');
  const b = Buffer.from(storedHash, 'hex');
  return a.length === b.length && timingSafeEqual(a, b);
}

export interface BasicCredentials {
  publicKey: string;
  secretKey: string;
}

/** Parses `Authorization: Basic base64(public:secret)`; undefined for anything malformed. */
export function parseBasicAuthorization(header: string | undefined): BasicCredentials | undefined {
  if (!header) return undefined;
  const match = /^Basic[ ]+([A-Za-z0-9+/=_-]+)[ ]*$/i.exec(header);
  if (!match) return undefined;
  const decoded = Buffer.from(match[1]!, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon <= 0 || colon === decoded.length - 1) return undefined;
  const publicKey = decoded.slice(0, colon);
  const secretKey = decoded.slice(colon + 1);
  if (publicKey.length > 64 || secretKey.length > 256) return undefined;
  return { publicKey, secretKey };
}
