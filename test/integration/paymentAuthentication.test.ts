import { createTestMerchant, startPaymentStack, type PaymentStack, type TestMerchant } from '../helpers/stack';
import { call, eventually } from '../helpers/http';
import { startCallbackReceiver } from '../helpers/callbackReceiver';

/**
 * Payments whose charge the processor asks the customer to authenticate (3-D Secure; PRODUCT.md,
 * "Processor lifecycle"): `requires_action` with `nextAction`, then succeeded, failed
 * (`authentication_failed`) or voided at the payment's expiry, as a merchant observes it: API
 * bodies, the events at its callbackUrl, and the sandbox ledger.
 */

const EXPIRY_SECONDS = 8;

type Receiver = Awaited<ReturnType<typeof startCallbackReceiver>>;

describe('payment authentication (3-D Secure)', () => {
  let stack: PaymentStack;
  let merchant: TestMerchant;
  let receiver: Receiver;
  let seq = 0;
  const ext = () => `auth-${Date.now()}-${++seq}`;
  const create = (extra: Record<string, unknown> = {}, externalId = ext()) =>
    call(stack.api.baseUrl, 'POST', '/payments', merchant.auth, {
      amount: 12.5,
      currency: 'EUR',
      externalId,
      customer: { email: 'auth@example.com' },
      cardToken: 'tok_3ds',
      callbackUrl: receiver.url,
      ...extra,
    });
  const get = (id: string) => call(stack.api.baseUrl, 'GET', `/payments/${id}`, merchant.auth);
  const settledOf = (id: string) =>
    eventually(
      () => get(id),
      (r) => r.body.status !== 'requires_action',
      20_000,
      200,
    );
  /** The events of one payment received at its callbackUrl, once each (a redelivery has the same id). */
  const eventsOf = (id: string) => {
    const seen = new Map<string, { type: string; data: Record<string, unknown> }>();
    for (const r of receiver.received) {
      const data = r.json.data as Record<string, unknown>;
      if (data.id === id) seen.set(r.json.id as string, { type: r.json.type as string, data });
    }
    return [...seen.values()];
  };
  const eventTypes = (id: string) => eventsOf(id).map((e) => e.type);
  const waitForEvents = (id: string, types: string[]) =>
    eventually(
      async () => eventTypes(id),
      (got) => types.every((t) => got.includes(t)),
      20_000,
      200,
    );
  const page = (body: Record<string, unknown>) => (body.nextAction as { url: string }).url;

  beforeAll(async () => {
    stack = await startPaymentStack('authentication', {
      paymentExpirySeconds: EXPIRY_SECONDS,
      callbackRetryInitialSeconds: 1,
    });
    merchant = await createTestMerchant(stack.orm, 'Authentication merchant');
    receiver = await startCallbackReceiver();
  });
  afterAll(async () => {
    await receiver.close();
    await stack.close();
  });

  it('answers 200 requires_action with nextAction; Authenticate captures once; succeeded with its events', async () => {
    const res = await create();
    expect(res.status).toBe(200);
    const id = res.body.id as string;
    expect(res.body).toMatchObject({
      status: 'requires_action',
      providerTransactionId: expect.stringMatching(/^txn_/),
      nextAction: { type: 'redirect', url: expect.stringContaining('/authenticate/txn_') },
      failureCode: null,
      amountRefundable: 0,
    });
    expect((await get(id)).body).toEqual(res.body);
    expect((await stack.ledger('capture', id)).map((e) => e.status)).toEqual(['requires_action']);
    await waitForEvents(id, ['payment.requires_action']);
    const requiresAction = eventsOf(id).find((e) => e.type === 'payment.requires_action')!;
    expect(requiresAction.data).toMatchObject({ id, status: 'requires_action', nextAction: res.body.nextAction });

    // Not refundable while the customer authenticates: as any payment not succeeded.
    const refund = await call(stack.api.baseUrl, 'POST', `/payments/${id}/refund`, merchant.auth, {
      externalId: `rf-${ext()}`,
      amount: 1,
    });
    expect(refund.status).toBe(409);
    expect(refund.body.code).toBe('payment_not_refundable');

    // The same request again: the same payment, nothing charged again.
    const again = await create({}, res.body.externalId as string);
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ id, status: 'requires_action' });

    // The customer authenticates (a script's POST, empty body).
    const done = await fetch(`${page(res.body)}/authenticate`, { method: 'POST' });
    expect(done.status).toBe(200);
    const settled = await settledOf(id);
    expect(settled.body).toMatchObject({ status: 'succeeded', nextAction: null, amountRefundable: 12.5 });
    await waitForEvents(id, ['payment.succeeded']);
    expect(eventTypes(id).sort()).toEqual(['payment.requires_action', 'payment.succeeded']);
    expect(eventsOf(id).find((e) => e.type === 'payment.succeeded')!.data).toMatchObject({
      id,
      status: 'succeeded',
      nextAction: null,
    });

    // The page posted again, either button: a clear 409, nothing captured twice.
    for (const action of ['authenticate', 'fail']) {
      const twice = await fetch(`${page(res.body)}/${action}`, { method: 'POST' });
      expect(twice.status).toBe(409);
    }
    const browser = await fetch(page(res.body), { headers: { accept: 'text/html' } });
    expect(browser.status).toBe(409);
    expect(await browser.text()).toContain('already succeeded');
    expect((await stack.ledger('capture', id)).map((e) => e.status)).toEqual(['succeeded']);
    expect((await get(id)).body).toMatchObject({ status: 'succeeded' });

    // Now refundable.
    const refunded = await call(stack.api.baseUrl, 'POST', `/payments/${id}/refund`, merchant.auth, {
      externalId: `rf-${ext()}`,
      amount: 2.5,
    });
    expect(refunded.status).toBe(200);
    expect(refunded.body).toMatchObject({ status: 'succeeded' });
  });

  it('Fail on the page: failed with authentication_failed and payment.failed', async () => {
    const res = await create();
    const id = res.body.id as string;
    expect(res.body.status).toBe('requires_action');
    const failed = await fetch(`${page(res.body)}/fail`, { method: 'POST' });
    expect(failed.status).toBe(200);
    const settled = await settledOf(id);
    expect(settled.body).toMatchObject({
      status: 'failed',
      failureCode: 'authentication_failed',
      nextAction: null,
      amountRefundable: 0,
    });
    await waitForEvents(id, ['payment.failed']);
    expect(eventTypes(id).sort()).toEqual(['payment.failed', 'payment.requires_action']);
    expect((await stack.ledger('capture', id)).map((e) => e.status)).toEqual(['failed']);
    // Authenticate after the failure captures nothing.
    expect((await fetch(`${page(res.body)}/authenticate`, { method: 'POST' })).status).toBe(409);
    expect((await stack.ledger('capture', id)).map((e) => e.status)).toEqual(['failed']);
  });

  it('not authenticated before the expiry: cancelled at the provider, voided; the page then captures nothing', async () => {
    const res = await create();
    const id = res.body.id as string;
    expect(res.body.status).toBe('requires_action');
    const voided = await eventually(
      () => get(id),
      (r) => r.body.status !== 'requires_action',
      (EXPIRY_SECONDS + 15) * 1000,
      250,
    );
    expect(voided.body).toMatchObject({ status: 'voided', nextAction: null, amountRefundable: 0 });
    await waitForEvents(id, ['payment.voided']);
    expect(eventTypes(id).sort()).toEqual(['payment.requires_action', 'payment.voided']);
    expect((await stack.ledger('capture', id)).map((e) => e.status)).toEqual(['canceled']);
    const late = await fetch(`${page(res.body)}/authenticate`, { method: 'POST' });
    expect(late.status).toBe(410);
    const browser = await fetch(page(res.body), { headers: { accept: 'text/html' } });
    expect(browser.status).toBe(410);
    expect((await stack.ledger('capture', id)).map((e) => e.status)).toEqual(['canceled']);
    expect((await get(id)).body.status).toBe('voided');
  }, 40_000);

  it('a customer who authenticated just before the expiry wins: succeeded, never voided', async () => {
    const res = await create();
    const id = res.body.id as string;
    expect(res.body.status).toBe('requires_action');
    // Listed by its status.
    const listed = await call(stack.api.baseUrl, 'GET', '/payments?status=requires_action&limit=100', merchant.auth);
    expect(listed.status).toBe(200);
    expect((listed.body.payments as Array<{ id: string }>).map((p) => p.id)).toContain(id);
    // Authenticated at the processor, its webhook lost: the expiry's cancel finds it captured.
    stack.sandboxStore.authenticationAct(res.body.providerTransactionId as string, 'authenticate');
    const settled = await eventually(
      () => get(id),
      (r) => r.body.status !== 'requires_action',
      (EXPIRY_SECONDS + 15) * 1000,
      250,
    );
    expect(settled.body).toMatchObject({ status: 'succeeded', nextAction: null });
    await waitForEvents(id, ['payment.succeeded']);
    expect(eventTypes(id).sort()).toEqual(['payment.requires_action', 'payment.succeeded']);
    expect((await stack.ledger('capture', id)).map((e) => e.status)).toEqual(['succeeded']);
  }, 40_000);

  it('the provider down while the customer authenticates: the payment follows once it answers again', async () => {
    const res = await create();
    const id = res.body.id as string;
    expect(res.body.status).toBe('requires_action');
    await stack.sandbox('/_admin/faults', { payments: 'unavailable' });
    try {
      // The page is the customer's side: it captures; our questions to the provider fail meanwhile.
      const done = await fetch(`${page(res.body)}/authenticate`, { method: 'POST' });
      expect(done.status).toBe(200);
      await new Promise((r) => setTimeout(r, 1500));
      expect((await get(id)).body.status).toBe('requires_action');
    } finally {
      await stack.sandbox('/_admin/faults', {});
    }
    const settled = await settledOf(id);
    expect(settled.body).toMatchObject({ status: 'succeeded', nextAction: null });
    expect((await stack.ledger('capture', id)).map((e) => e.status)).toEqual(['succeeded']);
  }, 40_000);

  it('tok_3ds_offsession: an API payment is on-session and captures at once', async () => {
    const res = await create({ cardToken: 'tok_3ds_offsession' });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ status: 'succeeded', nextAction: null });
    expect((await stack.ledger('capture', res.body.id as string)).map((e) => e.status)).toEqual(['succeeded']);
  });
});
