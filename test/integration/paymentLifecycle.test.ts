import { createHmac } from 'node:crypto';
import { signingSecrets } from '../../src/domain/signingSecrets';
import { createTestMerchant, startPaymentStack, type PaymentStack, type TestMerchant } from '../helpers/stack';
import { call, eventually } from '../helpers/http';
import { startCallbackReceiver } from '../helpers/callbackReceiver';

const EXPIRY_SECONDS = 3;

function verifySignature(secret: string, body: string, header: string | undefined): boolean {
  const m = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(header ?? '');
  if (!m) return false;
  return createHmac('sha256', secret).update(`${m[1]}.${body}`).digest('hex') === m[2];
}

describe('payment expiry and merchant callbacks', () => {
  let stack: PaymentStack;
  let merchant: TestMerchant;
  let seq = 0;
  const ext = () => `life-${Date.now()}-${++seq}`;
  const create = (extra: Record<string, unknown>) =>
    call(stack.api.baseUrl, 'POST', '/payments', merchant.auth, {
      amount: 9.99,
      currency: 'GBP',
      externalId: ext(),
      customer: { email: 'c@example.com' },
      ...extra,
    });
  const get = (id: string) => call(stack.api.baseUrl, 'GET', `/payments/${id}`, merchant.auth);

  beforeAll(async () => {
    stack = await startPaymentStack('lifecycle', {
      paymentExpirySeconds: EXPIRY_SECONDS,
      callbackRetryInitialSeconds: 1,
    });
    merchant = await createTestMerchant(stack.orm, 'Lifecycle merchant');
  });
  afterAll(() => stack.close());

  it('an unpaid hosted payment is voided at its expiry, and its page no longer takes money', async () => {
    const res = await create({});
    expect(res.body).toMatchObject({ status: 'created' });
    const voided = await eventually(
      () => get(res.body.id as string),
      (r) => r.body.status !== 'created',
      15_000,
      250,
    );
    expect(voided.body).toMatchObject({ status: 'voided', amountRefundable: 0 });
    const pay = await fetch(`${res.body.redirectUrl}/pay`, { method: 'POST' });
    expect(pay.status).toBe(410);
    expect(await stack.ledger('capture', res.body.id as string)).toHaveLength(0);
  });

  it.each([
    ['one after the other', false],
    ['at once', true],
  ])(
    'the hosted checkout page’s Pay posted twice (%s): one capture, succeeded once, one payment.succeeded',
    async (_how, concurrent) => {
      const receiver = await startCallbackReceiver();
      try {
        const res = await create({ callbackUrl: receiver.url });
        expect(res.body).toMatchObject({ status: 'created' });
        const id = res.body.id as string;
        const pay = () => fetch(`${String(res.body.redirectUrl)}/pay`, { method: 'POST' });
        const answers = concurrent ? await Promise.all([pay(), pay()]) : [await pay(), await pay()];
        expect(answers.map((a) => a.status)).toEqual([200, 200]);
        const bodies = (await Promise.all(answers.map((a) => a.json()))) as Array<{ status: string; id: string }>;
        expect(bodies.map((b) => b.status)).toEqual(['succeeded', 'succeeded']);
        expect(bodies[0]!.id).toBe(bodies[1]!.id);

        const paid = await eventually(
          () => get(id),
          (r) => r.body.status !== 'created',
          10_000,
          100,
        );
        expect(paid.body).toMatchObject({ status: 'succeeded', amount: 9.99, amountRefundable: 9.99 });
        expect((await stack.ledger('capture', id)).map((c) => [c.status, c.amount])).toEqual([['succeeded', 9.99]]);
        const ofPayment = () => receiver.received.filter((r) => r.json.data.id === id).map((r) => r.json.type);
        await eventually(
          async () => ofPayment(),
          (types) => types.includes('payment.succeeded'),
          10_000,
        );
        // Past the expiry: the workflow has asked the provider again by then; still one of everything.
        await new Promise((r) => setTimeout(r, (EXPIRY_SECONDS + 1) * 1000));
        expect(ofPayment()).toEqual(['payment.succeeded']);
        expect((await get(id)).body).toMatchObject({ status: 'succeeded', amountRefundable: 9.99 });
        expect(await stack.ledger('capture', id)).toHaveLength(1);
      } finally {
        await receiver.close();
      }
    },
  );

  it('a payment the provider never saw (unavailable) is voided at its expiry', async () => {
    await stack.sandbox('/_admin/faults', { payments: 'unavailable' });
    const res = await create({ cardToken: 'tok_success' });
    await stack.sandbox('/_admin/faults', {});
    expect(res.status).toBe(503);
    const id = (res.body.details as { payment: { id: string } }).payment.id;
    const voided = await eventually(
      () => get(id),
      (r) => r.body.status !== 'created',
      15_000,
      250,
    );
    expect(voided.body).toMatchObject({ status: 'voided' });
    // Nothing was sent, so nothing is asked (decision 0058): the provider saw the refused creates
    // (the API's quick retries) and nothing else about this payment: no lookup by its key, no
    // cancel; the ledger is empty.
    await new Promise((r) => setTimeout(r, 1000));
    const seen = await stack.requests(id);
    expect(seen.length).toBeGreaterThan(0);
    expect(seen.map((r) => [r.method, r.url, r.idempotencyKey, r.status])).toEqual(
      seen.map(() => ['POST', '/v1/payments', id, 503]),
    );
    expect(await stack.ledger('capture', id)).toEqual([]);
  });

  it('a payment captured by a call whose answer was lost is succeeded at its expiry, never voided', async () => {
    await stack.sandbox('/_admin/faults', { payments: 'unavailable' });
    const res = await create({ cardToken: 'tok_success' });
    await stack.sandbox('/_admin/faults', {});
    expect(res.status).toBe(503);
    const id = (res.body.details as { payment: { id: string } }).payment.id;
    // The provider holds a capture under our key that our record never learnt (a worker killed
    // mid-call: the call's mark stays, decision 0012): the expiry asks the provider by that key
    // before voiding. (Without the mark no call was sent and nothing is asked: decision 0058.)
    await stack.orm.em
      .fork()
      .getConnection()
      .execute('update payments set provider_call_sent_at = now() where id = ?', [id]);
    await stack.providers.sandbox.createPayment({
      idempotencyKey: id,
      amountMinor: 999,
      currency: 'GBP',
      mode: 'card',
      cardToken: 'tok_success',
      metadata: { paymentId: id, merchantId: merchant.merchantId },
    });
    const settled = await eventually(
      () => get(id),
      (r) => r.body.status !== 'created',
      15_000,
      250,
    );
    expect(settled.body).toMatchObject({ status: 'succeeded', providerTransactionId: expect.stringMatching(/^txn_/) });
    expect((await stack.ledger('capture', id)).map((c) => c.status)).toEqual(['succeeded']);
  });

  it('sends a signed payment.succeeded callback, retried with the same event id after a 500', async () => {
    const receiver = await startCallbackReceiver([500]);
    try {
      const secret = (await signingSecrets(stack.orm.em.fork(), stack.providers.secrets, merchant.merchantId, 'test'))
        .current;
      const res = await create({ cardToken: 'tok_success', callbackUrl: receiver.url });
      expect(res.body).toMatchObject({ status: 'succeeded' });
      await eventually(
        async () => receiver.received.length,
        (n) => n >= 2,
        15_000,
      );

      const [first, second] = receiver.received;
      expect(first!.json.id).toMatch(/^evt_/);
      expect(second!.json.id).toBe(first!.json.id);
      expect(second!.body).toBe(first!.body);
      expect(second!.receivedAt - first!.receivedAt).toBeGreaterThanOrEqual(900);
      for (const r of [first!, second!]) expect(verifySignature(secret, r.body, r.signature)).toBe(true);
      expect(verifySignature(`${secret}x`, first!.body, first!.signature)).toBe(false);
      expect(first!.json).toEqual({
        id: first!.json.id,
        type: 'payment.succeeded',
        createdAt: expect.stringMatching(/Z$/),
        environment: 'test',
        objectId: res.body.id,
        sequence: 1,
        data: (await get(res.body.id as string)).body,
      });
      await new Promise((r) => setTimeout(r, 1500));
      expect(receiver.received).toHaveLength(2); // delivered: no more attempts
    } finally {
      await receiver.close();
    }
  });

  it('sends payment.failed for a declined hosted payment', async () => {
    const receiver = await startCallbackReceiver();
    try {
      const res = await create({ callbackUrl: receiver.url });
      await fetch(`${res.body.redirectUrl}/decline`, { method: 'POST' });
      await eventually(
        async () => receiver.received.length,
        (n) => n >= 1,
        15_000,
      );
      expect(receiver.received[0]!.json).toMatchObject({
        type: 'payment.failed',
        data: { id: res.body.id, status: 'failed', failureCode: 'card_declined' },
      });
    } finally {
      await receiver.close();
    }
  });
});
