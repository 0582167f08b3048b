/**
 * Exact money for the sandbox: JSON carries major units, the sandbox computes in integer
 * minor units with the currency's ISO 4217 exponent. Deliberately its own table, not
 * src/rules/money.ts: the sandbox stands in for another company's system, so a bug in our
 * converter shows up as a disagreement instead of being shared.
 */
const ZERO_DECIMAL = new Set([
  'JPY',
  'KRW',
  'VND',
  'CLP',
  'ISK',
  'UGX',
  'XAF',
  'XOF',
  'XPF',
  'PYG',
  'RWF',
  'KMF',
  'GNF',
  'DJF',
  'VUV',
  'BIF',
]);
const THREE_DECIMAL = new Set(['BHD', 'IQD', 'JOD', 'KWD', 'LYD', 'OMR', 'TND']);

export function currencyExponent(currency: string): number {
  if (ZERO_DECIMAL.has(currency)) return 0;
  if (THREE_DECIMAL.has(currency)) return 3;
  return 2;
}

/**
 * Major units (a JSON number) to integer minor units; `undefined` when the number has more
 * decimals than the currency allows or is out of the exactly representable range.
 */
export function toMinor(amount: number, currency: string): number | undefined {
  if (!Number.isFinite(amount) || amount < 0) return undefined;
  const factor = 10 ** currencyExponent(currency);
  const minor = Math.round(amount * factor);
  if (!Number.isSafeInteger(minor)) return undefined;
  // Dividing two exact integers rounds to the double nearest the decimal, i.e. what the
  // caller's decimal literal parsed to: equality means no decimals were lost.
  return minor / factor === amount ? minor : undefined;
}

export function toMajor(minor: number, currency: string): number {
  return minor / 10 ** currencyExponent(currency);
}

/** `1234` USD -> `"12.34"`, from the integer, without floating point formatting. */
export function formatMinor(minor: number, currency: string): string {
  const exp = currencyExponent(currency);
  if (exp === 0) return String(minor);
  const digits = String(minor).padStart(exp + 1, '0');
  return `${digits.slice(0, -exp)}.${digits.slice(-exp)}`;
}
