import Koa from 'koa';
import Router from '@koa/router';
import pg from 'pg';

/**
 * The benchmark's baseline: the least a `GET /payments/:id` can do on this stack. A bare Koa app
 * with one route that runs ONE indexed SELECT (primary key, scoped to the merchant; a named
 * prepared statement) through a `pg.Pool` of 10 and answers the row as JSON. No auth, no ORM,
 * no validation, no logging.
 * Run by bench/run.ts as its own process, so that it does not share an event loop with autocannon.
 *
 * Env: DATABASE_URL, PORT, BENCH_MERCHANT_ID (the merchant the product would get from the key).
 */
const databaseUrl = process.env.DATABASE_URL;
const port = Number(process.env.PORT);
const merchantId = process.env.BENCH_MERCHANT_ID;
if (!databaseUrl || !Number.isInteger(port) || !merchantId) {
  process.stderr.write('baseline: DATABASE_URL, PORT and BENCH_MERCHANT_ID are required\n');
  process.exit(78);
}

const pool = new pg.Pool({ connectionString: databaseUrl, max: 10 });
const app = new Koa();
const router = new Router();

router.get('/payments/:id', async (ctx) => {
  // A named statement, prepared once per connection, as the product's GET does (src/db/orm.ts).
  const { rows } = await pool.query({
    name: 'baseline_payment_by_id',
    text: 'SELECT * FROM payments WHERE id = $1 AND merchant_id = $2',
    values: [ctx.params.id, merchantId],
  });
  if (rows.length === 0) {
    ctx.status = 404;
    ctx.body = { code: 'not_found' };
    return;
  }
  ctx.body = rows[0];
});
router.get('/healthz', (ctx) => {
  ctx.body = { ok: true };
});

app.use(router.routes());
const server = app.listen(port, '127.0.0.1');
server.keepAliveTimeout = 65_000;

const shutdown = () => {
  server.close(() => void pool.end().then(() => process.exit(0)));
  server.closeIdleConnections();
  setTimeout(() => process.exit(0), 5_000).unref();
};
process.on('SIGTERM', shutdown);
process.on('SIGINT', shutdown);
