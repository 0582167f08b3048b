import { ulid } from 'ulid';

/** Record id prefixes (PRODUCT.md): sortable ULIDs behind a type prefix. */
export const ID_PREFIXES = {
  merchant: 'mer',
  apiKey: 'key',
  payment: 'pay',
  refund: 're',
  subscription: 'sub',
  phase: 'ph',
  invoice: 'inv',
  event: 'evt',
  request: 'req',
} as const;

export type IdKind = keyof typeof ID_PREFIXES;

// Plain (not monotonic) ULIDs: a monotonic factory would make ids minted in the same
// millisecond guessable from each other.
const nextUlid = ulid;
const ULID_PATTERN = '[0-9A-HJKMNP-TV-Z]{26}';
const patterns = Object.fromEntries(
  Object.entries(ID_PREFIXES).map(([kind, prefix]) => [kind, new RegExp(`^${prefix}_${ULID_PATTERN}$`)]),
) as Record<IdKind, RegExp>;

export function newId(kind: IdKind): string {
  return `${ID_PREFIXES[kind]}_${nextUlid()}`;
}

/** A malformed id in a path is answered as not found, so check before touching the database. */
export function isId(kind: IdKind, value: string): boolean {
  return patterns[kind].test(value);
}
