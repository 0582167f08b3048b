import { startEmbeddedPostgres, type EmbeddedPostgresOptions } from '../../dev/infra/embeddedPostgres';

/** Child of `startPostgresProcess`: runs PostgreSQL until its stdin closes. */
const opts = JSON.parse(process.argv[2] ?? '{}') as EmbeddedPostgresOptions;
startEmbeddedPostgres(opts).then(
  (pg) => {
    process.stdout.write(`ready ${pg.databaseUrl}\n`);
    process.stdin.resume();
    process.stdin.once('end', () => {
      void pg.stop().finally(() => process.exit(0));
    });
  },
  (err: unknown) => {
    process.stderr.write(`${String(err)}\n`);
    process.exit(1);
  },
);
