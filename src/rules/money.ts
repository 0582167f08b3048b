/**
 * The one place money is converted. Inside the service every amount is an integer number of
 * minor units (cents, yen, fils); the API speaks major units as JSON numbers. Integers up to
 * 1e9 major units at 4 decimals stay far below 2^53, so plain numbers are exact here.
 * Pure: no I/O, safe to import from workflows.
 */

/** ISO 4217 active codes and their minor-unit exponents (funds and metals left out). */
const EXPONENT_0 = 'BIF CLP DJF GNF ISK JPY KMF KRW PYG RWF UGX UYI VND VUV XAF XOF XPF';
const EXPONENT_3 = 'BHD IQD JOD KWD LYD OMR TND';
const EXPONENT_4 = 'CLF UYW';
const EXPONENT_2 =
  'AED AFN ALL AMD ANG AOA ARS AUD AWG AZN BAM BBD BDT BGN BMD BND BOB BOV BRL BSD BTN BWP BYN BZD ' +
  'CAD CDF CHE CHF CHW CNY COP COU CRC CUC CUP CVE CZK DKK DOP DZD EGP ERN ETB EUR FJD FKP GBP GEL ' +
  'GHS GIP GMD GTQ GYD HKD HNL HTG HUF IDR ILS INR IRR JMD KES KGS KHR KPW KYD KZT LAK LBP LKR LRD ' +
  'LSL MAD MDL MGA MKD MMK MNT MOP MRU MUR MVR MWK MXN MXV MYR MZN NAD NGN NIO NOK NPR NZD PAB PEN ' +
  'PGK PHP PKR PLN QAR RON RSD RUB SAR SBD SCR SDG SEK SGD SHP SLE SLL SOS SRD SSP STN SVC SYP SZL ' +
  'THB TJS TMT TOP TRY TTD TWD TZS UAH USD USN UYU UZS VED VES WST XCD XCG YER ZAR ZMW ZWG ZWL';

// eslint-disable-next-line no-restricted-syntax -- constant: read only, never written after load
const EXPONENTS: ReadonlyMap<string, number> = new Map(
  (
    [
      [EXPONENT_0, 0],
      [EXPONENT_2, 2],
      [EXPONENT_3, 3],
      [EXPONENT_4, 4],
    ] as const
  ).flatMap(([codes, exp]) => codes.split(' ').map((code) => [code, exp] as const)),
);

/** Largest amount accepted, in major units (PRODUCT.md). */
export const MAX_MAJOR_AMOUNT = 1_000_000_000;

export function isCurrency(code: string): boolean {
  return EXPONENTS.has(code.toUpperCase());
}

export function currencyExponent(currency: string): number {
  const exp = EXPONENTS.get(currency.toUpperCase());
  if (exp === undefined) throw new Error(`Unknown currency ${currency}`);
  return exp;
}

export type AmountProblem = 'not_finite' | 'not_positive' | 'negative' | 'too_large' | 'too_many_decimals';

export type AmountResult = { ok: true; minor: number } | { ok: false; problem: AmountProblem; message: string };

/**
 * Converts a JSON number in major units to minor units, exactly, through its decimal text:
 * 0.1 is "0.1", so 10 cents, never 0.1000000000000000055... of a float.
 */
export function toMinor(value: number, currency: string, opts: { allowZero?: boolean } = {}): AmountResult {
  const exp = currencyExponent(currency);
  if (!Number.isFinite(value)) return { ok: false, problem: 'not_finite', message: 'Amount must be a finite number.' };
  if (value < 0) return { ok: false, problem: 'negative', message: 'Amount must not be negative.' };
  if (value === 0 && !opts.allowZero)
    return { ok: false, problem: 'not_positive', message: 'Amount must be greater than 0.' };
  if (value > MAX_MAJOR_AMOUNT) {
    return { ok: false, problem: 'too_large', message: `Amount must not exceed ${MAX_MAJOR_AMOUNT}.` };
  }
  const text = String(value);
  const match = /^(\d+)(?:\.(\d+))?$/.exec(text);
  const decimals = match?.[2] ?? '';
  if (!match || decimals.length > exp) {
    const unit = exp === 0 ? 'no decimals' : `at most ${exp} decimal${exp === 1 ? '' : 's'}`;
    return { ok: false, problem: 'too_many_decimals', message: `${currency.toUpperCase()} amounts take ${unit}.` };
  }
  const minor = Number(match[1]) * 10 ** exp + Number(decimals.padEnd(exp, '0') || '0');
  return { ok: true, minor };
}

/** Minor units back to a JSON number in major units (exact: one division of an integer by 10^exp). */
export function toMajor(minor: number, currency: string): number {
  if (!Number.isSafeInteger(minor)) throw new Error(`Minor amount ${minor} is not a safe integer`);
  return minor / 10 ** currencyExponent(currency);
}

/**
 * Minor units as an operator reads them: every decimal of the currency, then its code
 * (`1250, 'eur'` -> `12.50 EUR`, `1200, 'JPY'` -> `1200 JPY`). Integer arithmetic, no float.
 */
export function formatMoney(minor: number, currency: string): string {
  if (!Number.isSafeInteger(minor)) throw new Error(`Minor amount ${minor} is not a safe integer`);
  const exp = currencyExponent(currency);
  const digits = String(Math.abs(minor)).padStart(exp + 1, '0');
  const whole = digits.slice(0, digits.length - exp);
  const fraction = exp > 0 ? `.${digits.slice(digits.length - exp)}` : '';
  return `${minor < 0 ? '-' : ''}${whole}${fraction} ${currency.toUpperCase()}`;
}
