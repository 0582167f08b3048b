import { MikroORM } from '@mikro-orm/postgresql';
import { ormOptions } from '../src/db/orm';
(async () => {
  const orm = await MikroORM.init({ ...ormOptions({ databaseUrl: 'postgres://x@127.0.0.1:1/x' }), connect: false });
  const sql = await orm.schema.getCreateSchemaSQL({ wrap: false });
  console.log(sql);
})();
