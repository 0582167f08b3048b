import { randomUUID } from 'node:crypto';
import { createSandbox, type RunningSandbox } from '../../dev/sandbox/server';
import type { SandboxRetention } from '../../dev/sandbox/state';

/**
 * The sandbox prunes what it keeps (issue 44 item 10, decision 0079): its ledger past
 * SANDBOX_MAX_LEDGER_ENTRIES, and ledger entries, payments (hosted sessions included) and
 * refunds older than SANDBOX_RETENTION_SECONDS, except what may still move. Over real HTTP.
 */
const API_KEY = 'sk_sandbox_test';

describe('sandbox retention', () => {
  const running: RunningSandbox[] = [];
  afterAll(() => Promise.all(running.map((s) => s.close())));

  async function start(retention: Partial<SandboxRetention>) {
    const sandbox = await createSandbox({
      apiKey: API_KEY,
      webhookSecret: 'whsec_sandbox_test',
      processingSeconds: 30,
      retention,
    }).listen(0);
    running.push(sandbox);
    const call = async (
      method: string,
      path: string,
      body?: unknown,
      key?: string,
      // eslint-disable-next-line @typescript-eslint/no-explicit-any -- answers are checked field by field
    ): Promise<{ status: number; json: any }> => {
      const headers: Record<string, string> = { authorization: `Bearer ${API_KEY}` };
      if (body !== undefined) headers['content-type'] = 'application/json';
      if (key) headers['idempotency-key'] = key;
      const res = await fetch(`${sandbox.url}${path}`, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      return { status: res.status, json: await res.json() };
    };
    const pay = (body: Record<string, unknown>, key = `pay_${randomUUID()}`) =>
      call('POST', '/v1/payments', { amount: 10, currency: 'USD', metadata: { paymentId: 'pay_x' }, ...body }, key);
    const ledger = async () =>
      (await call('GET', '/_admin/ledger')).json.entries as Array<{ transactionId: string; type: string }>;
    return { call, pay, ledger };
  }

  it('keeps the newest SANDBOX_MAX_LEDGER_ENTRIES ledger entries', async () => {
    const { pay, ledger } = await start({ maxLedgerEntries: 3, retentionSeconds: 0 });
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await pay({ mode: 'card', cardToken: 'tok_success' })).json.id as string);
    expect((await ledger()).map((e) => e.transactionId)).toEqual(ids.slice(2));
  });

  it('forgets settled records and hosted sessions older than SANDBOX_RETENTION_SECONDS, keeps a processing charge', async () => {
    const { call, pay, ledger } = await start({ retentionSeconds: 1, maxLedgerEntries: 0 });
    const capturedKey = `pay_${randomUUID()}`;
    const captured = (await pay({ mode: 'card', cardToken: 'tok_success' }, capturedKey)).json;
    const refunded = await call('POST', '/v1/refunds', {
      paymentId: captured.id,
      amount: 1,
      currency: 'USD',
      reference_id: 're_old',
      metadata: { refundId: 're_x' },
    });
    expect(refunded.json).toMatchObject({ status: 'succeeded' });
    const hosted = (await pay({ mode: 'checkout', returnUrl: 'https://shop.example.com/done' })).json;
    expect(hosted).toMatchObject({ status: 'pending' });
    const processing = (await pay({ mode: 'card', cardToken: 'tok_processing' })).json;
    expect(processing).toMatchObject({ status: 'processing' });
    expect(await ledger()).toHaveLength(3);

    await new Promise((resolve) => setTimeout(resolve, 1200));
    const fresh = (await pay({ mode: 'card', cardToken: 'tok_success' })).json;
    expect((await ledger()).map((e) => e.transactionId)).toEqual([fresh.id]);
    expect((await call('GET', `/v1/payments/${captured.id as string}`)).status).toBe(404);
    expect((await call('GET', `/v1/payments/${hosted.id as string}`)).status).toBe(404);
    expect((await call('GET', `/v1/refunds/${refunded.json.id as string}`)).status).toBe(404);
    expect((await call('GET', `/v1/payments?idempotencyKey=${capturedKey}`)).json).toEqual({ data: [] });
    expect((await call('GET', `/v1/payments/${processing.id as string}`)).json).toMatchObject({ status: 'processing' });
    expect((await call('GET', `/v1/payments/${fresh.id as string}`)).json).toMatchObject({ status: 'succeeded' });
  });
});
