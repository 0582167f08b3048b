import type { MikroORM } from '@mikro-orm/postgresql';
import { openTestOrm } from '../helpers/stack';
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
});
