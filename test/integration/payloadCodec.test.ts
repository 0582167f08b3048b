import { Client, Connection } from '@temporalio/client';
import { defaultPayloadConverter, type Payload } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import {
  createTestMerchant,
  startPaymentStack,
  TEST_CODEC_TOKEN,
  TEST_PAYLOAD_KEYS,
  type PaymentStack,
  type TestMerchant,
} from '../helpers/stack';
import { call, eventually } from '../helpers/http';
import { testStack } from '../setup/stackInfo';
import { subscriptionWorkflowId } from '../../workflows/subscriptionApi';
import { EncryptionCodec, newPayloadKeys, parsePayloadKeys } from '../../src/temporal/payloadCodec';

type History = temporal.api.history.v1.IHistory;

/**
 * Every payload of a history (inputs, results, update arguments, activity inputs, memos,
 * summaries), search attributes and headers aside: the server indexes search attributes, so no
 * codec may touch them; the SDK's client runs no codec on headers, which carry only our request id.
 */
function payloadsOf(value: unknown, out: Payload[] = []): Payload[] {
  if (value === null || typeof value !== 'object' || value instanceof Uint8Array) return out;
  const record = value as Record<string, unknown>;
  if (record.data instanceof Uint8Array && record.metadata && typeof record.metadata === 'object') {
    out.push(record as Payload);
    return out;
  }
  for (const [key, child] of Object.entries(record))
    if (key !== 'searchAttributes' && key !== 'header') payloadsOf(child, out);
  return out;
}

/** The history's wire bytes: what Temporal stores and its UI reads. */
const rawBytes = (history: History) => Buffer.from(temporal.api.history.v1.History.encode(history).finish());

const text = (payloads: Payload[]) => payloads.map((p) => Buffer.from(p.data ?? []).toString('utf8')).join('\n');

/**
 * Issue 44 item 6 (decision 0078): card tokens and customer emails never reach Temporal's history
 * in clear. Read as the Temporal server (and its UI) holds it, with a client WITHOUT the codec.
 */
