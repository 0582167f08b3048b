import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import Koa from 'koa';
import type { MikroORM } from '@mikro-orm/postgresql';
import { createTestMerchant, openTestOrm } from '../helpers/stack';
import { paymentRow } from '../helpers/records';
import { createLogger } from '../../src/logger';
import { errorHandler } from '../../src/api/middleware/errorHandler';
import { requestContext } from '../../src/api/middleware/requestContext';
import { errorText } from '../../src/db/dbErrors';
import { temporalSdkLogger } from '../../src/temporal/sdkLogger';
import type { AppState } from '../../src/api/context';

/**
 * PRODUCT.md / issue 10: database errors are logged by class and code, never with the SQL text
 * and its values. Real queries against the real PostgreSQL fail; the log lines are captured
 * from a real pino logger.
 */
const CARD_TOKEN = 'tok_SECRET_4242424242424242';
const EMAIL = 'secret.customer@example.com';
const EXTERNAL_ID = 'ext-SECRET-7f3a9c';

function capturedLogger() {
  const lines: string[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(...chunk.toString('utf8').split('\n').filter(Boolean));
      done();
    },
  });
  return { logger: createLogger('info', 'test', destination), lines, text: () => lines.join('\n') };
}

/** Nothing that identifies a value or the statement: no secret, no SQL keyword, no detail. */
function expectNoSqlOrValues(text: string): void {
  for (const secret of [CARD_TOKEN, EMAIL, EXTERNAL_ID]) expect(text).not.toContain(secret);
  expect(text).not.toMatch(/\binsert into\b|\bselect\b.*\bfrom\b|already exists|Key \(/i);
}

describe('database errors in logs: class and code only', () => {
  let orm: MikroORM;
  let merchantId: string;

  /** Inserts a payment whose externalId already exists: a unique violation carrying the values. */
  const row = { externalId: EXTERNAL_ID, cardToken: CARD_TOKEN, customer: { email: EMAIL } };
  async function duplicatePayment(): Promise<unknown> {
    const again = orm.em.fork();
    paymentRow(again, merchantId, row);
    return again.flush().then(
      () => undefined,
      (err: unknown) => err,
    );
  }

  /** A query PostgreSQL rejects (an unknown column), with a secret among its parameters. */
  async function badQuery(): Promise<unknown> {
    return orm.em
      .fork()
      .getConnection()
      .execute('select id from payments where card_token = ? and no_such_column = 1', [CARD_TOKEN])
      .then(
        () => undefined,
        (err: unknown) => err,
      );
  }

  beforeAll(async () => {
    orm = await openTestOrm();
    merchantId = (await createTestMerchant(orm, 'Db error logs merchant')).merchantId;
    const em = orm.em.fork();
    paymentRow(em, merchantId, row);
    await em.flush();
  });
  afterAll(async () => {
    await orm.close();
  });

  it('the errors themselves do carry the values (what must not reach a log)', async () => {
    const unique = (await duplicatePayment()) as Error & { detail?: string };
    expect(unique).toBeInstanceOf(Error);
    expect(`${unique.message} ${unique.detail ?? ''}`).toContain(EXTERNAL_ID);
    // Under MikroORM 6 (knex) a failed query's message also quoted the SQL with its values; under 7
    // it is PostgreSQL's alone. The log summary does not rely on either.
    const bad = (await badQuery()) as Error;
    expect(bad).toMatchObject({ code: '42703' });
  });

  it('the API catch point logs an unexpected database error by class, code, constraint and table', async () => {
    const { logger, lines, text } = capturedLogger();
    const app = new Koa<AppState>();
    app.use(requestContext(logger));
    app.use(errorHandler());
    app.use(async (ctx) => {
      throw ctx.path === '/unique' ? await duplicatePayment() : await badQuery();
    });
    const server = http.createServer(app.callback());
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      for (const route of ['/unique', '/bad-query']) {
        const res = await fetch(`${base}${route}`);
        expect(res.status).toBe(500);
        expect(((await res.json()) as { code: string }).code).toBe('internal_error');
      }
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
    const errors = lines.map((l) => JSON.parse(l) as { msg: string; err?: unknown }).filter((l) => l.err);
    expect(errors.map((l) => l.err)).toEqual([
      {
        class: 'integrity_constraint_violation',
        code: '23505',
        constraint: 'payments_merchant_external_id_unique',
        table: 'payments',
        errorType: 'UniqueConstraintViolationException',
      },
      expect.objectContaining({ class: 'syntax_error_or_access_rule_violation', code: '42703' }),
    ]);
    expectNoSqlOrValues(text());
  });

  it("the worker's Temporal SDK log of a failed activity shows the class and code only", async () => {
    const { logger, lines, text } = capturedLogger();
    // What the SDK does when an activity throws (@temporalio/worker, "Activity failed").
    const sdk = temporalSdkLogger(logger);
    sdk.warn('Activity failed', { error: await duplicatePayment(), durationMs: 3 });
    sdk.warn('Activity failed', { error: await badQuery(), durationMs: 3 });
    const logged = lines.map((l) => (JSON.parse(l) as { error: unknown }).error);
    expect(logged).toEqual([
      expect.objectContaining({ class: 'integrity_constraint_violation', code: '23505' }),
      expect.objectContaining({ class: 'syntax_error_or_access_rule_violation', code: '42703' }),
    ]);
    expectNoSqlOrValues(text());
  });

  it('an error caused by a database error is logged as the database error', async () => {
    const { logger, text } = capturedLogger();
    logger.error({ err: new Error('could not record key use', { cause: await badQuery() }) }, 'failed');
    expect(text()).toContain('42703');
    expectNoSqlOrValues(text());
  });

  it('the CLI and start-up failures print the same summary', async () => {
    const line = errorText(await duplicatePayment());
    expect(line).toBe(
      'database error integrity_constraint_violation (23505) constraint payments_merchant_external_id_unique table payments',
    );
    expectNoSqlOrValues(errorText(await badQuery(), (e) => e.stack ?? e.message));
  });
});
