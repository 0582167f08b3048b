import path from 'node:path';
import { signingSecrets } from '../../src/domain/signingSecrets';
import { quickstart } from '../../clients/typescript/examples/quickstart';
import { webhookEndpointsExample } from '../../clients/typescript/examples/webhookEndpoints';
import { createPaymentsClient, verifyCallbackSignature, type Dispute } from '../../clients/typescript/src';
import { eventually } from '../helpers/http';
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
    const webhookSecret = (
      await signingSecrets(stack.orm.em.fork(), stack.providers.secrets, merchant.merchantId, 'test')
    ).current;
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

  it('runs the README webhook endpoint example: delivered, secret rotated, resent with both signatures, both verified', async () => {
    const merchant = await createTestMerchant(stack.orm, 'Client webhook endpoints');
    const lines: string[] = [];
    const result = await webhookEndpointsExample({
      baseUrl: stack.api.baseUrl,
      publicKey: merchant.publicKey,
      secretKey: merchant.secretKey,
      log: (line) => lines.push(line),
    });
    const [first, again] = result.received;
    expect(result.received).toHaveLength(2);
    expect(first!.valid).toBe(true);
    expect(again!.valid).toBe(true);
    // The same event once more: its id and body unchanged.
    expect(again!.eventId).toBe(first!.eventId);
    expect(again!.body).toBe(first!.body);
    expect(result.resent.deliveries).toEqual([
      expect.objectContaining({ endpointId: result.endpoint.id, attempt: 2, status: 'pending', httpStatus: null }),
    ]);
    // During the overlap: one `v1` per secret, the new one first; either secret alone verifies it.
    const v1 = again!.signature.split(',').filter((p) => p.startsWith('v1='));
    expect(again!.signature).toMatch(/^t=\d+,v1=[0-9a-f]{64},v1=[0-9a-f]{64}$/);
    expect(v1).toHaveLength(2);
    expect(verifyCallbackSignature(again!.body, again!.signature, result.newSecret)).toBe(true);
    expect(verifyCallbackSignature(again!.body, again!.signature, result.endpoint.secret)).toBe(true);
    expect(verifyCallbackSignature(again!.body, again!.signature, [`${result.newSecret}x`])).toBe(false);
    expect(verifyCallbackSignature(again!.body, again!.signature, [])).toBe(false);
    // Before the rotation: the one secret only.
    expect(first!.signature).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/);
    expect(verifyCallbackSignature(first!.body, first!.signature, result.newSecret)).toBe(false);
    expect(lines).toContain(`redelivered ${first!.eventId}: signature valid`);
    const api = createPaymentsClient({
      baseUrl: stack.api.baseUrl,
      publicKey: merchant.publicKey,
      secretKey: merchant.secretKey,
    });
    const shown = await eventually(
      () => api.GET('/events/{eventId}', { params: { path: { eventId: first!.eventId } } }),
      (r) => r.data?.deliveries.length === 2 && r.data.deliveries.every((d) => d.status === 'succeeded'),
    );
    expect(shown.data!.deliveries.map((d) => [d.endpointId, d.attempt, d.httpStatus])).toEqual([
      [result.endpoint.id, 1, 200],
      [result.endpoint.id, 2, 200],
    ]);
  });

  it('documents the dispute routes (paths, schemas, 409 dispute_not_updatable)', async () => {
    type Op = {
      operationId: string;
      parameters?: Array<{ name: string; in: string; required: boolean }>;
      requestBody?: { required: boolean; content: { 'application/json': { schema: Record<string, unknown> } } };
      responses: Record<string, { description: string; content: { 'application/json': { schema: unknown } } }>;
    };
    const doc = (await (await fetch(`${stack.api.baseUrl}/openapi.json`)).json()) as {
      paths: Record<string, Record<string, Op>>;
      components: {
        schemas: Record<string, { properties: Record<string, Record<string, unknown>>; required: string[] }>;
      };
    };
    const fields = [
      'amount',
      'closedAt',
      'createdAt',
      'currency',
      'evidence',
      'evidenceDueBy',
      'id',
      'paymentId',
      'providerDisputeId',
      'reason',
      'status',
      'updatedAt',
    ];
    const schema = doc.components.schemas.Dispute!;
    expect(Object.keys(schema.properties).sort()).toEqual(fields);
    expect([...schema.required].sort()).toEqual(fields);
    expect(schema.properties.status!.enum).toEqual(['needs_response', 'under_review', 'won', 'lost', 'accepted']);
    const dispute = { $ref: '#/components/schemas/Dispute' };
    const ok = (op: Op) => op.responses['200']!.content['application/json'].schema;
    const params = (op: Op) => (op.parameters ?? []).map((p) => `${p.in}:${p.name}`).sort();

    const list = doc.paths['/disputes']!.get!;
    expect(list.operationId).toBe('listDisputes');
    expect(params(list)).toEqual(['query:cursor', 'query:limit', 'query:paymentId', 'query:status']);
    expect(ok(list)).toMatchObject({ properties: { disputes: { type: 'array', items: dispute } } });
    const get = doc.paths['/disputes/{disputeId}']!.get!;
    expect(get.operationId).toBe('getDispute');
    expect(params(get)).toEqual(['path:disputeId']);
    expect(ok(get)).toEqual(dispute);
    expect(get.responses['404']).toBeDefined();

    const evidence = doc.paths['/disputes/{disputeId}/evidence']!.post!;
    expect(evidence.operationId).toBe('submitDisputeEvidence');
    expect(evidence.requestBody).toMatchObject({
      required: true,
      content: {
        'application/json': {
          schema: {
            type: 'object',
            properties: { text: { type: 'string', minLength: 1, maxLength: 20_000 }, submit: { type: 'boolean' } },
            required: ['text', 'submit'],
            additionalProperties: false,
          },
        },
      },
    });
    const accept = doc.paths['/disputes/{disputeId}/accept']!.post!;
    expect(accept.operationId).toBe('acceptDispute');
    expect(accept.requestBody).toBeUndefined();
    for (const op of [evidence, accept]) {
      expect(ok(op)).toEqual(dispute);
      expect(op.responses['409']!.description).toContain('`dispute_not_updatable`');
      expect(op.responses['409']!.content['application/json'].schema).toEqual({ $ref: '#/components/schemas/Error' });
      expect(op.responses['404']).toBeDefined();
    }
  });

  it('answers a real dispute through the client: listed, read, evidence sent, then 409 dispute_not_updatable', async () => {
    const merchant = await createTestMerchant(stack.orm, 'Client disputes');
    const api = createPaymentsClient({
      baseUrl: stack.api.baseUrl,
      publicKey: merchant.publicKey,
      secretKey: merchant.secretKey,
    });
    const created = await api.POST('/payments', {
      body: {
        externalId: `order-${Date.now()}`,
        amount: 12,
        currency: 'USD',
        customer: { email: 'ada@example.com' },
        cardToken: 'tok_dispute',
      },
    });
    expect(created.data).toMatchObject({ status: 'succeeded' });
    const paymentId = created.data!.id;
    // The processor opens the dispute a moment after the capture.
    const listed = await eventually(
      () => api.GET('/disputes', { params: { query: { paymentId, status: 'needs_response' } } }),
      (r) => r.data?.disputes.length === 1,
      15_000,
      200,
    );
    const opened: Dispute = listed.data!.disputes[0]!;
    expect(opened).toMatchObject({ paymentId, amount: 12, currency: 'USD', status: 'needs_response', evidence: null });
    const read = await api.GET('/disputes/{disputeId}', { params: { path: { disputeId: opened.id } } });
    expect(read.data).toEqual(opened);

    const sent = await api.POST('/disputes/{disputeId}/evidence', {
      params: { path: { disputeId: opened.id } },
      body: { text: 'Delivered, signed for.', submit: true },
    });
    expect(sent.response.status).toBe(200);
    expect(sent.data).toMatchObject({
      id: opened.id,
      status: 'under_review',
      evidence: { text: 'Delivered, signed for.' },
    });
    expect((await stack.ledger('dispute', paymentId)).map((e) => e.status)).toEqual(['under_review']);

    const accept = await api.POST('/disputes/{disputeId}/accept', { params: { path: { disputeId: opened.id } } });
    expect(accept.response.status).toBe(409);
    expect(accept.data).toBeUndefined();
    expect(accept.error).toMatchObject({ code: 'dispute_not_updatable', details: { status: 'under_review' } });
    const missing = await api.GET('/disputes/{disputeId}', { params: { path: { disputeId: 'dp_none' } } });
    expect(missing.response.status).toBe(404);
    expect(missing.error).toMatchObject({ code: 'not_found' });
    expect((await stack.ledger('dispute', paymentId)).map((e) => e.status)).toEqual(['under_review']);
  });
});
