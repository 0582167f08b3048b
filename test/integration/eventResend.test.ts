import { verifyCallbackSignature } from '../../clients/typescript/src';
import { createMerchant, createKey } from '../../src/domain/merchants';
import { newId } from '../../src/ids';
import { startCallbackReceiver } from '../helpers/callbackReceiver';
import { call, eventually, type ErrorBody } from '../helpers/http';
import {
  basicAuth,
  createTestMerchant,
  registerTestMerchant,
  startPaymentStack,
  type PaymentStack,
  type TestMerchant,
} from '../helpers/stack';

/**
 * PRODUCT.md, "Events, webhook endpoints and deliveries" (decision 0070): `POST
 * /events/{id}/resend`, an endpoint disabled after 3 days of failures and enabled again, an
 * endpoint deleted while its deliveries wait. All real: the API, the delivery workers and their
 * kicker (this file's merchants only), receivers on loopback, the mail catcher.
 */
type Json = Record<string, unknown>;
interface Delivery {
  endpointId: string | null;
  url: string;
  attempt: number;
  status: 'pending' | 'succeeded' | 'failed';
  httpStatus: number | null;
  error: string | null;
  durationMs: number | null;
  at: string;
}
interface EventWithDeliveries {
  id: string;
  type: string;
  deliveries: Delivery[];
}
interface Endpoint {
  id: string;
  url: string;
  status: string;
  secret: string;
}

