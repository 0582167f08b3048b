import { sign, signAll, verify } from '../../src/providers/signature';

/** `X-Signature` (PRODUCT.md, "Events to merchants"): one `v1` per secret during a rotation. */
describe('signatures with several v1', () => {
  const body = '{"id":"evt_1"}';
  const t = 1_800_000_000;
  const now = t * 1000;

  it('signs with each secret in order, under one timestamp', () => {
    const header = signAll(['new', 'old'], body, t);
    const [stamp, first, second, ...rest] = header.split(',');
    expect(stamp).toBe(`t=${t}`);
    expect(rest).toEqual([]);
    expect(`${stamp},${first}`).toBe(sign('new', body, t));
    expect(`${stamp},${second}`).toBe(sign('old', body, t));
  });

  it('accepts when any v1 matches, and refuses another secret, another body or an old timestamp', () => {
    const header = signAll(['new', 'old'], body, t);
    expect(verify('new', body, header, 300, now)).toBe(true);
    expect(verify('old', body, header, 300, now)).toBe(true);
    expect(verify('other', body, header, 300, now)).toBe(false);
    expect(verify('new', `${body} `, header, 300, now)).toBe(false);
    expect(verify('new', body, header, 300, now + 301_000)).toBe(false);
    expect(verify('new', body, `t=${t}`, 300, now)).toBe(false);
    expect(verify('new', body, `t=${t},v1=nothex,${header.split(',')[1]}`, 300, now)).toBe(true);
  });
});
