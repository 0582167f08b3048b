import { ConnectionException, DriverException, UniqueConstraintViolationException } from '@mikro-orm/postgresql';
import { DatabaseError } from 'pg';
import {
  databaseErrorSummary,
  databaseUnavailability,
  isDatabaseUnavailable,
  markConnectionFailure,
  markPoolWaitFailure,
} from '../../src/db/dbErrors';

const serverError = (code: string) => Object.assign(new DatabaseError('server said no', 0, 'error'), { code });
const socketError = (code: string) => Object.assign(new Error('socket'), { code, syscall: 'connect' });

describe('isDatabaseUnavailable (by type and code, never by message)', () => {
  it.each(['57P01', '57P02', '57P03', '08006', '08001', '53300', '53000'])('pg DatabaseError %s', (code) => {
    expect(isDatabaseUnavailable(serverError(code))).toBe(true);
    // MikroORM's wrapper copies the code.
    expect(isDatabaseUnavailable(new DriverException(serverError(code)))).toBe(true);
  });

  it.each(['23505', '40001', '42P01', '22P02', '57014'])('not a server error of another class: %s', (code) => {
    expect(isDatabaseUnavailable(serverError(code))).toBe(false);
    expect(isDatabaseUnavailable(new DriverException(serverError(code)))).toBe(false);
  });

  it.each(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EAI_AGAIN'])(
    'a socket error %s passed on by the driver (wrapped by MikroORM)',
    (code) => {
      expect(isDatabaseUnavailable(new DriverException(socketError(code)))).toBe(true);
    },
  );

  it("a socket error from elsewhere (e.g. an HTTP client's) is not the database's", () => {
    expect(isDatabaseUnavailable(socketError('ECONNREFUSED'))).toBe(false);
    expect(isDatabaseUnavailable(new TypeError('fetch failed', { cause: socketError('ECONNREFUSED') }))).toBe(false);
  });

  it("the pool's wait timeout (as orm.ts marks it) and MikroORM's ConnectionException, bare or as a cause", () => {
    const poolTimeout = new Error('timeout exceeded when trying to connect');
    expect(isDatabaseUnavailable(poolTimeout)).toBe(false);
    markPoolWaitFailure(poolTimeout);
    expect(isDatabaseUnavailable(poolTimeout)).toBe(true);
    expect(databaseErrorSummary(poolTimeout)).toEqual({ class: 'pool_timeout', errorType: 'Error' });
    expect(isDatabaseUnavailable(new ConnectionException(new Error('x')))).toBe(true);
    const wrapped = new DriverException(new Error('x'));
    wrapped.cause = poolTimeout;
    expect(isDatabaseUnavailable(wrapped)).toBe(true);
    expect(isDatabaseUnavailable(new AggregateError([new Error('a'), serverError('57P03')]))).toBe(true);
  });

  it('a bare Error counts only when the pool or the pg client marked it as a connection failure', () => {
    const lost = new Error('Connection terminated unexpectedly');
    expect(isDatabaseUnavailable(lost)).toBe(false);
    markConnectionFailure(lost);
    expect(isDatabaseUnavailable(lost)).toBe(true);
    expect(isDatabaseUnavailable(Object.assign(new Error('outer'), { cause: lost }))).toBe(true);
  });

  it('bugs stay bugs: a constraint violation, a plain error, non-errors', () => {
    expect(isDatabaseUnavailable(new UniqueConstraintViolationException(serverError('23505')))).toBe(false);
    expect(isDatabaseUnavailable(new Error('the database system is starting up'))).toBe(false);
    for (const v of [undefined, null, 'ECONNREFUSED', 57, { code: '57P01' }])
      expect(isDatabaseUnavailable(v)).toBe(false);
  });

  it('reports class and code only, and survives a cause cycle', () => {
    const a = new Error('a') as Error & { cause?: unknown };
    const b = new Error('b', { cause: a });
    a.cause = b;
    expect(isDatabaseUnavailable(a)).toBe(false);
    expect(databaseUnavailability(new DriverException(serverError('57P03')))).toEqual({
      errorClass: 'DriverException',
      code: '57P03',
    });
  });
});