describe('payload encryption (TEMPORAL_PAYLOAD_KEYS) and the UI codec endpoint', () => {
  let stack: PaymentStack;
  let merchant: TestMerchant;
  let connection: Connection;
  /** No data converter: the history as stored. */
  let plain: Client;
  const codec = EncryptionCodec.fromEnv(TEST_PAYLOAD_KEYS);
  const email = `card-holder-${Date.now()}@example.com`;
  const codecCall = (direction: 'decode' | 'encode', payloads: unknown[], headers: Record<string, string> = {}) =>
    fetch(`${stack.api.baseUrl}/codec/${direction}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-namespace': 'default', ...headers },
      body: JSON.stringify({ payloads }),
    });
  const asJson = (payloads: Payload[]) =>
    temporal.api.common.v1.Payloads.toObject(temporal.api.common.v1.Payloads.create({ payloads }), { bytes: String })
      .payloads as unknown[];

  beforeAll(async () => {
    stack = await startPaymentStack('payloadcodec');
    merchant = await createTestMerchant(stack.orm, 'Payload codec merchant');
    connection = await Connection.connect({ address: testStack().temporalAddress });
    plain = new Client({ connection, namespace: 'default' });
  });
  afterAll(async () => {
    await connection.close();
    await stack.close();
  });

  let subscriptionHistory: History;

  it('a payment with a card token and an email: neither is in the stored history, every payload is encrypted', async () => {
    const res = await call<{ id: string; status: string }>(stack.api.baseUrl, 'POST', '/payments', merchant.auth, {
      amount: 12.34,
      currency: 'USD',
      externalId: `codec-${Date.now()}`,
      cardToken: 'tok_success',
      customer: { email, name: 'Card Holder' },
    });
    expect(res.status).toBe(200);
    expect(res.body.status).toBe('succeeded');
    const paymentHistory = await plain.workflow.getHandle(`payment-${res.body.id}`).fetchHistory();
    const raw = rawBytes(paymentHistory);
    expect(raw.includes('tok_success')).toBe(false);
    expect(raw.includes(email)).toBe(false);
    const stored = payloadsOf(paymentHistory);
    expect(stored.length).toBeGreaterThan(0);
    for (const payload of stored) {
      expect(Buffer.from(payload.metadata!.encoding!).toString()).toBe('binary/encrypted');
      expect(Buffer.from(payload.metadata!['encryption-key-id']!).toString()).toBe('test');
    }
    expect(text(await codec.decode(stored))).toContain(res.body.id);
  });

  it('a subscription and its card update (an Update): neither the tokens nor the email are in the stored history', async () => {
    const created = await call<{ id: string; status: string }>(
      stack.api.baseUrl,
      'POST',
      '/subscriptions',
      merchant.auth,
      {
        amount: 9.99,
        currency: 'USD',
        billingIntervalDays: 30,
        externalId: `codec-sub-${Date.now()}`,
        cardToken: 'tok_success',
        customer: { email, name: 'Card Holder' },
      },
    );
    expect(created.status).toBe(200);
    const id = created.body.id;
    await eventually(
      () => call<{ status: string }>(stack.api.baseUrl, 'GET', `/subscriptions/${id}`, merchant.auth),
      (r) => r.body.status === 'active',
      30_000,
    );
    const update = await call(stack.api.baseUrl, 'POST', `/subscriptions/${id}/payment-method`, merchant.auth, {
      cardToken: 'tok_insufficient_funds',
    });
    expect(update.status).toBe(200);
    subscriptionHistory = await plain.workflow.getHandle(subscriptionWorkflowId(id)).fetchHistory();
    const raw = rawBytes(subscriptionHistory);
    expect(raw.includes('tok_success')).toBe(false);
    expect(raw.includes('tok_insufficient_funds')).toBe(false);
    expect(raw.includes(email)).toBe(false);
    // The Update's argument and the activity's input carry the new card's token: only the codec reads it.
    const decoded = text(await codec.decode(payloadsOf(subscriptionHistory)));
    expect(decoded).toContain('{"cardToken":"tok_insufficient_funds"}');
    expect(decoded).toContain(`"cardToken":"tok_insufficient_funds"`);
  });

  it('the codec endpoint decodes for the operator token and answers 401 otherwise', async () => {
    const stored = asJson(payloadsOf(subscriptionHistory));
    const ok = await codecCall('decode', stored, { authorization: `Bearer ${TEST_CODEC_TOKEN}` });
    expect(ok.status).toBe(200);
    const body = (await ok.json()) as { payloads: Array<{ metadata: Record<string, string>; data: string }> };
    expect(body.payloads).toHaveLength(stored.length);
    const decoded = body.payloads.map((p) => Buffer.from(p.data, 'base64').toString('utf8')).join('\n');
    expect(decoded).toContain('tok_insufficient_funds');
    expect(Buffer.from(body.payloads[0]!.metadata.encoding!, 'base64').toString()).toBe('json/plain');

    const refusedHeaders: Array<Record<string, string>> = [
      {},
      { authorization: 'Bearer wrong-token' },
      { authorization: `Basic ${TEST_CODEC_TOKEN}` },
    ];
    for (const headers of refusedHeaders) {
      const refused = await codecCall('decode', stored, headers);
      expect(refused.status).toBe(401);
      expect(refused.headers.get('www-authenticate')).toMatch(/^Bearer/);
      const refusal = (await refused.json()) as { code: string };
      expect(refusal.code).toBe('unauthorized');
      expect(JSON.stringify(refusal)).not.toContain('tok_insufficient_funds');
    }
    expect((await codecCall('encode', stored)).status).toBe(401);
  });

  it("the codec endpoint answers the UI's preflight for its origin and encodes for the operator", async () => {
    const preflight = await fetch(`${stack.api.baseUrl}/codec/decode`, {
      method: 'OPTIONS',
      headers: {
        origin: 'http://localhost:8233',
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'authorization,content-type,x-namespace',
      },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get('access-control-allow-origin')).toBe('http://localhost:8233');
    expect(preflight.headers.get('access-control-allow-headers')).toMatch(/Authorization/);
    const other = await fetch(`${stack.api.baseUrl}/codec/decode`, {
      method: 'OPTIONS',
      headers: { origin: 'https://evil.example', 'access-control-request-method': 'POST' },
    });
    expect(other.headers.get('access-control-allow-origin')).toBeNull();

    const clear = defaultPayloadConverter.toPayload({ cardToken: 'tok_success' });
    const encoded = await codecCall('encode', asJson([clear]), { authorization: `Bearer ${TEST_CODEC_TOKEN}` });
    expect(encoded.status).toBe(200);
    const { payloads } = (await encoded.json()) as { payloads: unknown[] };
    const back = temporal.api.common.v1.Payloads.fromObject({ payloads }).payloads;
    expect(Buffer.from(back[0]!.data!).includes('tok_success')).toBe(false);
    expect(defaultPayloadConverter.fromPayload((await codec.decode(back))[0]!)).toEqual({ cardToken: 'tok_success' });
  });

  it('a payload written before encryption (no encryption encoding) still decodes, by the codec and the endpoint', async () => {
    const old = defaultPayloadConverter.toPayload({ email, cardToken: 'tok_success' });
    expect(defaultPayloadConverter.fromPayload((await codec.decode([old]))[0]!)).toEqual({
      email,
      cardToken: 'tok_success',
    });
    const res = await codecCall('decode', asJson([old]), { authorization: `Bearer ${TEST_CODEC_TOKEN}` });
    expect(res.status).toBe(200);
    const { payloads } = (await res.json()) as { payloads: unknown[] };
    expect(temporal.api.common.v1.Payloads.fromObject({ payloads }).payloads[0]!.data).toEqual(old.data);
  });

  it('rotation: a payload under a retired key still listed decodes; new payloads use the first key; an unlisted key is refused', async () => {
    const retired = newPayloadKeys('k2025');
    const current = newPayloadKeys('k2026');
    const before = EncryptionCodec.fromEnv(retired);
    const ring = EncryptionCodec.fromEnv(`${current},${retired}`);
    expect(ring.encodingKeyId).toBe('k2026');
    const secret = defaultPayloadConverter.toPayload({ email });
    const [underRetired] = await before.encode([secret]);
    expect(defaultPayloadConverter.fromPayload((await ring.decode([underRetired!]))[0]!)).toEqual({ email });
    const [underCurrent] = await ring.encode([secret]);
    expect(Buffer.from(underCurrent!.metadata!['encryption-key-id']!).toString()).toBe('k2026');
    await expect(EncryptionCodec.fromEnv(current).decode([underRetired!])).rejects.toThrow(/k2025/);
    // The same id with other key bytes, or altered bytes: refused, never garbage.
    const [otherBytes] = parsePayloadKeys(newPayloadKeys('k2025'));
    await expect(new EncryptionCodec([otherBytes!]).decode([underRetired!])).rejects.toThrow(/does not decrypt/);
  });
});
