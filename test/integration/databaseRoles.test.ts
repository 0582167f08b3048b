import pg from 'pg';
import type { MikroORM } from '@mikro-orm/postgresql';
import { runCli } from '../helpers/cli';
import { call, eventually } from '../helpers/http';
import {
  createTestMerchant,
  openTestOrm,
  SANDBOX_API_KEY,
  SANDBOX_WEBHOOK_SECRET,
  startTestApi,
  startTestWorker,
  testProviders,
  uniqueTaskQueue,
  type TestApi,
  type TestWorker,
} from '../helpers/stack';
import { testStack } from '../setup/stackInfo';
import { createSandbox, type RunningSandbox } from '../../dev/sandbox/server';
import { ensureLoginRole } from '../../dev/infra/embeddedPostgres';
import { migrateStack } from '../../dev/stack/stackParts';

/**
 * Issue 44, item 11 (decision 0086): migrations run as the schema's owner
 * (MIGRATION_DATABASE_URL), the application as a role of its own that reads and writes rows but
 * cannot create, alter, drop or truncate anything; the API and a worker work under it.
 */
describe('the application database role', () => {
  const role = `payments_app_${process.pid}`;
  const password = `pw-${process.pid}-${Date.now()}`;
  let ownerUrl: string;
  let appUrl: string;
  let admin: pg.Client;
  let appOrm: MikroORM | undefined;
  let api: TestApi | undefined;
  let worker: TestWorker | undefined;
  let sandbox: RunningSandbox | undefined;

  beforeAll(async () => {
    ownerUrl = testStack().databaseUrl;
    const url = new URL(ownerUrl);
    url.username = role;
    url.password = password;
    appUrl = url.toString();
    admin = new pg.Client({ connectionString: ownerUrl });
    await admin.connect();
    await admin.query(`create role "${role}" login password '${password}'`);
  });
  afterAll(async () => {
    await worker?.stop();
    await api?.close();
    await sandbox?.close();
    await appOrm?.close();
    await admin.query(`reassign owned by "${role}" to current_user; drop owned by "${role}"; drop role "${role}"`);
    await admin.end();
  });

  it('db:migrate grants the role rows only; the schema stays the owner’s; the product runs under it', async () => {
    const migrated = await runCli(['db:migrate'], { DATABASE_URL: appUrl, MIGRATION_DATABASE_URL: ownerUrl });
    expect(migrated.code).toBe(0);
    expect(migrated.json).toMatchObject({ migrations: expect.any(Array), appRole: role });

    const app = new pg.Client({ connectionString: appUrl });
    await app.connect();
    try {
      const refused = async (sql: string) =>
        app.query(sql).then(
          () => 'allowed',
          (err: { code?: string }) => err.code,
        );
      // 42501 insufficient_privilege; ALTER, DROP and TRUNCATE need the owner.
      expect(await refused('create table app_role_probe (x int)')).toBe('42501');
      expect(await refused('alter table payments add column app_role_probe int')).toBe('42501');
      expect(await refused('drop table refunds')).toBe('42501');
      expect(await refused('truncate merchant_events')).toBe('42501');
      expect(await refused('create index app_role_probe_idx on payments (currency)')).toBe('42501');
      expect((await app.query('select count(*)::int as n from payments')).rows[0]).toEqual({ n: expect.any(Number) });
    } finally {
      await app.end();
    }

    // The API and a worker under the role: a merchant, a token payment captured, its events recorded.
    appOrm = await openTestOrm(appUrl);
    const merchant = await createTestMerchant(appOrm, 'App role merchant');
    sandbox = await createSandbox({ apiKey: SANDBOX_API_KEY, webhookSecret: SANDBOX_WEBHOOK_SECRET }).listen(0);
    const providers = testProviders(appOrm, sandbox.url);
    const taskQueue = uniqueTaskQueue('app-role');
    api = await startTestApi({ orm: appOrm, providers, settings: { taskQueue } });
    worker = await startTestWorker(appOrm, { taskQueue, providers, publicBaseUrl: api.baseUrl });
    const paid = await call(api.baseUrl, 'POST', '/payments', merchant.auth, {
      amount: 42,
      currency: 'USD',
      externalId: `app-role-${Date.now()}`,
      customer: { email: 'c@example.com' },
      cardToken: 'tok_success',
    });
    // A first payment may answer before its outcome (a cold worker): 503 with the payment.
    const paymentId = ((paid.body.details as { payment?: { id: string } } | undefined)?.payment?.id ??
      paid.body.id) as string;
    const settled = await eventually(
      () => call(api!.baseUrl, 'GET', `/payments/${paymentId}`, merchant.auth),
      (r) => r.body.status === 'succeeded',
      30_000,
      250,
    );
    expect(settled.body).toMatchObject({ status: 'succeeded', amount: 42 });
    const events = await call(api.baseUrl, 'GET', `/events?objectId=${paymentId}`, merchant.auth);
    expect(events.status).toBe(200);
    expect((events.body.events as Array<{ type: string }>).map((e) => e.type)).toContain('payment.succeeded');
  });
});

