import { Invoice, Subscription } from '../../src/db/entities';
import { createKey, setMerchantStatus } from '../../src/domain/merchants';
import { newId } from '../../src/ids';
import { call, eventually, type ErrorBody, type JsonResponse } from '../helpers/http';
import {
  basicAuth,
  createTestMerchant,
  startPaymentStack,
  type PaymentStack,
  type TestMerchant,
} from '../helpers/stack';
import { sleep, subscriptionClient, succeededByInvoice, type SubscriptionBody } from '../helpers/subscriptions';

/**
 * POST /subscriptions/{subscriptionId}/payment-method (PRODUCT.md "Subscription card update")
 * on the real stack: a token for an active subscription (the next renewal charges it), a
 * past_due one charged at once (one capture per invoice on the sandbox ledger), a declining new
 * card restarting the retry schedule, the hosted page, and every refusal. A one-second billing day.
 */
describe('subscriptions: card update', () => {
  const DAY_MS = 1000;
  let stack: PaymentStack;
  let merchant: TestMerchant;
  let other: TestMerchant;
  let subs: ReturnType<typeof subscriptionClient>;

  const update = (id: string, body: unknown, auth: string | undefined = merchant.auth) =>
    call<SubscriptionBody>(stack.api.baseUrl, 'POST', `/subscriptions/${id}/payment-method`, auth, body);
  const cardOf = async (id: string) =>
    (await stack.orm.em.fork().findOneOrFail(Subscription, { id }, { fields: ['cardToken'] })).cardToken;
  const invoice = (id: string) => stack.orm.em.fork().findOneOrFail(Invoice, { id });

  function expectError(res: JsonResponse<unknown>, status: number, code: string): ErrorBody {
    expect({ status: res.status, body: res.body }).toEqual({
      status,
      body: { code, message: expect.any(String), details: expect.any(Object) },
    });
    return res.body as ErrorBody;
  }

  /** A card the sandbox saved for a customer (as a hosted page with saveCard would). */
  async function savedCard(): Promise<string> {
    const res = await stack.provider(
      '/v1/payments',
      { amount: 1, currency: 'USD', mode: 'card', cardToken: 'tok_success', saveCard: true },
      `save-${Date.now()}-${Math.random()}`,
    );
    const body = (await res.json()) as { savedCardToken: string };
    expect(body.savedCardToken).toMatch(/^tok_saved_/);
    return body.savedCardToken;
  }

  /** A past_due subscription: its first charge declined, the next retry far away. */
  async function pastDue(patch: Record<string, unknown> = {}): Promise<SubscriptionBody> {
    const created = await subs.create({ cardToken: 'tok_decline', billingIntervalDays: 30, ...patch });
    expect(created.body).toMatchObject({ status: 'past_due', latestInvoice: { attempts: 1, status: 'open' } });
    return created.body;
  }

  beforeAll(async () => {
    stack = await startPaymentStack('subcard', {
      billingDaySeconds: DAY_MS / 1000,
      subscriptionAuthorizationExpirySeconds: 30,
      authCacheTtlMs: 100,
    });
    [merchant, other] = await Promise.all([
      createTestMerchant(stack.orm, 'Card update merchant'),
      createTestMerchant(stack.orm, 'Card update other merchant'),
    ]);
    subs = subscriptionClient(stack, merchant);
  });
  afterEach(() => stack.sandbox('/_admin/faults', {}));
  afterAll(() => stack.close());

  it('an active subscription takes a new token; the next renewal charges it', async () => {
    const created = await subs.create({ cardToken: 'tok_success', billingIntervalDays: 3, retryScheduleDays: [30] });
    expect(created.body.status).toBe('active');
    const id = created.body.id as string;
    const card = await savedCard();

    const res = await update(id, { cardToken: card });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id, status: 'active', latestInvoice: { status: 'paid', attempts: 1 } });
    expect(await cardOf(id)).toBe(card);
    // Nothing was charged by the update itself.
    expect(await subs.captures(id)).toHaveLength(1);

    // A card whose charges are refused: the renewal shows it is the one charged.
    expect((await update(id, { cardToken: 'tok_insufficient_funds' })).status).toBe(200);
    const pastDueNow = await subs.until(id, (s) => s.status === 'past_due', 10_000);
    expect(pastDueNow.latestInvoice).toMatchObject({ attempts: 1, failureCode: 'insufficient_funds' });
    // And back to the saved card: it is charged at once (past_due), and the renewal is paid.
    const back = await update(id, { cardToken: card });
    expect(back.body).toMatchObject({ status: 'active', latestInvoice: { status: 'paid', attempts: 2 } });
    await subs.cancel(id);
    const captures = await subs.captures(id);
    expect(captures.map((c) => c.status)).toEqual(['succeeded', 'failed', 'succeeded']);
    for (const n of succeededByInvoice(captures).values()) expect(n).toBe(1);
  });

  it('a past_due subscription is charged at once with the new card: paid once, a new attempt key', async () => {
    const sub = await pastDue({ retryScheduleDays: [30] });
    const id = sub.id as string;
    const invoiceId = sub.latestInvoice.id as string;

    const res = await update(id, { cardToken: 'tok_success' });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      status: 'active',
      latestInvoice: { id: invoiceId, status: 'paid', attempts: 2, nextAttemptAt: null, failureCode: null },
    });
    await sleep(1500);
    const captures = (await subs.captures(id)).filter((c) => c.metadata.invoiceId === invoiceId);
    expect(captures.map((c) => c.status)).toEqual(['failed', 'succeeded']);
    expect(captures[0]!.idempotencyKey).toBe(invoiceId);
    expect(captures[1]!.idempotencyKey).not.toBe(invoiceId);
    expect(succeededByInvoice(captures).get(invoiceId)).toBe(1);
    expect((await invoice(invoiceId)).attempts).toBe(2);
    const receipts = await eventually(
      async () => subs.mail(id).filter((e) => /receipt|Payment received/i.test(e.subject)),
      (l) => l.length >= 1,
    );
    expect(receipts).toHaveLength(1);
    await subs.cancel(id);
  });

  it('a new card that is declined too restarts the retry schedule from its first delay', async () => {
    // Without a restart the next retry would be the schedule's second entry (20 days).
    const sub = await pastDue({ retryScheduleDays: [2, 20] });
    const id = sub.id as string;
    const invoiceId = sub.latestInvoice.id as string;

    const res = await update(id, { cardToken: 'tok_insufficient_funds' });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      status: 'past_due',
      latestInvoice: { attempts: 2, failureCode: 'insufficient_funds', nextAttemptAt: expect.any(String) },
    });
    const row = await invoice(invoiceId);
    expect(row.nextAttemptAt!.getTime() - row.updatedAt.getTime()).toBe(2 * DAY_MS);
    // The schedule goes on from there: the retry two days later is made with the new card.
    const retried = await eventually(
      () => invoice(invoiceId),
      (i) => i.attempts === 3,
      10_000,
    );
    expect(retried.failureCode).toBe('insufficient_funds');
    expect(retried.nextAttemptAt!.getTime() - retried.updatedAt.getTime()).toBe(20 * DAY_MS);
    await subs.cancel(id);
    const captures = await subs.captures(id);
    expect(captures.map((c) => c.status)).toEqual(['failed', 'failed', 'failed']);
    expect(new Set(captures.map((c) => c.idempotencyKey)).size).toBe(3);
  });

  it('a hosted update ({}) answers the page; completing it switches the card and charges a past_due one', async () => {
    const sub = await pastDue({ retryScheduleDays: [30], returnUrl: 'https://shop.example/card-done' });
    const id = sub.id as string;
    const invoiceId = sub.latestInvoice.id as string;

    const res = await update(id, {});
    expect(res.status).toBe(200);
    expect(res.body.status).toBe('past_due');
    expect(res.body.redirectUrl).toMatch(new RegExp(`^${stack.sandboxUrl}/checkout/txn_[0-9a-f]+$`));
    // The same request again: the same page (nothing new created), the old card still on file.
    const again = await update(id, {});
    expect(again.body.redirectUrl).toBe(res.body.redirectUrl);
    expect(await cardOf(id)).toBe('tok_decline');

    const pay = await fetch(`${res.body.redirectUrl as string}/pay`, { method: 'POST' });
    expect(pay.status).toBeLessThan(400);
    const active = await subs.until(id, (s) => s.status === 'active', 10_000);
    expect(active.latestInvoice).toMatchObject({ id: invoiceId, status: 'paid', attempts: 2 });
    expect(await cardOf(id)).toMatch(/^tok_saved_/);
    const captures = (await subs.captures(id)).filter((c) => c.metadata.invoiceId === invoiceId);
    expect(captures.map((c) => c.status)).toEqual(['failed', 'succeeded']);
    await subs.cancel(id);
  });

  it('a hosted update of an active subscription keeps the old card until completed', async () => {
    const created = await subs.create({ cardToken: 'tok_success', billingIntervalDays: 30 });
    const id = created.body.id as string;
    const res = await update(id, {});
    expect(res.body).toMatchObject({ status: 'active', redirectUrl: expect.stringMatching(/\/checkout\/txn_/) });
    expect(await cardOf(id)).toBe('tok_success');
    await fetch(`${res.body.redirectUrl as string}/pay`, { method: 'POST' });
    await eventually(
      () => cardOf(id),
      (card) => card?.startsWith('tok_saved_') === true,
      10_000,
    );
    expect(await subs.captures(id)).toHaveLength(1);
    // A token after that replaces the page's card.
    expect((await update(id, { cardToken: 'tok_success' })).status).toBe(200);
    expect(await cardOf(id)).toBe('tok_success');
    await subs.cancel(id);
  });

  it('the same request twice (at once, then again) is one update: one charge at once', async () => {
    const sub = await pastDue({ retryScheduleDays: [30] });
    const id = sub.id as string;
    const invoiceId = sub.latestInvoice.id as string;
    const [a, b] = await Promise.all([
      update(id, { cardToken: 'tok_insufficient_funds' }),
      update(id, { cardToken: 'tok_insufficient_funds' }),
    ]);
    expect([a.status, b.status]).toEqual([200, 200]);
    const again = await update(id, { cardToken: 'tok_insufficient_funds' });
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ status: 'past_due', latestInvoice: { attempts: 2 } });
    await sleep(1000);
    expect((await invoice(invoiceId)).attempts).toBe(2);
    expect(await subs.captures(id)).toHaveLength(2);
    await subs.cancel(id);
  });

  it('an unknown token is 400 invalid_card_token and changes nothing', async () => {
    const sub = await pastDue({ retryScheduleDays: [30] });
    const id = sub.id as string;
    const res = await update(id, { cardToken: 'tok_nobody_issued' });
    expectError(res, 400, 'invalid_card_token');
    expect(await cardOf(id)).toBe('tok_decline');
    expect(await subs.captures(id)).toHaveLength(1);
    expect((await subs.get(id)).body).toMatchObject({ status: 'past_due', latestInvoice: { attempts: 1 } });
    await subs.cancel(id);
  });

  it('409 subscription_not_updatable for a cancelled or a pending subscription', async () => {
    const created = await subs.create({ cardToken: 'tok_success', billingIntervalDays: 30 });
    const id = created.body.id as string;
    await subs.cancel(id);
    const res = await update(id, { cardToken: 'tok_success' });
    expect(expectError(res, 409, 'subscription_not_updatable').details).toEqual({ status: 'cancelled' });
    expectError(await update(id, {}), 409, 'subscription_not_updatable');

    const pending = await subs.create({});
    expect(pending.body.status).toBe('pending');
    expectError(
      await update(pending.body.id as string, { cardToken: 'tok_success' }),
      409,
      'subscription_not_updatable',
    );
    await subs.cancel(pending.body.id as string);
    expect(await subs.captures(id)).toHaveLength(1);
  });

  it("another merchant's subscription, an unknown and a malformed id are 404 not_found", async () => {
    const created = await subs.create({ cardToken: 'tok_success', billingIntervalDays: 30 });
    const id = created.body.id as string;
    for (const [target, auth] of [
      [id, other.auth],
      [newId('subscription'), merchant.auth],
      ['sub_nope', merchant.auth],
      [newId('payment'), merchant.auth],
    ] as const) {
      expect(expectError(await update(target, { cardToken: 'tok_success' }, auth), 404, 'not_found').details).toEqual(
        {},
      );
    }
    expect(await cardOf(id)).toBe('tok_success');
    await subs.cancel(id);
  });

  it('auth matrix: 401 without or with wrong credentials, 403 for an admin key and an inactive merchant', async () => {
    const id = newId('subscription');
    const none = await call(stack.api.baseUrl, 'POST', `/subscriptions/${id}/payment-method`, undefined, {
      cardToken: 'tok_success',
    });
    expectError(none, 401, 'unauthorized');
    expect(none.headers.get('www-authenticate')).toMatch(/^Basic/);
    expectError(
      await update(id, { cardToken: 'tok_success' }, basicAuth(merchant.publicKey, 'sk_wrong')),
      401,
      'unauthorized',
    );
    const admin = await createKey(stack.orm.em.fork(), merchant.merchantId, { environment: 'test', role: 'admin' });
    expectError(
      await update(id, { cardToken: 'tok_success' }, basicAuth(admin.apiKey.publicKey, admin.secretKey)),
      403,
      'forbidden',
    );
    const inactive = await createTestMerchant(stack.orm, 'Card update inactive merchant');
    await setMerchantStatus(stack.orm.em.fork(), inactive.merchantId, false);
    await sleep(150);
    expectError(await update(id, { cardToken: 'tok_success' }, inactive.auth), 403, 'merchant_inactive');
  });

  it.each<[string, unknown, string]>([
    ['an unknown field', { cardToken: 'tok_success', externalId: 'x' }, ''],
    ['an empty token', { cardToken: '' }, 'cardToken'],
    ['a token that is not a string', { cardToken: 42 }, 'cardToken'],
    ['a token over 255 characters', { cardToken: 't'.repeat(256) }, 'cardToken'],
    ['a null token', { cardToken: null }, 'cardToken'],
  ])('400 validation_error for %s, nothing changed', async (_label, body, path) => {
    const created = await subs.create({ cardToken: 'tok_success', billingIntervalDays: 30 });
    const id = created.body.id as string;
    const res = await update(id, body);
    const err = expectError(res, 400, 'validation_error');
    if (path) expect(err.details.issues!.map((i) => i.path)).toContain(path);
    else expect(JSON.stringify(err.details)).toContain('externalId');
    expect(await cardOf(id)).toBe('tok_success');
    await subs.cancel(id);
  });

  it('a body that is not JSON is 400 invalid_json, another content type 415', async () => {
    const id = newId('subscription');
    const bad = await fetch(`${stack.api.baseUrl}/subscriptions/${id}/payment-method`, {
      method: 'POST',
      headers: { authorization: merchant.auth, 'content-type': 'application/json' },
      body: '{"cardToken": ',
    });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as ErrorBody).code).toBe('invalid_json');
    const text = await fetch(`${stack.api.baseUrl}/subscriptions/${id}/payment-method`, {
      method: 'POST',
      headers: { authorization: merchant.auth, 'content-type': 'text/plain' },
      body: 'tok_success',
    });
    expect(text.status).toBe(415);
  });

  it('the OpenAPI document describes the operation, its body and its errors', async () => {
    const res = await fetch(`${stack.api.baseUrl}/openapi.json`);
    const doc = (await res.json()) as {
      paths: Record<
        string,
        Record<string, { operationId: string; requestBody?: unknown; responses: Record<string, unknown> }>
      >;
    };
    const op = doc.paths['/subscriptions/{subscriptionId}/payment-method']?.post;
    expect(op?.operationId).toBe('updateSubscriptionPaymentMethod');
    expect(Object.keys(op?.responses ?? {}).sort()).toEqual([
      '200',
      '400',
      '401',
      '403',
      '404',
      '409',
      '429',
      '500',
      '503',
    ]);
    expect(JSON.stringify(op?.requestBody)).toContain('cardToken');
    expect(JSON.stringify(op?.responses['409'])).toContain('subscription_not_updatable');
  });
});
