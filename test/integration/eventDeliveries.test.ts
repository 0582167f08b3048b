import type { MikroORM } from '@mikro-orm/postgresql';
import {
  basicAuth,
  createTestMerchant,
  startPaymentStack,
  TEST_PROVIDER_SECRETS_KEY,
  type PaymentStack,
  type TestMerchant,
} from '../helpers/stack';
import { call, eventually } from '../helpers/http';
import { startCallbackReceiver, type ReceivedCallback } from '../helpers/callbackReceiver';
import { subscriptionClient } from '../helpers/subscriptions';
import { createKey, createMerchant } from '../../src/domain/merchants';
import { createWebhookEndpoint } from '../../src/domain/webhookEndpoints';
import { recordEvent } from '../../src/domain/events';
import { Merchant } from '../../src/db/entities';
import { EVENT_TYPES, matchesFilter } from '../../src/rules/eventFilters';
import { ProviderSecrets } from '../../src/providers/secrets';
import { verify } from '../../src/providers/signature';
import { eventDeliveriesWorkflowId } from '../../workflows/eventDeliveriesApi';
import { deliveryTaskQueue } from '../../src/temporal/taskQueues';

/**
 * PRODUCT.md, "Events, webhook endpoints and deliveries" (decision 0069): every event goes to each
 * enabled endpoint of its merchant and environment whose filter matches, and to the record's
 * callbackUrl, each signed with its own secret; delivered by the merchant's delivery workflow on
 * the delivery task queue. The real API, workers, PostgreSQL, Temporal and sandbox.
 */
