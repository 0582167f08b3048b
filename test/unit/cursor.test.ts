import { CursorCodec, type CursorBinding } from '../../src/api/cursor';
import { AppError } from '../../src/errors';

describe('list cursors', () => {
  const codec = new CursorCodec('a-cursor-secret-of-at-least-32-characters');
  const binding: CursorBinding = {
    list: 'payments',
    merchantId: 'mer_01J00000000000000000000000',
    environment: 'test',
    filters: { status: 'succeeded', externalId: undefined },
  };
  const position = { createdAt: new Date('2026-11-22T01:27:32.384Z'), id: 'pay_01J0000000000000000000000A' };

  function refused(fn: () => unknown): AppError {
    try {
      fn();
    } catch (err) {
      expect(err).toBeInstanceOf(AppError);
      return err as AppError;
    }
    throw new Error('not refused');
  }

  it('round-trips a position for the same list, caller and filters', () => {
    const cursor = codec.encode(position, binding);
    expect(codec.decode(cursor, binding)).toEqual(position);
    // Absent filters and their order do not matter.
    expect(codec.decode(cursor, { ...binding, filters: { status: 'succeeded' } })).toEqual(position);
    expect(new CursorCodec('a-cursor-secret-of-at-least-32-characters').decode(cursor, binding)).toEqual(position);
  });

  it.each<[string, Partial<CursorBinding>]>([
    ['another list', { list: 'subscriptions' }],
    ['another merchant', { merchantId: 'mer_01J00000000000000000000001' }],
    ['another environment', { environment: 'live' }],
    ['another parent', { parentId: 'sub_01J0000000000000000000000A' }],
    ['other filters', { filters: { status: 'failed' } }],
    ['no filters', { filters: {} }],
  ])('is refused for %s', (_name, change) => {
    const cursor = codec.encode(position, binding);
    const err = refused(() => codec.decode(cursor, { ...binding, ...change }));
    expect(err).toMatchObject({ status: 400, code: 'validation_error' });
    expect(err.details).toEqual({ issues: [expect.objectContaining({ path: 'cursor', code: 'invalid_cursor' })] });
  });

  it('is refused under another secret', () => {
    const cursor = new CursorCodec('another-cursor-secret-of-32-characters!').encode(position, binding);
    refused(() => codec.decode(cursor, binding));
  });

  it('does not show its position in clear', () => {
    const cursor = codec.encode(position, binding);
    expect(cursor).not.toContain('pay_');
    expect(cursor).not.toContain('2026');
  });
});
