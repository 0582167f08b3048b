import {
  decodeUtf8Strictly,
  findUnstorableQueryText,
  findUnstorableText,
  MAX_TEXT_FINDINGS,
  textProblem,
} from '../../src/api/storableText';

describe('storable text', () => {
  it.each([
    ['plain ASCII', 'hello'],
    ['empty', ''],
    ['an emoji (a surrogate pair)', 'paid 💳 ok'],
    ['an astral CJK ideograph', '𠮷野家'],
    ['a family emoji with ZWJs', '👨‍👩‍👧'],
    ['combining marks', 'e\u0301 a\u0308'],
    ['U+FFFD itself, sent on purpose', '\uFFFD'],
    ['other control characters', '\u0001\t\n\u007f'],
  ])('%s is storable', (_label, text) => {
    expect(textProblem(text)).toBeUndefined();
  });

  it.each([
    ['a NUL', 'a\u0000b', 'nul'],
    ['a lone high surrogate', 'a\uD800b', 'lone_surrogate'],
    ['a lone high surrogate at the end', 'a\uD83D', 'lone_surrogate'],
    ['a lone low surrogate', '\uDC00', 'lone_surrogate'],
    ['a low before a high surrogate', '\uDE00\uD83D', 'lone_surrogate'],
    ['two high surrogates', '\uD83D\uD83D\uDE00', 'lone_surrogate'],
  ])('%s is not', (_label, text, problem) => {
    expect(textProblem(text)).toBe(problem);
  });

  it('walks a JSON value: values and keys at any depth, in document order', () => {
    const body = {
      ok: 'fine',
      description: 'x\u0000',
      metadata: { 'k\u0000': 'v', good: '\uDC00' },
      billing: { address: { lines: ['1 Main St', 'flat \u0000'] }, 'bad\uD800': { inner: '\u0000' } },
      phases: [{ name: 'fine' }, { name: '\uD800' }],
      n: 1,
      t: true,
      z: null,
    };
    expect(findUnstorableText(body)).toEqual([
      { path: ['description'], in: 'value', problem: 'nul' },
      { path: ['metadata', 'k\u0000'], in: 'key', problem: 'nul' },
      { path: ['metadata', 'good'], in: 'value', problem: 'lone_surrogate' },
      { path: ['billing', 'address', 'lines', 1], in: 'value', problem: 'nul' },
      { path: ['billing', 'bad\uD800'], in: 'key', problem: 'lone_surrogate' },
      { path: ['billing', 'bad\uD800', 'inner'], in: 'value', problem: 'nul' },
      { path: ['phases', 1, 'name'], in: 'value', problem: 'lone_surrogate' },
    ]);
    expect(findUnstorableText('\u0000')).toEqual([{ path: [], in: 'value', problem: 'nul' }]);
    expect(findUnstorableText(undefined)).toEqual([]);
  });

  it('stops at the limit and survives a deeply nested value', () => {
    expect(findUnstorableText(Array(100).fill('\u0000'))).toHaveLength(MAX_TEXT_FINDINGS);
    let deep: unknown = '\u0000';
    for (let i = 0; i < 100_000; i++) deep = [deep];
    expect(findUnstorableText(deep)).toEqual([{ path: Array(100_000).fill(0), in: 'value', problem: 'nul' }]);
  });

  it('decodes UTF-8 strictly: no U+FFFD replacement', () => {
    expect(decodeUtf8Strictly(Buffer.from('ok 💳 é', 'utf8'))).toBe('ok 💳 é');
    expect(decodeUtf8Strictly(Buffer.from([0x22, 0xff, 0x22]))).toBeUndefined();
    // A surrogate encoded as UTF-8 (CESU) and a truncated sequence are not UTF-8 either.
    expect(decodeUtf8Strictly(Buffer.from([0xed, 0xa0, 0x80]))).toBeUndefined();
    expect(decodeUtf8Strictly(Buffer.from([0xe2, 0x82]))).toBeUndefined();
    // A BOM is kept, so JSON.parse refuses it as before.
    expect(decodeUtf8Strictly(Buffer.from([0xef, 0xbb, 0xbf, 0x7b, 0x7d]))).toBe('\uFEFF{}');
  });

  it('checks query parameters as querystring decodes them', () => {
    expect(findUnstorableQueryText('')).toEqual([]);
    expect(findUnstorableQueryText('reason=too+expensive%20%F0%9F%92%B3&notify=false&flag')).toEqual([]);
    // A stray % is literal for querystring, not an error.
    expect(findUnstorableQueryText('reason=100%&x=%zz')).toEqual([]);
    expect(findUnstorableQueryText('reason=%00')).toEqual([{ path: ['reason'], in: 'value', problem: 'nul' }]);
    expect(findUnstorableQueryText('notify=true&reason=a%FFb')).toEqual([
      { path: ['reason'], in: 'value', problem: 'invalid_utf8' },
    ]);
    expect(findUnstorableQueryText('reason=%ED%A0%80')).toEqual([
      { path: ['reason'], in: 'value', problem: 'invalid_utf8' },
    ]);
    expect(findUnstorableQueryText('re%00son=x')).toEqual([{ path: ['re\u0000son'], in: 'key', problem: 'nul' }]);
    expect(findUnstorableQueryText('re%C3son=%00')).toEqual([
      { path: ['re%C3son'], in: 'key', problem: 'invalid_utf8' },
      { path: ['re%C3son'], in: 'value', problem: 'nul' },
    ]);
  });
});
