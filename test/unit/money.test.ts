import { currencyExponent, formatMoney, isCurrency, toMajor, toMinor } from '../../src/rules/money';

const minor = (value: number, currency: string) => {
  const r = toMinor(value, currency);
  if (!r.ok) throw new Error(r.message);
  return r.minor;
};

describe('money', () => {
  it('knows currency exponents, in any case', () => {
    expect(currencyExponent('usd')).toBe(2);
    expect(currencyExponent('JPY')).toBe(0);
    expect(currencyExponent('KWD')).toBe(3);
    expect(isCurrency('eur')).toBe(true);
    expect(isCurrency('XXX')).toBe(false);
    expect(isCurrency('US')).toBe(false);
  });

  it.each([
    [12.34, 'USD', 1234],
    [0.1, 'USD', 10],
    [0.01, 'EUR', 1],
    [1200, 'JPY', 1200],
    [1.234, 'KWD', 1234],
    [1_000_000_000, 'USD', 100_000_000_000],
    [19.99, 'GBP', 1999],
    [1.005, 'BHD', 1005],
  ])('%p %s is %p minor units', (value, currency, expected) => {
    expect(minor(value, currency)).toBe(expected);
  });

  it.each([
    [12.345, 'USD', 'too_many_decimals'],
    [1.5, 'JPY', 'too_many_decimals'],
    [1.2345, 'KWD', 'too_many_decimals'],
    [0, 'USD', 'not_positive'],
    [-1, 'USD', 'negative'],
    [Infinity, 'USD', 'not_finite'],
    [NaN, 'USD', 'not_finite'],
    [1_000_000_000.01, 'USD', 'too_large'],
    [1e-7, 'USD', 'too_many_decimals'],
    [0.1 + 0.2, 'USD', 'too_many_decimals'],
  ])('refuses %p %s (%s)', (value, currency, problem) => {
    expect(toMinor(value, currency)).toEqual({ ok: false, problem, message: expect.any(String) });
  });

  it('allows zero only when asked', () => {
    expect(toMinor(0, 'USD', { allowZero: true })).toEqual({ ok: true, minor: 0 });
  });

  it('converts back exactly, and sums never drift', () => {
    expect(toMajor(1234, 'USD')).toBe(12.34);
    expect(toMajor(1200, 'JPY')).toBe(1200);
    expect(toMajor(1234, 'KWD')).toBe(1.234);
    const total = minor(0.3, 'USD');
    const left = total - minor(0.1, 'USD') - minor(0.1, 'USD') - minor(0.1, 'USD');
    expect(left).toBe(0);
    expect(toMajor(left, 'USD')).toBe(0);
    // Every cent amount round-trips.
    for (let cents = 1; cents < 100_000; cents += 7) {
      if (minor(toMajor(cents, 'USD'), 'USD') !== cents) throw new Error(`${cents} does not round-trip`);
    }
  });

  it.each([
    [1250, 'eur', '12.50 EUR'],
    [5, 'USD', '0.05 USD'],
    [0, 'USD', '0.00 USD'],
    [1200, 'JPY', '1200 JPY'],
    [1234, 'KWD', '1.234 KWD'],
    [100_000_000_000, 'USD', '1000000000.00 USD'],
    [-1999, 'GBP', '-19.99 GBP'],
  ])('formats %p %s as %p', (amount, currency, expected) => {
    expect(formatMoney(amount, currency)).toBe(expected);
  });
});