describe('event deliveries to webhook endpoints', () => {
  let stack: PaymentStack;
  let merchant: TestMerchant;
  const api = <T = Record<string, unknown>>(method: string, path: string, body?: unknown, auth = merchant.auth) =>
    call<T>(stack.api.baseUrl, method, path, auth, body);
  const receivers: Array<Awaited<ReturnType<typeof startCallbackReceiver>>> = [];
  const receiver = async (script: number[] = []) => {
    const r = await startCallbackReceiver(script);
    receivers.push(r);
    return r;
  };
  const endpoint = async (url: string, enabledEvents: string[], auth = merchant.auth) => {
    const created = await api<{ id: string; secret: string }>(
      'POST',
      '/webhook-endpoints',
      { url, enabledEvents },
      auth,
    );
    expect(created.status).toBe(200);
    return created.body;
  };
  const pay = async (extra: Record<string, unknown> = {}) => {
    const res = await api<{ id: string; status: string }>('POST', '/payments', {
      amount: 25,
      currency: 'USD',
      externalId: `deliveries-${Date.now()}-${Math.random()}`,
      customer: { email: 'c@example.com' },
      cardToken: 'tok_success',
      ...extra,
    });
    expect(res.body.status).toBe('succeeded');
    return res.body;
  };
  const typesOf = (r: { received: ReceivedCallback[] }, objectId?: string) =>
    r.received
      .filter((c) => objectId === undefined || c.json.objectId === objectId)
      .map((c) => c.json.type)
      .sort();

  beforeAll(async () => {
    stack = await startPaymentStack('deliveries', { billingDaySeconds: 1 });
    merchant = await createTestMerchant(stack.orm, 'Deliveries merchant');
  });
  afterAll(async () => {
    for (const r of receivers) await r.close();
    await stack.close();
  });

  it('each event goes to every enabled endpoint whose filter matches, signed with its secret; not to a disabled one, nor to the other environment', async () => {
    const payments = await receiver();
    const refunds = await receiver();
    const everything = await receiver();
    const disabled = await receiver();
    const paymentsEndpoint = await endpoint(payments.url, ['payment.*']);
    const refundsEndpoint = await endpoint(refunds.url, ['refund.succeeded']);
    const everythingEndpoint = await endpoint(everything.url, ['*']);
    const disabledEndpoint = await endpoint(disabled.url, ['*']);
    expect((await api('PATCH', `/webhook-endpoints/${disabledEndpoint.id}`, { status: 'disabled' })).status).toBe(200);
    const liveKey = await createKey(stack.orm.em.fork(), merchant.merchantId, {
      environment: 'live',
      role: 'merchant',
    });
    // Live endpoints follow the production rules (no loopback): a public name, never called here.
    const liveEndpoint = await endpoint(
      'https://hooks.example.com/live',
      ['*'],
      basicAuth(liveKey.apiKey.publicKey, liveKey.secretKey),
    );

    const payment = await pay();
    const refund = await api<{ id: string; status: string }>('POST', `/payments/${payment.id}/refund`, {
      externalId: `refund-${Date.now()}`,
      amount: 25,
    });
    expect(refund.body.status).toBe('succeeded');

    await eventually(
      async () => [payments.received.length, refunds.received.length, everything.received.length],
      ([p, r, e]) => p! >= 2 && r! >= 1 && e! >= 3,
      20_000,
    );
    expect(typesOf(payments, payment.id)).toEqual(['payment.refunded', 'payment.succeeded']);
    expect(typesOf(refunds)).toEqual(['refund.succeeded']);
    expect(typesOf(everything)).toEqual(['payment.refunded', 'payment.succeeded', 'refund.succeeded']);
    for (const [r, secret] of [
      [payments, paymentsEndpoint.secret],
      [refunds, refundsEndpoint.secret],
      [everything, everythingEndpoint.secret],
    ] as const) {
      for (const c of r.received) {
        expect(verify(secret, c.body, c.signature)).toBe(true);
        // One secret signs (no rotation): one v1.
        expect(c.signature!.split(',').filter((p) => p.startsWith('v1='))).toHaveLength(1);
      }
    }
    // Not another endpoint's secret.
    expect(verify(refundsEndpoint.secret, payments.received[0]!.body, payments.received[0]!.signature)).toBe(false);
    // The same event, the same body, to each endpoint.
    const succeededAt = (r: typeof payments) => r.received.find((c) => c.json.type === 'payment.succeeded')!;
    expect(succeededAt(everything).body).toBe(succeededAt(payments).body);

    // GET /events/{id} shows the attempts, one per endpoint it went to.
    const event = succeededAt(payments).json;
    const shown = await api<{ deliveries: Array<Record<string, unknown>> }>('GET', `/events/${event.id}`);
    expect(shown.status).toBe(200);
    expect(shown.body.deliveries.map((d) => d.endpointId).sort((a, b) => String(a).localeCompare(String(b)))).toEqual(
      [everythingEndpoint.id, paymentsEndpoint.id].sort(),
    );
    for (const d of shown.body.deliveries) {
      expect(d).toMatchObject({ attempt: 1, status: 'succeeded', httpStatus: 200, error: null });
    }

    // Given a second to be sure: the disabled endpoint and the live one got nothing.
    await new Promise((r) => setTimeout(r, 1000));
    expect(disabled.received).toEqual([]);
    const jobsOf = async (endpointId: string) => {
      const rows: Array<{ n: number }> = await stack.orm.em
        .getConnection()
        .execute(`select count(*)::int as n from delivery_jobs where endpoint_id = ?`, [endpointId]);
      return rows[0]?.n;
    };
    expect(await jobsOf(liveEndpoint.id)).toBe(0);
    expect(await jobsOf(disabledEndpoint.id)).toBe(0);
  });

  it('an event goes to the callbackUrl with the merchant secret and to the endpoints with theirs', async () => {
    const callback = await receiver();
    const hooks = await receiver();
    const hooksEndpoint = await endpoint(hooks.url, ['payment.succeeded']);
    const payment = await pay({ callbackUrl: callback.url });
    await eventually(
      async () => [typesOf(callback, payment.id).length, typesOf(hooks, payment.id).length],
      ([c, h]) => c! >= 1 && h! >= 1,
      20_000,
    );
    const toCallback = callback.received.find((c) => c.json.objectId === payment.id)!;
    const toEndpoint = hooks.received.find((c) => c.json.objectId === payment.id)!;
    expect(toCallback.body).toBe(toEndpoint.body);
    expect(verify(hooksEndpoint.secret, toEndpoint.body, toEndpoint.signature)).toBe(true);
    expect(verify(hooksEndpoint.secret, toCallback.body, toCallback.signature)).toBe(false);
    const shown = await api<{ deliveries: Array<{ endpointId: string | null; url: string }> }>(
      'GET',
      `/events/${toCallback.json.id}`,
    );
    expect(shown.body.deliveries).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ endpointId: null, url: callback.url, status: 'succeeded' }),
        expect.objectContaining({ endpointId: hooksEndpoint.id, url: hooks.url, status: 'succeeded' }),
      ]),
    );
  });

  it('during a rotation overlap a delivery carries both signatures: the new secret and the old one verify it', async () => {
    const hooks = await receiver();
    const created = await endpoint(hooks.url, ['payment.succeeded']);
    const rotated = await api<{ secret: string }>('POST', `/webhook-endpoints/${created.id}/rotate-secret`, {
      overlapHours: 1,
    });
    expect(rotated.status).toBe(200);
    const payment = await pay();
    await eventually(
      async () => typesOf(hooks, payment.id).length,
      (n) => n >= 1,
      20_000,
    );
    const delivered = hooks.received.find((c) => c.json.objectId === payment.id)!;
    expect(delivered.signature!.split(',').filter((p) => p.startsWith('v1='))).toHaveLength(2);
    expect(verify(rotated.body.secret, delivered.body, delivered.signature)).toBe(true);
    expect(verify(created.secret, delivered.body, delivered.signature)).toBe(true);
  });

  it('a subscription without a callbackUrl: its events, renewals included, reach an endpoint subscribed to subscription.*', async () => {
    const hooks = await receiver();
    await endpoint(hooks.url, ['subscription.*']);
    const subs = subscriptionClient(stack, merchant);
    const created = await subs.create({ cardToken: 'tok_success' });
    const subscriptionId = created.body.id as string;
    await subs.untilPaid(subscriptionId, 3);
    await eventually(
      async () => typesOf(hooks, subscriptionId),
      (types) => types.filter((t) => t === 'subscription.charge_succeeded').length >= 3,
      20_000,
    );
    expect(typesOf(hooks, subscriptionId)).toContain('subscription.activated');
    const sequences = hooks.received.filter((c) => c.json.objectId === subscriptionId).map((c) => c.json.sequence);
    expect(new Set(sequences).size).toBe(sequences.length);
    await subs.cancel(subscriptionId);
  });

  it('runs on the delivery task queue, one workflow per merchant', async () => {
    const hooks = await receiver();
    await endpoint(hooks.url, ['payment.succeeded']);
    const payment = await pay();
    await eventually(
      async () => typesOf(hooks, payment.id).length,
      (n) => n >= 1,
      20_000,
    );
    const described = await stack.api.client.workflow
      .getHandle(eventDeliveriesWorkflowId(merchant.merchantId))
      .describe();
    expect(described.taskQueue).toBe(deliveryTaskQueue(stack.taskQueue));
    expect(described.type).toBe('eventDeliveriesWorkflow');
  });
});

