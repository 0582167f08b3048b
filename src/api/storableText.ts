/**
 * Text PostgreSQL can store and give back unchanged. Two kinds of JavaScript string cannot be:
 * one holding U+0000 (text and jsonb both refuse it, an error at insert time), and one holding a
 * lone UTF-16 surrogate (it has no UTF-8 form: the driver would send U+FFFD instead, and the
 * record would come back altered). Request input is checked against this once, before any
 * schema, so no route has to think about it.
 */

export type TextProblem = 'nul' | 'lone_surrogate' | 'invalid_utf8';

/** One unstorable string: where it is, and whether it is a field name (`key`) or a value. */
export interface UnstorableText {
  path: (string | number)[];
  in: 'key' | 'value';
  problem: TextProblem;
}

/** At most this many findings per request: enough to name each bad field, bounded for 1 MB bodies. */
export const MAX_TEXT_FINDINGS = 20;

// Without the `u` flag a regex sees UTF-16 code units, so a surrogate without its partner matches.
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

export function textProblem(text: string): TextProblem | undefined {
  if (text.includes('\u0000')) return 'nul';
  if (LONE_SURROGATE.test(text)) return 'lone_surrogate';
  return undefined;
}

/** A path as a chain to its parent: extending it is O(1), whatever the depth. */
interface PathLink {
  parent: PathLink | undefined;
  key: string | number;
}

function pathOf(link: PathLink | undefined): (string | number)[] {
  const path: (string | number)[] = [];
  for (let at = link; at; at = at.parent) path.push(at.key);
  return path.reverse();
}

type Pending =
  { kind: 'value'; value: unknown; at: PathLink | undefined } | { kind: 'key'; problem: TextProblem; at: PathLink };

/**
 * Every unstorable string in a parsed JSON value, keys included, at any depth, in document order.
 * Iterative and linear in the size of the value, so a deeply nested body cannot exhaust the stack.
 */
export function findUnstorableText(value: unknown, limit = MAX_TEXT_FINDINGS): UnstorableText[] {
  const found: UnstorableText[] = [];
  const pending: Pending[] = [{ kind: 'value', value, at: undefined }];
  while (pending.length > 0 && found.length < limit) {
    const next = pending.pop()!;
    if (next.kind === 'key') {
      found.push({ path: pathOf(next.at), in: 'key', problem: next.problem });
    } else if (typeof next.value === 'string') {
      const problem = textProblem(next.value);
      if (problem) found.push({ path: pathOf(next.at), in: 'value', problem });
    } else if (Array.isArray(next.value)) {
      // Pushed in reverse so findings come out in document order.
      for (let i = next.value.length - 1; i >= 0; i--) {
        pending.push({ kind: 'value', value: next.value[i], at: { parent: next.at, key: i } });
      }
    } else if (next.value !== null && typeof next.value === 'object') {
      const entries = Object.entries(next.value as Record<string, unknown>);
      for (let i = entries.length - 1; i >= 0; i--) {
        const [key, child] = entries[i]!;
        const at = { parent: next.at, key };
        pending.push({ kind: 'value', value: child, at });
        // Popped first: a bad key is reported just before anything inside its value.
        const problem = textProblem(key);
        if (problem) pending.push({ kind: 'key', problem, at });
      }
    }
  }
  return found;
}

const strictUtf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/** Decodes UTF-8 bytes, or undefined when they are not valid UTF-8 (never U+FFFD replacement). */
export function decodeUtf8Strictly(bytes: Uint8Array): string | undefined {
  try {
    return strictUtf8.decode(bytes);
  } catch {
    return undefined;
  }
}

/**
 * The unstorable parameters of a raw query string, decoded as `querystring.parse` (what Koa's
 * `ctx.query` is) does: `&` and the first `=` split, `+` is a space, `%XX` a byte; but where it
 * would turn bytes that are not UTF-8 into U+FFFD, this reports `invalid_utf8` on the parameter.
 */
export function findUnstorableQueryText(querystring: string, limit = MAX_TEXT_FINDINGS): UnstorableText[] {
  const found: UnstorableText[] = [];
  for (const pair of querystring.split('&')) {
    if (found.length >= limit) break;
    if (pair === '') continue;
    const eq = pair.indexOf('=');
    const rawKey = eq === -1 ? pair : pair.slice(0, eq);
    const rawValue = eq === -1 ? '' : pair.slice(eq + 1);
    const key = decodeQueryComponent(rawKey);
    const value = decodeQueryComponent(rawValue);
    // A key that does not decode is named as sent, still percent-encoded.
    const path = [key ?? rawKey];
    const keyProblem = key === undefined ? 'invalid_utf8' : textProblem(key);
    if (keyProblem) found.push({ path, in: 'key', problem: keyProblem });
    const valueProblem = value === undefined ? 'invalid_utf8' : textProblem(value);
    if (valueProblem && found.length < limit) found.push({ path, in: 'value', problem: valueProblem });
  }
  return found;
}

function decodeQueryComponent(raw: string): string | undefined {
  const text = raw.replace(/\+/g, ' ');
  // Runs of %XX escapes are bytes, decoded strictly; anything else (a stray `%` included, as
  // querystring leaves it) stands for itself and is checked later like any other text.
  let invalid = false;
  const decoded = text.replace(/(?:%[0-9a-fA-F]{2})+/g, (run) => {
    const bytes = Uint8Array.from(run.slice(1).split('%'), (hex) => parseInt(hex, 16));
    const part = decodeUtf8Strictly(bytes);
    if (part === undefined) invalid = true;
    return part ?? '';
  });
  return invalid ? undefined : decoded;
}
