import type { MikroORM } from '@mikro-orm/postgresql';
import type { Logger } from '../src/logger';

/** What activities are built from: passed in by the worker, so tests can build them too. */
export interface ActivityDeps {
  orm: MikroORM;
  logger: Logger;
}
