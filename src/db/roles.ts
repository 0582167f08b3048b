import type { EntityManager } from '@mikro-orm/postgresql';

/** A role name as a quoted SQL identifier. */
function identifier(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}

/** The user a PostgreSQL URL logs in as. */
export function roleOfUrl(databaseUrl: string): string {
  return decodeURIComponent(new URL(databaseUrl).username);
}

/**
 * Issue 44, item 11 (decision 0086): the application's role reads and writes rows, never the
 * schema. `db:migrate`, running as the schema's owner (MIGRATION_DATABASE_URL), grants the role of
 * DATABASE_URL what the API and workers use (rows of every table, sequences, the trigger
 * functions) and the same on what later migrations create (default privileges); CREATE, ALTER,
 * DROP and TRUNCATE stay the owner's. Idempotent: run after every migration.
 */
export async function grantApplicationRole(em: EntityManager, role: string): Promise<void> {
  const r = identifier(role);
  const statements = [
    `grant usage on schema public to ${r}`,
    `grant select, insert, update, delete on all tables in schema public to ${r}`,
    `grant usage, select, update on all sequences in schema public to ${r}`,
    `grant execute on all functions in schema public to ${r}`,
    `alter default privileges in schema public grant select, insert, update, delete on tables to ${r}`,
    `alter default privileges in schema public grant usage, select, update on sequences to ${r}`,
    `alter default privileges in schema public grant execute on functions to ${r}`,
  ];
  await em.transactional(async (tx) => {
    for (const sql of statements) await tx.execute(sql);
  });
}
