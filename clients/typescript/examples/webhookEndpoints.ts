/**
 * The README's webhook endpoint example, run as is by test/integration/typescriptClient.test.ts
 * against the real stack: an endpoint receiving `payment.*`, its secret rotated, an event resent
 * during the overlap and its two signatures verified with both secrets.
 *
 *   PAYMENTS_URL=http://localhost:3000 PUBLIC_KEY=pk_test_... SECRET_KEY=sk_test_... \
 *   node --import tsx clients/typescript/examples/webhookEndpoints.ts
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomUUID } from 'node:crypto';
import { createPaymentsClient, verifyWebhookSignature, type components } from '../src';

export interface WebhookEndpointsExampleOptions {
  baseUrl: string;
  publicKey: string;
  secretKey: string;
  log?: (line: string) => void;
}

/** One delivery as the receiver saw it, and what the verifier said of it. */
export interface ReceivedDelivery {
  eventId: string;
  body: string;
  signature: string;
  /** Checked with the secrets the receiver knew when it came: one, or both during the rotation. */
  valid: boolean;
}

export async function webhookEndpointsExample(options: WebhookEndpointsExampleOptions) {
  const log = options.log ?? ((line: string) => process.stdout.write(`${line}\n`));
  const api = createPaymentsClient(options);

  // The merchant's endpoint: it knows its secrets (both during a rotation) and checks each delivery.
  let secrets: string[] = [];
  const received: ReceivedDelivery[] = [];
  const receiver = http.createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
    req.on('end', () => {
      const signature = String(req.headers['x-signature'] ?? '');
      const valid = verifyWebhookSignature(body, signature, secrets);
      received.push({ eventId: String(req.headers['x-event-id']), body, signature, valid });
      res.writeHead(valid ? 200 : 400).end();
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/webhooks`;
  const waitFor = async (count: number) => {
    for (let waited = 0; received.length < count && waited < 20_000; waited += 100) {
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  };

  try {
    // 1. An endpoint for every payment event; its secret is answered only here (and on rotation).
    const created = await api.POST('/webhook-endpoints', {
      body: { url, enabledEvents: ['payment.*'], description: 'orders service' },
    });
    if (!created.data) throw new Error(`endpoint refused: ${JSON.stringify(created.error)}`);
    const endpoint = created.data;
    secrets = [endpoint.secret];
    log(`endpoint ${endpoint.id}: ${endpoint.status}`);

    // 2. A payment: its payment.succeeded event is delivered to the endpoint, signed with its secret.
    const payment = await api.POST('/payments', {
      body: {
        externalId: `order-${randomUUID()}`,
        amount: 12,
        currency: 'EUR',
        customer: { email: 'ada@example.com' },
        cardToken: 'tok_success',
      },
    });
    if (!payment.data) throw new Error(`payment refused: ${JSON.stringify(payment.error)}`);
    await waitFor(1);
    const first = received[0];
    if (!first) throw new Error('no delivery arrived');
    log(`delivered ${first.eventId}: signature ${first.valid ? 'valid' : 'INVALID'}`);

    // 3. Rotate the secret: for 24 hours deliveries carry both signatures,
    //    `X-Signature: t=<unix>,v1=<new>,v1=<old>`; the receiver accepts either secret meanwhile.
    const rotated = await api.POST('/webhook-endpoints/{webhookEndpointId}/rotate-secret', {
      params: { path: { webhookEndpointId: endpoint.id } },
      body: { overlapHours: 24 },
    });
    if (!rotated.data) throw new Error(`rotation refused: ${JSON.stringify(rotated.error)}`);
    secrets = [rotated.data.secret, endpoint.secret];

    // 4. Resend the event to the endpoint: the same id and body, a new attempt (202).
    const resent = await api.POST('/events/{eventId}/resend', {
      params: { path: { eventId: first.eventId } },
      body: { endpointId: endpoint.id },
    });
    if (!resent.data) throw new Error(`resend refused: ${JSON.stringify(resent.error)}`);
    const deliveries: Array<components['schemas']['EventDelivery']> = resent.data.deliveries;
    log(`resent ${first.eventId}: attempt ${deliveries[0]?.attempt} ${deliveries[0]?.status}`);
    await waitFor(2);
    const again = received[1];
    if (!again) throw new Error('the resend did not arrive');
    log(`redelivered ${again.eventId}: signature ${again.valid ? 'valid' : 'INVALID'}`);

    // 5. Every attempt, as GET /events/{id} shows it.
    const event = await api.GET('/events/{eventId}', { params: { path: { eventId: first.eventId } } });
    return {
      endpoint,
      newSecret: rotated.data.secret,
      resent: resent.data,
      received,
      event: event.data,
    };
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
  webhookEndpointsExample({
    baseUrl: process.env.PAYMENTS_URL ?? 'http://localhost:3000',
    publicKey: env('PUBLIC_KEY'),
    secretKey: env('SECRET_KEY'),
  }).catch((err: unknown) => {
    process.stderr.write(`${(err as Error).stack ?? String(err)}\n`);
    process.exit(1);
  });
}
