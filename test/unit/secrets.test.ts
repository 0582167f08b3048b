import { createHash } from 'node:crypto';
import { generateKey, hashSecret, parseBasicAuthorization, secretMatches } from '../../src/auth/secrets';
import { isId, newId, ulid } from '../../src/ids';
import { decodeTime } from 'ulid';

describe('API key material', () => {
  it('generates prefixed keys with 32 random bytes of secret and a SHA-256 hash', () => {
    const a = generateKey('test');
    const b = generateKey('live');
    expect(a.publicKey).toMatch(/^pk_test_[A-Za-z0-9_-]{24}$/);
    expect(b.secretKey).toMatch(/^sk_live_[A-Za-z0-9_-]{43}$/);
    expect(Buffer.from(a.secretKey.slice('sk_test_'.length), 'base64url')).toHaveLength(32);
    expect(a.secretHash).toBe(createHash('sha256').update(a.secretKey).digest('hex'));
    expect(a.secretKey).not.toBe(generateKey('test').secretKey);
  });

  it('matches only the exact secret', () => {
    const key = generateKey('test');
    expect(secretMatches(key.secretKey, key.secretHash)).toBe(true);
    expect(secretMatches(`${key.secretKey} `, key.secretHash)).toBe(false);
    expect(secretMatches('', key.secretHash)).toBe(false);
    expect(secretMatches(key.secretKey, hashSecret('other'))).toBe(false);
    expect(secretMatches(key.secretKey, 'not-hex')).toBe(false);
  });

  it.each([
    [undefined, undefined],
    ['', undefined],
    ['Bearer x', undefined],
    ['Basic', undefined],
    [`Basic ${Buffer.from('pk').toString('base64')}`, undefined],
    [`Basic ${Buffer.from(':sk').toString('base64')}`, undefined],
    [`Basic ${Buffer.from('pk:').toString('base64')}`, undefined],
    [`Basic ${Buffer.from('pk:sk:with:colons').toString('base64')}`, { publicKey: 'pk', secretKey: 'sk:with:colons' }],
    [`basic ${Buffer.from('pk:sk').toString('base64')}`, { publicKey: 'pk', secretKey: 'sk' }],
  ])('parses %p', (header, expected) => {
    expect(parseBasicAuthorization(header)).toEqual(expected);
  });
});

describe('ids', () => {
  it('are prefixed ULIDs, recognised per kind', () => {
    const id = newId('payment');
    expect(id).toMatch(/^pay_[0-9A-HJKMNP-TV-Z]{26}$/);
    expect(isId('payment', id)).toBe(true);
    expect(isId('refund', id)).toBe(false);
    expect(isId('payment', `${id}x`)).toBe(false);
    expect(isId('payment', "pay_' or 1=1 --")).toBe(false);
  });
});

describe('ulid', () => {
  it('encodes the time in its first 10 characters and is unique', () => {
    const now = Date.now();
    const id = ulid(now);
    expect(id).toMatch(/^[0-9A-HJKMNP-TV-Z]{26}$/);
    expect(decodeTime(id)).toBe(now);
    const many = new Set(Array.from({ length: 5000 }, () => ulid(now)));
    expect(many.size).toBe(5000);
  });
});
