import path from 'node:path';
import { ensureWebhookSecret } from '../../src/domain/merchants';
import { quickstart } from '../../clients/typescript/examples/quickstart';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { createTestMerchant, startPaymentStack, type PaymentStack } from '../helpers/stack';

/** The typed client (clients/typescript): its committed types match the API, and its README example runs. */
describe('typed TypeScript client', () => {
  let stack: PaymentStack;
  beforeAll(async () => {
    stack = await startPaymentStack('typescript-client');
  });
  afterAll(async () => {
    await stack?.close();
  });

  it('its generated types are those of the served /openapi.json (else: npm run client:generate)', async () => {
    // In a child process: openapi-typescript is ESM inside, which jest's CommonJS runtime cannot load.
    const script = path.resolve(__dirname, '../../scripts/generate-client.ts');
    const run = promisify(execFile)(process.execPath, [
      '--import',
      'tsx',
      script,
      '--from',
      stack.api.baseUrl,
      '--check',
    ]);
    await expect(run).resolves.toMatchObject({ stdout: expect.stringContaining('is current') });
  }, 60_000);

  it('runs the README example: a payment, a partial refund, the pages of payments, signed callbacks', async () => {
    const merchant = await createTestMerchant(stack.orm, 'Client Example');
    const webhookSecret = await ensureWebhookSecret(stack.orm.em.fork(), merchant.merchantId);
    const lines: string[] = [];
    const result = await quickstart({
      baseUrl: stack.api.baseUrl,
      publicKey: merchant.publicKey,
      secretKey: merchant.secretKey,
      webhookSecret,
      log: (line) => lines.push(line),
    });
    expect(result.payment.status).toBe('succeeded');
    expect(result.refund.status).toBe('succeeded');
    expect(result.refund.paymentAmountRefundable).toBe(15.5);
    expect(result.listed).toEqual([result.payment.id]);
    expect(result.callbacks.map((c) => c.type).sort()).toEqual([
      'payment.partially_refunded',
      'payment.succeeded',
      'refund.succeeded',
    ]);
    expect(result.callbacks.every((c) => c.valid)).toBe(true);
    // What the sandbox ledger says: one capture of 25.50, one refund of 10.00.
    const captures = await stack.ledger('capture', result.payment.id);
    expect(captures.map((e) => [e.status, e.amount, e.currency])).toEqual([['succeeded', 25.5, 'EUR']]);
    const refunds = await stack.ledger('refund', result.payment.id);
    expect(refunds.map((e) => [e.status, e.amount])).toEqual([['succeeded', 10]]);
    expect(lines[0]).toBe(`payment ${result.payment.id}: succeeded 25.5 EUR`);
  });
});