describe('event resend and endpoint delivery lifecycle', () => {
  let stack: PaymentStack;
  let seq = 0;
  const api = <T = Json>(method: string, path: string, auth: string, body?: unknown) =>
    call<T>(stack.api.baseUrl, method, path, auth, body);
  const sql = <T = Json>(query: string, params: unknown[] = []): Promise<T[]> =>
    stack.orm.em.getConnection().execute(query, params);
  const createEndpoint = async (auth: string, url: string, enabledEvents = ['payment.succeeded']) => {
    const res = await api<Endpoint>('POST', '/webhook-endpoints', auth, { url, enabledEvents });
    expect(res.status).toBe(200);
    return res.body;
  };
  /** A succeeded payment; answers the id of its payment.succeeded event. */
  const payEvent = async (auth: string, extra: Json = {}): Promise<string> => {
    const res = await api('POST', '/payments', auth, {
      amount: 10,
      currency: 'USD',
      externalId: `resend-${Date.now()}-${++seq}`,
      customer: { email: 'c@example.com' },
      cardToken: 'tok_success',
      ...extra,
    });
    expect(res.body).toMatchObject({ status: 'succeeded' });
    const listed = await eventually(
      () =>
        api<{ events: Array<{ id: string }> }>('GET', `/events?type=payment.succeeded&objectId=${res.body.id}`, auth),
      (r) => r.body.events?.length === 1,
    );
    return listed.body.events[0]!.id;
  };
  const getEvent = (auth: string, eventId: string) => api<EventWithDeliveries>('GET', `/events/${eventId}`, auth);
  /** The event once none of its attempts is pending, and it has `count` of them. */
  const settled = (auth: string, eventId: string, count: number) =>
    eventually(
      () => getEvent(auth, eventId),
      (r) => r.body.deliveries?.length === count && r.body.deliveries.every((d) => d.status !== 'pending'),
    );
  /** The event once it has an attempt and none is pending (a failing one may have more by then). */
  const attempted = (auth: string, eventId: string) =>
    eventually(
      () => getEvent(auth, eventId),
      (r) => r.body.deliveries?.length >= 1 && r.body.deliveries.every((d) => d.status !== 'pending'),
    );
  const resend = (auth: string, eventId: string, body: unknown) =>
    api<{ deliveries: Delivery[] }>('POST', `/events/${eventId}/resend`, auth, body);
  const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
  const pendingDelivery = (endpointId: string | null, url: string, attempt: number) => ({
    endpointId,
    url,
    attempt,
    status: 'pending',
    httpStatus: null,
    error: null,
    durationMs: null,
    at: expect.stringMatching(/Z$/),
  });

  beforeAll(async () => {
    stack = await startPaymentStack('event-resend', { callbackRetryInitialSeconds: 1 });
  });
  afterAll(() => stack.close());

  describe('POST /events/{id}/resend', () => {
    it('to one endpoint after it succeeded: 202, the receiver gets the same id and body again, attempt 2', async () => {
      const merchant = await createTestMerchant(stack.orm, 'Resend one');
      const receiver = await startCallbackReceiver();
      try {
        const endpoint = await createEndpoint(merchant.auth, receiver.url);
        const eventId = await payEvent(merchant.auth);
        await settled(merchant.auth, eventId, 1);
        expect(receiver.received).toHaveLength(1);

        const res = await resend(merchant.auth, eventId, { endpointId: endpoint.id });
        expect(res.status).toBe(202);
        expect(res.body).toEqual({ deliveries: [pendingDelivery(endpoint.id, receiver.url, 2)] });
        // Shown at once, pending, on the event.
        const now = await getEvent(merchant.auth, eventId);
        expect(now.body.deliveries.map((d) => [d.attempt, d.status])).toEqual([
          [1, 'succeeded'],
          [2, expect.stringMatching(/^(pending|succeeded)$/)],
        ]);

        await eventually(
          async () => receiver.received.length,
          (n) => n === 2,
        );
        const [first, again] = receiver.received;
        expect(again!.eventId).toBe(eventId);
        expect(again!.eventId).toBe(first!.eventId);
        expect(again!.body).toBe(first!.body);
        expect(verifyCallbackSignature(again!.body, again!.signature, endpoint.secret)).toBe(true);
        const shown = await settled(merchant.auth, eventId, 2);
        expect(shown.body.deliveries).toEqual([
          expect.objectContaining({ endpointId: endpoint.id, attempt: 1, status: 'succeeded', httpStatus: 200 }),
          {
            endpointId: endpoint.id,
            url: receiver.url,
            attempt: 2,
            status: 'succeeded',
            httpStatus: 200,
            error: null,
            durationMs: expect.any(Number),
            at: expect.stringMatching(/Z$/),
          },
        ]);
        await pause(500);
        expect(receiver.received).toHaveLength(2);
      } finally {
        await receiver.close();
      }
    });

    it('`{}`: the callbackUrl and every enabled endpoint the event went to; not a disabled, deleted or unmatched one', async () => {
      const merchant = await createTestMerchant(stack.orm, 'Resend all');
      const [callback, a, b, disabled, deleted, unmatched] = await Promise.all(
        Array.from({ length: 6 }, () => startCallbackReceiver()),
      );
      try {
        const endpointA = await createEndpoint(merchant.auth, a!.url);
        const endpointB = await createEndpoint(merchant.auth, b!.url, ['payment.*']);
        const endpointDisabled = await createEndpoint(merchant.auth, disabled!.url);
        const endpointDeleted = await createEndpoint(merchant.auth, deleted!.url);
        await createEndpoint(merchant.auth, unmatched!.url, ['refund.*']);
        const eventId = await payEvent(merchant.auth, { callbackUrl: callback!.url });
        await settled(merchant.auth, eventId, 5);

        expect(
          (await api('PATCH', `/webhook-endpoints/${endpointDisabled.id}`, merchant.auth, { status: 'disabled' }))
            .status,
        ).toBe(200);
        expect((await api('DELETE', `/webhook-endpoints/${endpointDeleted.id}`, merchant.auth)).status).toBe(200);

        const res = await resend(merchant.auth, eventId, {});
        expect(res.status).toBe(202);
        expect(res.body.deliveries).toHaveLength(3);
        expect(res.body.deliveries).toEqual(
          expect.arrayContaining([
            pendingDelivery(null, callback!.url, 2),
            pendingDelivery(endpointA.id, a!.url, 2),
            pendingDelivery(endpointB.id, b!.url, 2),
          ]),
        );
        const shown = await settled(merchant.auth, eventId, 8);
        expect(shown.body.deliveries.filter((d) => d.attempt === 2).every((d) => d.status === 'succeeded')).toBe(true);
        for (const r of [callback!, a!, b!]) {
          expect(r.received.map((c) => c.eventId)).toEqual([eventId, eventId]);
          expect(r.received[1]!.body).toBe(r.received[0]!.body);
        }
        await pause(500);
        expect(disabled!.received).toHaveLength(1);
        expect(deleted!.received).toHaveLength(1);
        expect(unmatched!.received).toHaveLength(0);
      } finally {
        await Promise.all([callback, a, b, disabled, deleted, unmatched].map((r) => r!.close()));
      }
    });

    it('nothing to resend to (no callbackUrl, no endpoint): 202 with deliveries []', async () => {
      const merchant = await createTestMerchant(stack.orm, 'Resend nowhere');
      const eventId = await payEvent(merchant.auth);
      const res = await resend(merchant.auth, eventId, {});
      expect(res).toMatchObject({ status: 202, body: { deliveries: [] } });
      expect((await getEvent(merchant.auth, eventId)).body.deliveries).toEqual([]);
    });

    it("another merchant's or environment's event, an unknown event or endpoint, another merchant's endpoint: 404, nothing sent", async () => {
      const merchant = await createTestMerchant(stack.orm, 'Resend scoping');
      const other = await createTestMerchant(stack.orm, 'Resend scoping other');
      const live = await createKey(stack.orm.em.fork(), merchant.merchantId, { environment: 'live', role: 'merchant' });
      const liveAuth = basicAuth(live.apiKey.publicKey, live.secretKey);
      const receiver = await startCallbackReceiver();
      try {
        const endpoint = await createEndpoint(merchant.auth, receiver.url);
        const othersEndpoint = await createEndpoint(other.auth, 'https://hooks.example.com/other');
        const liveEndpoint = await createEndpoint(liveAuth, 'https://hooks.example.com/live');
        const eventId = await payEvent(merchant.auth);
        await settled(merchant.auth, eventId, 1);

        const notFound = async (auth: string, id: string, body: unknown, what: string) => {
          const res = await resend(auth, id, body);
          expect([id, res.status, res.body]).toEqual([
            id,
            404,
            { code: 'not_found', message: `${what} not found.`, details: {} },
          ]);
        };
        await notFound(other.auth, eventId, {}, 'Event');
        await notFound(other.auth, eventId, { endpointId: othersEndpoint.id }, 'Event');
        await notFound(liveAuth, eventId, {}, 'Event');
        await notFound(merchant.auth, newId('event'), {}, 'Event');
        await notFound(merchant.auth, 'evt_nope', {}, 'Event');
        await notFound(merchant.auth, eventId, { endpointId: newId('webhookEndpoint') }, 'Webhook endpoint');
        await notFound(merchant.auth, eventId, { endpointId: 'garbage' }, 'Webhook endpoint');
        await notFound(merchant.auth, eventId, { endpointId: othersEndpoint.id }, 'Webhook endpoint');
        await notFound(merchant.auth, eventId, { endpointId: liveEndpoint.id }, 'Webhook endpoint');

        await pause(500);
        expect(receiver.received).toHaveLength(1);
        expect((await getEvent(merchant.auth, eventId)).body.deliveries).toHaveLength(1);
        expect(await sql(`select id from delivery_jobs where event_id = ?`, [eventId])).toHaveLength(1);
        expect(endpoint.id).toMatch(/^we_/);
      } finally {
        await receiver.close();
      }
    });

    it('a disabled endpoint named: 409 webhook_endpoint_disabled, nothing queued', async () => {
      const merchant = await createTestMerchant(stack.orm, 'Resend disabled');
      const receiver = await startCallbackReceiver();
      try {
        const endpoint = await createEndpoint(merchant.auth, receiver.url);
        const eventId = await payEvent(merchant.auth);
        await settled(merchant.auth, eventId, 1);
        await api('PATCH', `/webhook-endpoints/${endpoint.id}`, merchant.auth, { status: 'disabled' });

        const res = await resend(merchant.auth, eventId, { endpointId: endpoint.id });
        expect(res.status).toBe(409);
        expect(res.body).toEqual({
          code: 'webhook_endpoint_disabled',
          message: expect.stringContaining('disabled'),
          details: { endpointId: endpoint.id },
        });
        // `{}` leaves it out: nothing to resend to.
        expect(await resend(merchant.auth, eventId, {})).toMatchObject({ status: 202, body: { deliveries: [] } });
        await pause(500);
        expect(receiver.received).toHaveLength(1);
        expect((await getEvent(merchant.auth, eventId)).body.deliveries).toHaveLength(1);
      } finally {
        await receiver.close();
      }
    });

    it.each([
      ['endpointId not a string', { endpointId: 5 }, { issues: [expect.objectContaining({ path: 'endpointId' })] }],
      [
        'endpointId too long',
        { endpointId: `we_${'x'.repeat(80)}` },
        { issues: [expect.objectContaining({ path: 'endpointId', code: 'too_big' })] },
      ],
      ['an unknown field', { endpointId: 'we_x', url: 'https://x.example.com' }, { unknownFields: ['url'] }],
      ['not an object', ['we_x'], { issues: [expect.objectContaining({ code: 'invalid_type' })] }],
    ])('a bad body (%s): 400 validation_error with details', async (_name, body, details) => {
      const merchant = await createTestMerchant(stack.orm, 'Resend bad body');
      const eventId = await payEvent(merchant.auth);
      const res = await call<ErrorBody>(stack.api.baseUrl, 'POST', `/events/${eventId}/resend`, merchant.auth, body);
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({ code: 'validation_error', message: expect.any(String), details });
    });

    it('during a secret rotation the resent delivery carries both signatures (t=..,v1=<new>,v1=<old>)', async () => {
      const merchant = await createTestMerchant(stack.orm, 'Resend rotation');
      const receiver = await startCallbackReceiver();
      try {
        const endpoint = await createEndpoint(merchant.auth, receiver.url);
        const eventId = await payEvent(merchant.auth);
        await settled(merchant.auth, eventId, 1);
        const rotated = await api<Endpoint>('POST', `/webhook-endpoints/${endpoint.id}/rotate-secret`, merchant.auth, {
          overlapHours: 1,
        });
        expect(rotated.status).toBe(200);

        expect((await resend(merchant.auth, eventId, { endpointId: endpoint.id })).status).toBe(202);
        await eventually(
          async () => receiver.received.length,
          (n) => n === 2,
        );
        const [before, during] = receiver.received;
        expect(before!.signature).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/);
        expect(during!.signature).toMatch(/^t=\d+,v1=[0-9a-f]{64},v1=[0-9a-f]{64}$/);
        const [, newMac, oldMac] = during!.signature!.split(',');
        const only = (mac: string) => `${during!.signature!.split(',')[0]},${mac}`;
        expect(verifyCallbackSignature(during!.body, only(newMac!), rotated.body.secret)).toBe(true);
        expect(verifyCallbackSignature(during!.body, only(oldMac!), endpoint.secret)).toBe(true);
        expect(verifyCallbackSignature(during!.body, during!.signature, [rotated.body.secret, endpoint.secret])).toBe(
          true,
        );
        expect(verifyCallbackSignature(during!.body, during!.signature, 'whsec_wrong')).toBe(false);
        expect(during!.body).toBe(before!.body);
      } finally {
        await receiver.close();
      }
    });
  });

  it('is documented: 202 with ResentEvent, a strict body, 404, 409 webhook_endpoint_disabled', async () => {
    type Op = {
      operationId: string;
      requestBody: { content: { 'application/json': { schema: Json } } };
      responses: Record<string, { description: string; content: { 'application/json': { schema: Json } } }>;
    };
    const doc = (await (await fetch(`${stack.api.baseUrl}/openapi.json`)).json()) as {
      paths: Record<string, Record<string, Op>>;
      info: { description: string };
      components: { schemas: Record<string, Json> };
    };
    const op = doc.paths['/events/{eventId}/resend']!.post!;
    expect(op.operationId).toBe('resendEvent');
    expect(op.responses['200']).toBeUndefined();
    expect(op.responses['202']!.content['application/json'].schema).toEqual({
      $ref: '#/components/schemas/ResentEvent',
    });
    expect(doc.components.schemas.ResentEvent).toMatchObject({
      properties: { deliveries: { type: 'array', items: { $ref: '#/components/schemas/EventDelivery' } } },
    });
    expect(op.requestBody.content['application/json'].schema).toMatchObject({
      type: 'object',
      properties: { endpointId: { type: 'string', maxLength: 64 } },
      additionalProperties: false,
    });
    expect(op.responses['400']!.description).toContain('`validation_error`');
    expect(op.responses['404']!.description).toContain('`not_found`');
    expect(op.responses['409']!.description).toBe('Conflict: `webhook_endpoint_disabled`');
    expect(doc.info.description).toContain('- `webhook_endpoint_disabled` (409): ');
    // Every other route still answers 200.
    expect(doc.paths['/events/{eventId}']!.get!.responses['200']).toBeDefined();
  });

  describe('endpoint disabled, enabled again, deleted', () => {
    const failingSince = async (endpointId: string) =>
      (
        await sql<{ failing_since: Date | null }>(`select failing_since from webhook_endpoints where id = ?`, [
          endpointId,
        ])
      )[0]!.failing_since;

    it('failing for 3 days: disabled, its pending deliveries stop, the merchant is emailed; enabled again, new events reach it', async () => {
      const merchant = await createTestMerchant(stack.orm, 'Endpoint disabled');
      const receiver = await startCallbackReceiver();
      receiver.respondWith(500);
      try {
        const endpoint = await createEndpoint(merchant.auth, receiver.url);
        const first = await payEvent(merchant.auth);
        await attempted(merchant.auth, first);
        // Its retry waits (1 s, then doubling): pushed an hour away, once no attempt of it is in
        // flight, so that it is still pending, not yet due, when the endpoint is disabled below.
        await eventually(
          async () =>
            (
              await sql(
                `update delivery_jobs set next_attempt_at = now() + interval '1 hour'
                  where event_id = ? and status = 'pending' and (claimed_until is null or claimed_until < now())
                  returning id`,
                [first],
              )
            ).length,
          (n) => n === 1,
        );
        // (Under load its first retry may have gone before: the counts below start from here.)
        const firstAttempts = (
          await eventually(
            () => getEvent(merchant.auth, first),
            (r) => r.body.deliveries.every((d) => d.status !== 'pending'),
          )
        ).body.deliveries.length;
        const receivedBefore = receiver.received.length;
        expect(await failingSince(endpoint.id)).not.toBeNull();

        // A test cannot wait 3 days: the endpoint's failing streak is moved to have begun 3 days
        // and a minute ago, as if every delivery since had failed. The next failure disables it.
        await sql(`update webhook_endpoints set failing_since = now() - interval '3 days 1 minute' where id = ?`, [
          endpoint.id,
        ]);
        expect((await api<Endpoint>('GET', `/webhook-endpoints/${endpoint.id}`, merchant.auth)).body.status).toBe(
          'enabled',
        );
        const second = await payEvent(merchant.auth);
        await eventually(
          () => api<Endpoint>('GET', `/webhook-endpoints/${endpoint.id}`, merchant.auth),
          (r) => r.body.status === 'disabled',
        );
        const shown = await settled(merchant.auth, second, 1);
        expect(shown.body.deliveries).toEqual([
          expect.objectContaining({ endpointId: endpoint.id, attempt: 1, status: 'failed', httpStatus: 500 }),
        ]);
        // Its pending deliveries stopped: the first event's waiting retry and the second's.
        expect(
          await sql(`select status, last_error from delivery_jobs where endpoint_id = ? order by created_at`, [
            endpoint.id,
          ]),
        ).toEqual([
          { status: 'cancelled', last_error: 'endpoint disabled' },
          { status: 'cancelled', last_error: 'endpoint disabled' },
        ]);
        const email = await eventually(
          async () => stack.mail().filter((m) => m.text.includes(endpoint.id)),
          (found) => found.length >= 1,
        );
        expect(email).toEqual([
          expect.objectContaining({
            to: 'merchant@example.com',
            subject: `Webhook endpoint disabled: ${receiver.url}`,
          }),
        ]);
        expect(email[0]!.text).toContain(`PATCH /webhook-endpoints/${endpoint.id}`);
        await pause(2500);
        expect(receiver.received.slice(receivedBefore).map((c) => c.eventId)).toEqual([second]);
        expect((await getEvent(merchant.auth, first)).body.deliveries).toHaveLength(firstAttempts);

        // Enabled again: the streak starts over, new events reach it; the missed ones are not sent.
        receiver.respondWith(200);
        const enabled = await api<Endpoint>('PATCH', `/webhook-endpoints/${endpoint.id}`, merchant.auth, {
          status: 'enabled',
        });
        expect(enabled).toMatchObject({ status: 200, body: { status: 'enabled' } });
        expect(await failingSince(endpoint.id)).toBeNull();
        const third = await payEvent(merchant.auth);
        const delivered = await settled(merchant.auth, third, 1);
        expect(delivered.body.deliveries).toEqual([
          expect.objectContaining({ endpointId: endpoint.id, attempt: 1, status: 'succeeded', httpStatus: 200 }),
        ]);
        expect(receiver.received.slice(receivedBefore).map((c) => c.eventId)).toEqual([second, third]);
        expect(stack.mail().filter((m) => m.text.includes(endpoint.id))).toHaveLength(1);
      } finally {
        await receiver.close();
      }
    });

    it('a delivery that succeeds ends the failing streak: the next failure starts a new one, not disabled', async () => {
      const merchant = await createTestMerchant(stack.orm, 'Endpoint recovers');
      const receiver = await startCallbackReceiver();
      try {
        const endpoint = await createEndpoint(merchant.auth, receiver.url);
        // As if it had been failing for 3 days and a minute (a test cannot wait 3 days).
        await sql(`update webhook_endpoints set failing_since = now() - interval '3 days 1 minute' where id = ?`, [
          endpoint.id,
        ]);
        const ok = await payEvent(merchant.auth);
        await settled(merchant.auth, ok, 1);
        // The streak ends just after the attempt is recorded (the step's next statement).
        expect(
          await eventually(
            () => failingSince(endpoint.id),
            (since) => since === null,
            5_000,
          ),
        ).toBeNull();

        receiver.respondWith(500);
        const failing = await payEvent(merchant.auth);
        const shown = await settled(merchant.auth, failing, 1);
        expect(shown.body.deliveries[0]).toMatchObject({ status: 'failed', httpStatus: 500 });
        const since = await eventually(
          () => failingSince(endpoint.id),
          (at) => at !== null,
          5_000,
        );
        expect(Date.now() - new Date(since!).getTime()).toBeLessThan(60_000);
        expect((await api<Endpoint>('GET', `/webhook-endpoints/${endpoint.id}`, merchant.auth)).body.status).toBe(
          'enabled',
        );
        expect(stack.mail().filter((m) => m.text.includes(endpoint.id))).toHaveLength(0);
      } finally {
        await receiver.close();
      }
    });

    it('deleted while its delivery waits for a retry: nothing more is POSTed, its attempts stay on the event, never a 500', async () => {
      const merchant = await createTestMerchant(stack.orm, 'Endpoint deleted');
      const receiver = await startCallbackReceiver();
      receiver.respondWith(500);
      try {
        const endpoint = await createEndpoint(merchant.auth, receiver.url);
        const eventId = await payEvent(merchant.auth);
        await attempted(merchant.auth, eventId);
        expect((await api('DELETE', `/webhook-endpoints/${endpoint.id}`, merchant.auth)).body).toEqual({
          id: endpoint.id,
          deleted: true,
        });
        // Its jobs went with it (cascade).
        expect(await sql(`select id from delivery_jobs where endpoint_id = ?`, [endpoint.id])).toEqual([]);
        // An attempt in flight at the DELETE ends as it ends; nothing is POSTed after it.
        const shown = await attempted(merchant.auth, eventId);
        const sent = receiver.received.length;
        // The retry was due a second after the first attempt (then 2 s): nothing comes.
        await pause(3500);
        expect(receiver.received).toHaveLength(sent);
        expect(shown.status).toBe(200);
        expect(shown.body.deliveries.length).toBe(sent);
        expect(shown.body.deliveries[0]).toEqual(
          expect.objectContaining({ endpointId: endpoint.id, url: receiver.url, attempt: 1, status: 'failed' }),
        );
        expect((await getEvent(merchant.auth, eventId)).body.deliveries).toEqual(shown.body.deliveries);
        expect(await resend(merchant.auth, eventId, {})).toMatchObject({ status: 202, body: { deliveries: [] } });
        expect((await resend(merchant.auth, eventId, { endpointId: endpoint.id })).status).toBe(404);
      } finally {
        await receiver.close();
      }
    });

    it('deleted or disabled with a resend not yet begun: the announced attempt ends failed, never POSTed', async () => {
      // A merchant this file's delivery kicker does not wake yet: its deliveries wait, not due to
      // anyone, until it is registered below.
      const { merchant, apiKey, secretKey } = await createMerchant(stack.orm.em.fork(), {
        name: 'Resend then delete',
        email: 'merchant@example.com',
      });
      const waiting: TestMerchant = {
        merchantId: merchant.id,
        apiKeyId: apiKey.id,
        publicKey: apiKey.publicKey,
        secretKey,
        auth: basicAuth(apiKey.publicKey, secretKey),
      };
      const [toDelete, toDisable] = await Promise.all([startCallbackReceiver(), startCallbackReceiver()]);
      try {
        const deleted = await createEndpoint(waiting.auth, toDelete!.url);
        const disabled = await createEndpoint(waiting.auth, toDisable!.url);
        const eventId = await payEvent(waiting.auth);
        const res = await resend(waiting.auth, eventId, {});
        expect(res.status).toBe(202);
        expect(res.body.deliveries).toEqual(
          expect.arrayContaining([
            pendingDelivery(deleted.id, toDelete!.url, 1),
            pendingDelivery(disabled.id, toDisable!.url, 1),
          ]),
        );

        expect((await api('DELETE', `/webhook-endpoints/${deleted.id}`, waiting.auth)).status).toBe(200);
        expect(
          (await api('PATCH', `/webhook-endpoints/${disabled.id}`, waiting.auth, { status: 'disabled' })).status,
        ).toBe(200);
        const shown = await getEvent(waiting.auth, eventId);
        expect(shown.status).toBe(200);
        expect(shown.body.deliveries).toEqual(
          expect.arrayContaining([
            expect.objectContaining({
              endpointId: deleted.id,
              attempt: 1,
              status: 'failed',
              error: 'endpoint deleted',
            }),
            expect.objectContaining({
              endpointId: disabled.id,
              attempt: 1,
              status: 'failed',
              error: 'endpoint disabled',
            }),
          ]),
        );
        expect(shown.body.deliveries).toHaveLength(2);

        // Now its deliveries are woken: nothing is left to send to either.
        registerTestMerchant(merchant.id);
        await api('PATCH', `/webhook-endpoints/${disabled.id}`, waiting.auth, { status: 'enabled' });
        await pause(1500);
        expect(toDelete!.received).toHaveLength(0);
        expect(toDisable!.received).toHaveLength(0);
        expect((await getEvent(waiting.auth, eventId)).body.deliveries).toHaveLength(2);
      } finally {
        await Promise.all([toDelete!.close(), toDisable!.close()]);
      }
    });
  });
});
