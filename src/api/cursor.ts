import { createHmac, timingSafeEqual } from 'node:crypto';
import { errors } from '../errors';

/**
 * The opaque cursors of the lists (PRODUCT.md, "Lists"): a position in a list ordered by
 * (createdAt, id) descending, signed so that a tampered or garbled cursor is refused (400).
 *
 * Format: `<payload>.<mac>`, both base64url. The payload is `{ v: 1, t: createdAt in epoch ms,
 * i: id }` (created_at columns have millisecond precision, so `t` is exact). The MAC is
 * HMAC-SHA256, truncated to 128 bits, over the payload AND the list it belongs to: its kind, the
 * caller's merchant and environment, the parent record (a subscription's invoices) and the
 * filters. A cursor of another list, merchant, environment or filter set is therefore refused
 * like a tampered one, instead of silently paging something else.
 *
 * The key is derived from CURSOR_SECRET (src/config.ts); every API process must share it, or
 * a cursor minted by one process is refused by another.
 */

export interface CursorPosition {
  createdAt: Date;
  id: string;
}

/** What a cursor is bound to: the same list, seen by the same caller, with the same filters. */
export interface CursorBinding {
  list: string;
  merchantId: string;
  environment: string;
  /** The parent record of a nested list (a subscription's invoices); '' otherwise. */
  parentId?: string;
  /** Filter name -> value as received (absent filters omitted). */
  filters?: Record<string, string | undefined>;
}

const VERSION = 1;
const MAC_BYTES = 16;
/** Longer than any cursor this module makes; a longer one is refused before any work. */
export const MAX_CURSOR_LENGTH = 512;
const BASE64URL = /^[A-Za-z0-9_-]+$/;
const ID = /^[a-z]{2,4}_[0-9A-HJKMNP-TV-Z]{26}$/;

export class CursorCodec {
  private readonly key: Buffer;

  constructor(secret: string) {
    // A key of its own for cursors: the secret could sign other things later without a cursor
    // ever being valid as one of them.
    this.key = createHmac('sha256', secret).update('payment-platform list cursor v1').digest();
  }

  encode(position: CursorPosition, binding: CursorBinding): string {
    const payload = Buffer.from(
      JSON.stringify({ v: VERSION, t: position.createdAt.getTime(), i: position.id }),
      'utf8',
    ).toString('base64url');
    return `${payload}.${this.mac(payload, binding).toString('base64url')}`;
  }

  /** The position a cursor names; a 400 `validation_error` (path `cursor`) when it is not one of ours for this list. */
  decode(cursor: string, binding: CursorBinding): CursorPosition {
    const refuse = (why: string) =>
      errors.validation(`Invalid request query: cursor: ${why}`, {
        issues: [{ path: 'cursor', code: 'invalid_cursor', message: why }],
      });
    const generic = 'not a cursor of this list (tampered with, truncated, or from another list or filter set).';
    if (cursor.length > MAX_CURSOR_LENGTH) throw refuse(generic);
    const parts = cursor.split('.');
    if (parts.length !== 2 || !parts.every((p) => BASE64URL.test(p))) throw refuse(generic);
    const [payload, macText] = parts as [string, string];
    const given = Buffer.from(macText, 'base64url');
    const expected = this.mac(payload, binding);
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) throw refuse(generic);
    let parsed: unknown;
    try {
      parsed = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
    } catch {
      throw refuse(generic);
    }
    const { v, t, i } = (parsed ?? {}) as { v?: unknown; t?: unknown; i?: unknown };
    // Signed by us, so only a cursor of another version lands here.
    if (v !== VERSION || !Number.isSafeInteger(t) || typeof i !== 'string' || !ID.test(i)) {
      throw refuse('a cursor of an unsupported version; start again without a cursor.');
    }
    return { createdAt: new Date(t as number), id: i };
  }

  private mac(payload: string, binding: CursorBinding): Buffer {
    const filters = Object.entries(binding.filters ?? {})
      .filter((entry): entry is [string, string] => entry[1] !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    // JSON keeps the parts apart: no value can be made to read as another part.
    const bound = JSON.stringify([
      binding.list,
      binding.merchantId,
      binding.environment,
      binding.parentId ?? '',
      filters,
      payload,
    ]);
    return createHmac('sha256', this.key).update(bound).digest().subarray(0, MAC_BYTES);
  }
}
