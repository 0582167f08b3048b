import { randomFillSync } from 'node:crypto';

/** Record id prefixes (PRODUCT.md): sortable ULIDs behind a type prefix. */
export const ID_PREFIXES = {
  merchant: 'mer',
  apiKey: 'key',
  payment: 'pay',
  refund: 're',
  dispute: 'dp',
  subscription: 'sub',
  phase: 'ph',
  invoice: 'inv',
  event: 'evt',
  eventDelivery: 'evd',
  email: 'eml',
  request: 'req',
  webhookEndpoint: 'we',
  customer: 'cus',
  paymentMethod: 'pm',
  testClock: 'clk',
} as const;

export type IdKind = keyof typeof ID_PREFIXES;

const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';
const ULID_PATTERN = '[0-9A-HJKMNP-TV-Z]{26}';
const patterns = Object.fromEntries(
  Object.entries(ID_PREFIXES).map(([kind, prefix]) => [kind, new RegExp(`^${prefix}_${ULID_PATTERN}$`)]),
) as Record<IdKind, RegExp>;

// Random bytes are drawn from the CSPRNG in blocks: one system call per 409 ids, not per id.
const pool = Buffer.alloc(4096);
let poolOffset = pool.length;

function randomChunk(bytes: number): Buffer {
  if (poolOffset + bytes > pool.length) {
    randomFillSync(pool);
    poolOffset = 0;
  }
  const chunk = pool.subarray(poolOffset, poolOffset + bytes);
  poolOffset += bytes;
  return chunk;
}

/** `n` base-32 characters of an integer below 2^(5n) (n <= 10 keeps it a safe integer). */
function base32(value: number, n: number): string {
  let out = '';
  for (let i = 0; i < n; i++) {
    out = CROCKFORD[value % 32]! + out;
    value = Math.floor(value / 32);
  }
  return out;
}

/**
 * A ULID: 48 bits of milliseconds, then 80 random bits. Not monotonic within a millisecond on
 * purpose: a monotonic ULID would make ids minted together predictable from each other.
 */
export function ulid(now = Date.now()): string {
  const r = randomChunk(10);
  const hi = r.readUIntBE(0, 5);
  const lo = r.readUIntBE(5, 5);
  return base32(now, 10) + base32(hi, 8) + base32(lo, 8);
}

export function newId(kind: IdKind): string {
  return `${ID_PREFIXES[kind]}_${ulid()}`;
}

/** A malformed id in a path is answered as not found, so check before touching the database. */
export function isId(kind: IdKind, value: string): boolean {
  return patterns[kind].test(value);
}
