/**
 * The README's example, run as is by test/integration/typescriptClient.test.ts against the real
 * stack: create a payment, refund part of it, page through payments, verify a callback's signature.
 *
 *   PAYMENTS_URL=http://localhost:3000 PUBLIC_KEY=pk_test_... SECRET_KEY=sk_test_... \
 *   WEBHOOK_SECRET=whsec_... node --import tsx clients/typescript/examples/quickstart.ts
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomUUID } from 'node:crypto';
import { createPaymentsClient, verifyCallbackSignature, type Payment } from '../src';

export interface QuickstartOptions {
  baseUrl: string;
  publicKey: string;
  secretKey: string;
  webhookSecret: string;
  log?: (line: string) => void;
}

export async function quickstart(options: QuickstartOptions) {
  const log = options.log ?? ((line: string) => process.stdout.write(`${line}\n`));
  const api = createPaymentsClient(options);

  // A callback receiver: the merchant's endpoint, checking every callback's signature.
  const verified: Array<{ type: string; valid: boolean }> = [];
  const receiver = http.createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
    req.on('end', () => {
      const valid = verifyCallbackSignature(body, req.headers['x-signature'] as string, options.webhookSecret);
      verified.push({ type: (JSON.parse(body) as { type: string }).type, valid });
      res.writeHead(valid ? 200 : 400).end();
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  const callbackUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/callbacks`;

  try {
    // 1. A payment with a saved-card token: the answer carries the outcome.
    const created = await api.POST('/payments', {
      body: {
        externalId: `order-${randomUUID()}`,
        amount: 25.5,
        currency: 'EUR',
        customer: { email: 'ada@example.com', name: 'Ada' },
        cardToken: 'tok_success',
        callbackUrl,
      },
    });
    if (!created.data) throw new Error(`payment refused: ${JSON.stringify(created.error)}`);
    const payment: Payment = created.data;
    log(`payment ${payment.id}: ${payment.status} ${payment.amount} ${payment.currency}`);

    // 2. Refund part of it (the same externalId again would return this refund, not a second one).
    const refunded = await api.POST('/payments/{paymentId}/refund', {
      params: { path: { paymentId: payment.id } },
      body: { externalId: `refund-${randomUUID()}`, amount: 10 },
    });
    if (!refunded.data) throw new Error(`refund refused: ${JSON.stringify(refunded.error)}`);
    log(`refund ${refunded.data.id}: ${refunded.data.status}; refundable now ${refunded.data.paymentAmountRefundable}`);

    // 3. Page through the merchant's payments, newest first.
    const seen: string[] = [];
    let cursor: string | undefined;
    do {
      const page = await api.GET('/payments', { params: { query: { limit: 2, ...(cursor ? { cursor } : {}) } } });
      if (!page.data) throw new Error(`list refused: ${JSON.stringify(page.error)}`);
      seen.push(...page.data.payments.map((p) => p.id));
      cursor = page.data.nextCursor ?? undefined;
    } while (cursor);
    log(`listed ${seen.length} payments`);

    // 4. The callbacks (payment.succeeded, refund.succeeded, payment.partially_refunded), signatures checked.
    for (let waited = 0; verified.length < 3 && waited < 20_000; waited += 100) {
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    for (const callback of verified)
      log(`callback ${callback.type}: signature ${callback.valid ? 'valid' : 'INVALID'}`);
    return { payment, refund: refunded.data, listed: seen, callbacks: verified };
  } finally {
    receiver.close();
  }
}

if (require.main === module) {
  const env = (name: string) => {
    const value = process.env[name];
    if (!value) throw new Error(`${name} is not set`);
    return value;
  };
  quickstart({
    baseUrl: process.env.PAYMENTS_URL ?? 'http://localhost:3000',
    publicKey: env('PUBLIC_KEY'),
    secretKey: env('SECRET_KEY'),
    webhookSecret: env('WEBHOOK_SECRET'),
  }).catch((err: unknown) => {
    process.stderr.write(`${(err as Error).stack ?? String(err)}\n`);
    process.exit(1);
  });
}
