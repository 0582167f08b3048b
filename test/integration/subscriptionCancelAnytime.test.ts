import { temporal } from '@temporalio/proto';
import { eventually } from '../helpers/http';
import { createTestMerchant, startPaymentStack, type PaymentStack, type TestMerchant } from '../helpers/stack';
import { sleep, subscriptionClient } from '../helpers/subscriptions';
import { subscriptionWorkflowId } from '../../workflows/subscriptionApi';

const { EventType } = temporal.api.enums.v1;

/**
 * Cancelling at any moment of a subscription's life answers as PRODUCT.md says: the subscription
 * in its resulting state (200), never a 500. Found by a black-box run: a DELETE right after a
 * hosted (no cardToken) create answered 500 (the Update met a failed workflow task).
 */
describe('subscriptions: cancel at any moment', () => {
  let stack: PaymentStack;
  let merchant: TestMerchant;
  let subs: ReturnType<typeof subscriptionClient>;

  beforeAll(async () => {
    stack = await startPaymentStack('subcancelany', { billingDaySeconds: 1 });
    merchant = await createTestMerchant(stack.orm, 'Cancelling merchant');
    subs = subscriptionClient(stack, merchant);
  });
  afterAll(() => stack.close());

  it('cancels a hosted subscription right after its creation', async () => {
    for (let i = 0; i < 5; i++) {
      const created = await subs.create({});
      expect(created.status).toBe(200);
      expect(created.body.status).toBe('pending');
      const cancelled = await subs.cancel(created.body.id as string);
      expect(cancelled.status).toBe(200);
      expect(cancelled.body).toMatchObject({ status: 'cancelled', cancellationReason: 'merchant_request' });
    }
  });

  it('cancels a token subscription right after its creation, and again (unchanged)', async () => {
    const created = await subs.create({ cardToken: 'tok_success' });
    expect(created.body.status).toBe('active');
    const id = created.body.id as string;
    const [a, b] = await Promise.all([subs.cancel(id, '?reason=moved'), subs.cancel(id, '?reason=moved')]);
    for (const r of [a, b]) {
      expect(r.status).toBe(200);
      expect(r.body).toMatchObject({ status: 'cancelled', cancellationReason: 'moved' });
    }
    const again = await subs.cancel(id, '?reason=other');
    expect(again.status).toBe(200);
    expect(again.body.cancellationReason).toBe('moved');
    expect(again.body.cancelledAt).toBe(a.body.cancelledAt);
  });

  /** Update events in the subscription's history (all runs are one here: no continue-as-new). */
  async function updateEvents(id: string) {
    const history = await stack.api.client.workflow.getHandle(subscriptionWorkflowId(id)).fetchHistory();
    const events = history.events ?? [];
    return {
      accepted: events.filter((e) => e.eventType === EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED),
      completed: events.filter((e) => e.eventType === EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_COMPLETED),
    };
  }

  it('repeated DELETEs attach to the one Update under way (deterministic update id), one cancellation', async () => {
    const created = await subs.create({ cardToken: 'tok_success', billingIntervalDays: 2 });
    const id = created.body.id as string;
    // The renewal's charge is slow: the cancel waits for it, so the repeats overlap the first.
    await stack.sandbox('/_admin/faults', { latencyMs: 800 });
    try {
      await sleep(2100);
      const answers = await Promise.all(Array.from({ length: 5 }, () => subs.cancel(id, '?reason=moved')));
      for (const a of answers) expect(a.body).toMatchObject({ status: 'cancelled', cancellationReason: 'moved' });
    } finally {
      await stack.sandbox('/_admin/faults', {});
    }
    const { accepted, completed } = await updateEvents(id);
    const cancels = accepted.filter(
      (e) => e.workflowExecutionUpdateAcceptedEventAttributes?.acceptedRequest?.input?.name === 'cancelSubscription',
    );
    expect(cancels).toHaveLength(1);
    expect(completed.length).toBeGreaterThanOrEqual(1);
    const cancelledMail = await eventually(
      async () => subs.mail(id).filter((e) => /cancelled/i.test(e.subject)),
      (l) => l.length >= 1,
    );
    expect(cancelledMail).toHaveLength(1);
  });

  it('a cancel the workflow accepted but did not finish within the wait is reported as accepted (503), then done', async () => {
    // An API that waits 800 ms; closing the hosted page at the provider takes 1.5 s here.
    const slow = await startPaymentStack('subcancelslow', { billingDaySeconds: 1, paymentWaitMs: 800 });
    try {
      const slowMerchant = await createTestMerchant(slow.orm, 'Slow cancel merchant');
      const slowSubs = subscriptionClient(slow, slowMerchant);
      const created = await slowSubs.create({});
      expect(created.body.status).toBe('pending');
      const id = created.body.id as string;
      await slow.sandbox('/_admin/faults', { latencyMs: 1400 });
      const answer = await slowSubs.cancel(id);
      expect(answer.status).toBe(503);
      expect(answer.headers.get('retry-after')).toMatch(/^\d+$/);
      expect(answer.body).toMatchObject({
        code: 'service_unavailable',
        details: { cancellation: 'accepted', subscription: { id, status: 'pending' } },
      });
      await slow.sandbox('/_admin/faults', {});
      const cancelled = await slowSubs.until(id, (s) => s.status === 'cancelled');
      expect(cancelled.cancellationReason).toBe('merchant_request');
      // The repeat answers the result.
      const again = await slowSubs.cancel(id);
      expect(again.status).toBe(200);
      expect(again.body.status).toBe('cancelled');
    } finally {
      await slow.close();
    }
  });
});
