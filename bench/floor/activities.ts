import http from 'node:http';
import type { Pool } from 'pg';

/**
 * What the work floor's `charge` needs: the bench's PostgreSQL and the provider sandbox. The bare
 * floor has none of it.
 */
export interface FloorWork {
  pool: Pool;
  sandboxUrl: string;
  sandboxApiKey: string;
}

/** The work floors' tables, in their own schema of the bench's database (bench/floor/scenarios.ts creates them). */
export const FLOOR_PAYMENTS_TABLE = 'bench_floor.payments';
export const FLOOR_REFUNDS_TABLE = 'bench_floor.refunds';

/**
 * The floor's activities, run as local activities.
 *
 * `noop`: nothing, so that what is left is Temporal's own cost.
 *
 * `charge`: the least a token payment must do besides Temporal, written the cheapest way (one
 * statement each, plain `pg`, `node:http` with keep-alive, no validation, no logging): mark the
 * committed row sent and read its amount (one statement), ask the provider, record the capture
 * (one statement). What it costs on top of the floor is the business work's own price, the part
 * no implementation of the product can leave out.
 *
 * `refund`: the least a refund must do besides Temporal once its row is committed (the client
 * reserved the payment's balance and inserted the row in one statement: bench/floor/scenarios.ts),
 * in the same style: mark the refund sent and read what the provider call needs, its amount and
 * the payment's provider transaction (one statement), ask the provider to refund (with the
 * refund's id as idempotency key and reference), record the settlement on the refund and the
 * payment's refunded balance and status (one statement).
 */
export function createFloorActivities(work?: FloorWork) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 50 });
  return {
    async noop(): Promise<void> {},

    async charge(paymentId: string): Promise<string> {
      if (!work) throw new Error('the floor worker has no FLOOR_DATABASE_URL / FLOOR_SANDBOX_URL');
      const marked = await work.pool.query<{ amount_minor: string; currency: string }>(
        `UPDATE ${FLOOR_PAYMENTS_TABLE} SET provider_call_sent_at = now() WHERE id = $1 AND status = 'processing'
         RETURNING amount_minor, currency`,
        [paymentId],
      );
      const row = marked.rows[0];
      if (!row) throw new Error(`floor payment ${paymentId}: not processing`);
      const answer = await postJson(agent, `${work.sandboxUrl}/v1/payments`, work.sandboxApiKey, paymentId, {
        amount: Number(row.amount_minor) / 100,
        currency: row.currency,
        mode: 'card',
        cardToken: 'tok_success',
        metadata: {},
      });
      const status = answer.status === 'succeeded' ? 'succeeded' : 'failed';
      await work.pool.query(
        `UPDATE ${FLOOR_PAYMENTS_TABLE} SET status = $2, provider_payment_id = $3, updated_at = now() WHERE id = $1`,
        [paymentId, status, answer.id],
      );
      return status;
    },

    async refund(refundId: string): Promise<string> {
      if (!work) throw new Error('the floor worker has no FLOOR_DATABASE_URL / FLOOR_SANDBOX_URL');
      const claimed = await work.pool.query<{ amount_minor: string; currency: string; provider_payment_id: string }>(
        `UPDATE ${FLOOR_REFUNDS_TABLE} r SET provider_call_sent_at = now() FROM ${FLOOR_PAYMENTS_TABLE} p
          WHERE r.id = $1 AND r.status = 'pending' AND p.id = r.payment_id
         RETURNING r.amount_minor, r.currency, p.provider_payment_id`,
        [refundId],
      );
      const row = claimed.rows[0];
      if (!row) throw new Error(`floor refund ${refundId}: not pending`);
      const answer = await postJson(agent, `${work.sandboxUrl}/v1/refunds`, work.sandboxApiKey, refundId, {
        paymentId: row.provider_payment_id,
        amount: Number(row.amount_minor) / 100,
        currency: row.currency,
        reference_id: refundId,
      });
      const status = answer.status === 'succeeded' ? 'succeeded' : 'failed';
      await work.pool.query(
        `WITH settled AS (
           UPDATE ${FLOOR_REFUNDS_TABLE} SET status = $2, provider_refund_id = $3, updated_at = now()
            WHERE id = $1 AND status = 'pending' RETURNING payment_id, amount_minor
         )
         UPDATE ${FLOOR_PAYMENTS_TABLE} p SET amount_pending_refund_minor = 0,
                amount_refunded_minor = p.amount_refunded_minor + CASE WHEN $2 = 'succeeded' THEN s.amount_minor ELSE 0 END,
                status = CASE WHEN $2 <> 'succeeded' THEN p.status
                              WHEN p.amount_refunded_minor + s.amount_minor >= p.amount_minor THEN 'refunded'
                              ELSE 'partially_refunded' END,
                updated_at = now()
           FROM settled s WHERE p.id = s.payment_id`,
        [refundId, status, answer.id],
      );
      return status;
    },
  };
}

export type FloorActivities = ReturnType<typeof createFloorActivities>;

function postJson(
  agent: http.Agent,
  url: string,
  apiKey: string,
  idempotencyKey: string,
  body: unknown,
): Promise<{ id: string; status: string }> {
  const payload = JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = http.request(
      url,
      {
        method: 'POST',
        agent,
        timeout: 10_000,
        headers: {
          authorization: `Bearer ${apiKey}`,
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(payload),
          'idempotency-key': idempotencyKey,
        },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (text += chunk));
        res.on('end', () => {
          if (res.statusCode !== 200) reject(new Error(`sandbox: ${res.statusCode} ${text.slice(0, 200)}`));
          else resolve(JSON.parse(text) as { id: string; status: string });
        });
      },
    );
    req.on('timeout', () => req.destroy(new Error('sandbox: timeout')));
    req.on('error', reject);
    req.end(payload);
  });
}