/**
 * Decision 0086, amended: `npm run cluster` runs its API, workers and sweeper as an application
 * role it makes in its PostgreSQL (ensureLoginRole) and migrates as the database's owner
 * (migrateStack, given the owner's URL): here against the run's real PostgreSQL, whose
 * superuser owns the schema as the cluster's does. The role logs in, reads and writes rows, and
 * cannot alter the schema.
 */
describe("npm run cluster's application role", () => {
  const role = `payments_cluster_app_${process.pid}`;
  let admin: pg.Client;

  beforeAll(async () => {
    admin = new pg.Client({ connectionString: testStack().databaseUrl });
    await admin.connect();
  });
  afterAll(async () => {
    await admin.query(`reassign owned by "${role}" to current_user; drop owned by "${role}"; drop role "${role}"`);
    await admin.end();
  });

  it('is a bare login role; migrateStack grants it rows, never the schema', async () => {
    const ownerUrl = testStack().databaseUrl;
    // Made, then made again with another password (a restart with the data dir's kept one): idempotent.
    await ensureLoginRole(admin, role, 'first-password-of-the-role');
    const password = `pw-${process.pid}-${Date.now()}`;
    await ensureLoginRole(admin, role, password);
    const attributes = await admin.query(
      'select rolcanlogin, rolsuper, rolcreatedb, rolcreaterole, rolbypassrls from pg_roles where rolname = $1',
      [role],
    );
    expect(attributes.rows).toEqual([
      { rolcanlogin: true, rolsuper: false, rolcreatedb: false, rolcreaterole: false, rolbypassrls: false },
    ]);

    const url = new URL(ownerUrl);
    url.username = role;
    url.password = password;
    const appUrl = url.toString();
    await migrateStack({ databaseUrl: appUrl, migrationDatabaseUrl: ownerUrl });

    const app = new pg.Client({ connectionString: appUrl });
    await app.connect();
    try {
      const refused = async (sql: string) =>
        app.query(sql).then(
          () => 'allowed',
          (err: { code?: string }) => err.code,
        );
      expect(await refused('alter table payments add column cluster_role_probe int')).toBe('42501');
      expect(await refused('alter table merchants drop column name')).toBe('42501');
      expect(await refused('create table cluster_role_probe (x int)')).toBe('42501');
      expect(await refused('drop table payments')).toBe('42501');
      expect(await refused('truncate merchant_events')).toBe('42501');
      expect((await app.query('select count(*)::int as n from merchants')).rows[0]).toEqual({ n: expect.any(Number) });
    } finally {
      await app.end();
    }
    // The product under it: a merchant written (rows, sequences, triggers) through an ORM of the role.
    const orm = await openTestOrm(appUrl);
    try {
      const merchant = await createTestMerchant(orm, 'Cluster role merchant');
      expect(merchant.merchantId).toEqual(expect.any(String));
    } finally {
      await orm.close();
    }
  });
});