/**
 * The trigger that writes an event's deliveries matches endpoints as matchesFilter does: every
 * event type against every form of filter, on the real database. The merchant is not one of this
 * file's (no kicker delivers its jobs): only the written jobs are read.
 */
describe('the fan_out_deliveries trigger matches as matchesFilter', () => {
  let orm: MikroORM;
  let stack: PaymentStack;
  beforeAll(async () => {
    stack = await startPaymentStack('fan-out');
    orm = stack.orm;
  });
  afterAll(() => stack.close());

  it('for every event type and every filter form', async () => {
    const { merchant } = await createMerchant(orm.em.fork(), { name: 'Fan-out merchant', email: null });
    const secrets = ProviderSecrets.fromBase64(TEST_PROVIDER_SECRETS_KEY);
    const filters = [
      ['*'],
      ['payment.*'],
      ['refund.succeeded'],
      ['dispute.*', 'subscription.cancelled'],
      ['subscription.*', 'payment.failed'],
    ];
    const endpoints: Array<{ id: string; filter: string[] }> = [];
    for (const filter of filters) {
      const { endpoint } = await createWebhookEndpoint(
        orm.em.fork(),
        secrets,
        { merchantId: merchant.id, environment: 'test' },
        { url: 'https://hooks.example.com/x', enabledEvents: filter },
      );
      endpoints.push({ id: endpoint.id, filter });
    }
    const em = orm.em.fork();
    const eventIds = new Map<string, string>();
    for (const type of EVENT_TYPES) {
      const event = recordEvent(em, {
        merchant: em.getReference(Merchant, merchant.id),
        type,
        resourceId: `obj_${type}`,
        dedupeKey: `fan-out:${merchant.id}:${type}`,
        callbackUrl: null,
        environment: 'test',
        data: { id: `obj_${type.replace('.', '_')}` },
      });
      eventIds.set(event.id, type);
    }
    await em.flush();
    const rows: Array<{ event_id: string; endpoint_id: string | null }> = await orm.em
      .getConnection()
      .execute(`select event_id, endpoint_id from delivery_jobs where merchant_id = ?`, [merchant.id]);
    const written = rows.map((r) => `${eventIds.get(r.event_id)} -> ${r.endpoint_id}`).sort();
    const expected = [...EVENT_TYPES]
      .flatMap((type) => endpoints.filter((e) => matchesFilter(e.filter, type)).map((e) => `${type} -> ${e.id}`))
      .sort();
    expect(written).toEqual(expected);
    // No callbackUrl: no job without an endpoint.
    expect(rows.every((r) => r.endpoint_id !== null)).toBe(true);
  });
});
