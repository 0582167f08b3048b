import type { EntityManager } from '@mikro-orm/postgresql';
import type { Logger } from '../logger';
import type { KeyEnvironment, KeyRole, MerchantStatus } from '../db/entities';
import { errors } from '../errors';
import type { Caller } from '../api/context';
import { parseBasicAuthorization, secretMatches } from './secrets';

interface KeyRecord {
  apiKeyId: string;
  merchantId: string;
  secretHash: string;
  environment: KeyEnvironment;
  role: KeyRole;
  isActive: boolean;
  merchantStatus: MerchantStatus;
}

interface CacheEntry {
  record: KeyRecord | null;
  expiresAt: number;
}

const MAX_CACHE_ENTRIES = 10_000;
/**
 * Public keys found unknown are remembered as such this long (never longer than the key cache
 * TTL), so a client repeating a missing or deleted key does not cost a query per request. The
 * map is bounded: a flood of distinct random keys evicts the oldest and costs memory no more.
 */
const UNKNOWN_KEY_TTL_MS = 1000;
const MAX_UNKNOWN_ENTRIES = 10_000;
const LAST_USED_WRITE_INTERVAL_MS = 60_000;
// Compared against when the public key is unknown, so that path costs the same hash work.
const UNKNOWN_KEY_HASH = '0'.repeat(64);

/**
 * Verifies `Authorization: Basic pk:sk`. Key rows are cached for at most the configured TTL
 * (<= 5 s), so a key revoked or a merchant deactivated by the CLI is refused everywhere
 * within that time. The secret is checked against the hash on every request, in constant time.
 */
export class Authenticator {
  private readonly cache = new Map<string, CacheEntry>();
  /** Public key -> when it stops being known as unknown. */
  private readonly unknown = new Map<string, number>();
  private readonly lastUsedWritten = new Map<string, number>();

  constructor(
    private readonly em: EntityManager,
    private readonly ttlMs: number,
    private readonly log: Logger,
  ) {}

  async authenticate(header: string | undefined): Promise<Caller> {
    const credentials = parseBasicAuthorization(header);
    if (!credentials) throw errors.unauthorized();
    // A cached key is answered without a query (and without an await: most requests).
    const known = this.cached(credentials.publicKey);
    const record = known === undefined ? await this.lookup(credentials.publicKey) : known;
    const matches = secretMatches(credentials.secretKey, record?.secretHash ?? UNKNOWN_KEY_HASH);
    if (!record || !matches || !record.isActive) throw errors.unauthorized();
    if (record.role !== 'merchant') throw errors.forbidden();
    if (record.merchantStatus !== 'active') throw errors.merchantInactive();
    this.touch(record.apiKeyId);
    return {
      merchantId: record.merchantId,
      apiKeyId: record.apiKeyId,
      environment: record.environment,
      role: record.role,
    };
  }

  /** Forget a key at once (used when this process itself revokes or deactivates). */
  invalidate(publicKey?: string): void {
    if (publicKey === undefined) {
      this.cache.clear();
      this.unknown.clear();
    } else {
      this.cache.delete(publicKey);
      this.unknown.delete(publicKey);
    }
  }

  /** The key as cached (null: known unknown); undefined when it must be read. */
  private cached(publicKey: string): KeyRecord | null | undefined {
    const now = Date.now();
    const hit = this.cache.get(publicKey);
    if (hit && hit.expiresAt > now) return hit.record;
    const unknownUntil = this.unknown.get(publicKey);
    if (unknownUntil !== undefined) {
      if (unknownUntil > now) return null;
      this.unknown.delete(publicKey);
    }
    return undefined;
  }

  private async lookup(publicKey: string): Promise<KeyRecord | null> {
    const now = Date.now();
    const rows: Array<Record<string, unknown>> = await this.em.getConnection().execute(
      `select k.id, k.merchant_id, k.secret_hash, k.environment, k.role, k.is_active, m.status
         from api_keys k join merchants m on m.id = k.merchant_id
        where k.public_key = ?`,
      [publicKey],
    );
    const row = rows[0];
    const record: KeyRecord | null = row
      ? {
          apiKeyId: row.id as string,
          merchantId: row.merchant_id as string,
          secretHash: row.secret_hash as string,
          environment: row.environment as KeyEnvironment,
          role: row.role as KeyRole,
          isActive: row.is_active as boolean,
          merchantStatus: row.status as MerchantStatus,
        }
      : null;
    const unknownTtlMs = Math.min(UNKNOWN_KEY_TTL_MS, this.ttlMs);
    if (record && this.ttlMs > 0) {
      if (this.cache.size >= MAX_CACHE_ENTRIES) this.cache.delete(this.cache.keys().next().value!);
      this.cache.set(publicKey, { record, expiresAt: now + this.ttlMs });
    } else if (!record && unknownTtlMs > 0) {
      // Oldest first (insertion order): a full map drops the entry closest to expiry.
      if (this.unknown.size >= MAX_UNKNOWN_ENTRIES) this.unknown.delete(this.unknown.keys().next().value!);
      this.unknown.set(publicKey, now + unknownTtlMs);
    }
    return record;
  }

  /** Records last use at most once a minute per key, off the request path. */
  private touch(apiKeyId: string): void {
    const now = Date.now();
    const last = this.lastUsedWritten.get(apiKeyId) ?? 0;
    if (now - last < LAST_USED_WRITE_INTERVAL_MS) return;
    this.lastUsedWritten.set(apiKeyId, now);
    if (this.lastUsedWritten.size > MAX_CACHE_ENTRIES) this.lastUsedWritten.clear();
    this.em
      .getConnection()
      .execute('update api_keys set last_used_at = ? where id = ?', [new Date(now), apiKeyId])
      .catch((err: unknown) => this.log.warn({ err, apiKeyId }, 'could not record key use'));
  }
}
