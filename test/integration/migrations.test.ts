import type { MikroORM } from '@mikro-orm/postgresql';
import { randomBytes } from 'node:crypto';
import { openTestOrm } from '../helpers/stack';
import { testStack } from '../setup/stackInfo';
import { migrationsList } from '../../src/db/migrations';

describe('migrations', () => {
  let orm: MikroORM;
  beforeAll(async () => {
    orm = await openTestOrm();
  });
  afterAll(() => orm.close());

  it('are all applied by the test stack, in order', async () => {
    const executed = await orm.migrator.getExecuted();
    expect(executed.map((m) => m.name)).toEqual(migrationsList.map((m) => m.name));
    expect(await orm.migrator.getPending()).toEqual([]);
  });

  it('produce exactly the schema the entities describe (no drift)', async () => {
    const diff = await orm.schema.getUpdateSchemaSQL({ wrap: false, safe: false, dropTables: false });
    expect(diff.trim()).toBe('');
  });

  it("Migration20261202010000SigningSecrets moves a merchant's secret into both environments and drops the plain column", async () => {
    const name = `migrate_signing_${randomBytes(4).toString('hex')}`;
    await orm.em.getConnection().execute(`create database ${name}`);
    const url = new URL(testStack().databaseUrl);
    url.pathname = `/${name}`;
    const scratch = await openTestOrm(url.toString());
    try {
      await scratch.migrator.up({ to: 'Migration20261201020000InvoiceProcessingIndex' });
      await scratch.em.getConnection().execute(
        `insert into merchants (id, name, status, webhook_secret, created_at, updated_at)
         values ('mer_with', 'With', 'active', 'whsec_before', now(), now()),
                ('mer_without', 'Without', 'active', null, now(), now())`,
      );
      await scratch.migrator.up();
      const rows: Array<{ merchant_id: string; environment: string; secret: string }> = await scratch.em
        .getConnection()
        .execute(
          'select merchant_id, environment, secret from merchant_signing_secrets order by merchant_id, environment',
        );
      expect(rows).toEqual([
        { merchant_id: 'mer_with', environment: 'live', secret: 'plain:whsec_before' },
        { merchant_id: 'mer_with', environment: 'test', secret: 'plain:whsec_before' },
      ]);
      const columns: unknown[] = await scratch.em
        .getConnection()
        .execute(
          `select 1 from information_schema.columns where table_name = 'merchants' and column_name = 'webhook_secret'`,
        );
      expect(columns).toEqual([]);
    } finally {
      await scratch.close();
      await orm.em.getConnection().execute(`drop database ${name}`);
    }
  });
});
