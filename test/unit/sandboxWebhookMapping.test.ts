import { mapWebhook } from '../../src/providers/sandbox/mapping';

/** The sandbox's webhooks as our events: an object we cannot read is acknowledged, never refused. */
describe('sandbox webhook mapping', () => {
  const paymentEvent = (status: string) => ({
    id: 'whevt_1',
    type: 'payment.updated',
    createdAt: '2026-11-28T00:00:00.000Z',
    data: {
      object: 'payment',
      id: 'txn_1',
      mode: 'card',
      status,
      amount: 12.5,
      currency: 'USD',
      idempotencyKey: 'key_1',
      failureCode: null,
      failureMessage: null,
      checkoutUrl: null,
      savedCardToken: null,
      metadata: { paymentId: 'pay_1' },
    },
  });

  it('maps a payment it knows, in minor units', () => {
    const event = mapWebhook(paymentEvent('succeeded'));
    expect(event).toMatchObject({ kind: 'payment', type: 'payment.updated', metadata: { paymentId: 'pay_1' } });
    expect(event.kind === 'payment' && event.payment).toMatchObject({ status: 'succeeded', amountMinor: 1250 });
  });

  it('answers a status nobody knows as ignored, with the reason (the workflow asks the provider itself)', () => {
    expect(mapWebhook(paymentEvent('on_hold'))).toEqual({
      kind: 'ignored',
      type: 'payment.updated',
      reason: expect.stringMatching(/^unexpected payment object: .*unknown status "on_hold"/),
    });
  });

  it('still refuses a body that is not a sandbox event', () => {
    expect(() => mapWebhook({ ...paymentEvent('succeeded'), data: { object: 'payment', id: 'txn_1' } })).toThrow();
  });
});
