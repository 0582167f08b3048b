import { refundWorkflowId } from '../../workflows/refundApi';
import { StuckKey } from '../../workflows/searchAttributes';
import { startWorkerWithOverrides, type OverriddenWorker } from '../helpers/activityOverrides';
import { call, eventually } from '../helpers/http';
import { createTestMerchant, startPaymentStack, type PaymentStack, type TestMerchant } from '../helpers/stack';

/**
 * Issue 44, item 5 for local activities (decision 0077, amended): a provider attempt is a local
 * activity (a refund's, a token payment's first, a renewal's charge). A bug there (a TypeError)
 * used to reach the workflow's code as a failed attempt of unknown type, taken as an ambiguous
 * provider answer: the run went on to reconcile, never marked. Now the call parks as a regular
 * activity's does: the run is `Stuck: activity_bug` (found by a visibility query), the same
 * local activity is asked again a minute later, and once the bug is gone the refund settles,
 * refunded once at the provider.
 *
 * The worker runs the product's activities and interceptors against the real PostgreSQL,
 * Temporal and sandbox; only its attemptProviderRefund is wrapped, to hit a bug on its first call
 * (a deploy with a bug), then to run the real activity (the fix deployed).
 */
async function waitFor<T>(probe: () => Promise<T | undefined>, ms: number): Promise<T | undefined> {
  const until = Date.now() + ms;
  for (;;) {
    const value = await probe();
    if (value !== undefined || Date.now() > until) return value;
    await new Promise((r) => setTimeout(r, 250));
  }
}

describe('a local activity that hits a bug', () => {
  let stack: PaymentStack;
  let merchant: TestMerchant;
  let worker: OverriddenWorker | undefined;

  beforeAll(async () => {
    stack = await startPaymentStack('local-activity-bugs');
    merchant = await createTestMerchant(stack.orm, 'Local bugs merchant');
  });
  afterAll(async () => {
    await worker?.stop();
    await stack.close();
  });

  it('parks its run Stuck activity_bug, then settles once the bug is gone; refunded once', async () => {
    let deployed: 'bug' | 'fix' = 'bug';
    const attemptProviderRefund = jest.fn();
    await stack.worker.stop();
    worker = await startWorkerWithOverrides(stack, (real) => ({
      attemptProviderRefund: attemptProviderRefund.mockImplementation((refundId: string) => {
        if (deployed === 'fix') return real.attemptProviderRefund(refundId);
        const settings = undefined as unknown as { refundReason: string };
        return Promise.resolve(settings.refundReason); // a TypeError, before the provider is asked
      }),
    }));

    const paid = await call(stack.api.baseUrl, 'POST', '/payments', merchant.auth, {
      amount: 10,
      currency: 'EUR',
      externalId: `p-${Date.now()}`,
      customer: { email: 'c@example.com' },
      cardToken: 'tok_success',
    });
    expect(paid.body).toMatchObject({ status: 'succeeded' });
    const paymentId = paid.body.id as string;

    // The API's bounded wait passes with no outcome: the refund is pending (PRODUCT.md).
    const refunded = await call(stack.api.baseUrl, 'POST', `/payments/${paymentId}/refund`, merchant.auth, {
      externalId: `r-${Date.now()}`,
      amount: 4,
    });
    expect(refunded.status).toBe(200);
    expect(refunded.body).toMatchObject({ status: 'pending', paymentAmountRefundable: 6 });
    const refundId = refunded.body.id as string;
    const workflowId = refundWorkflowId(refundId);

    // Parked: listed by its Stuck mark (the query behind workflows_parked_on_bug), not failed,
    // the bug asked once (never retried every minute in silence), nothing refunded.
    const listed = await waitFor(async () => {
      for await (const w of stack.api.client.workflow.list({
        query: `Stuck = 'activity_bug' AND WorkflowId = '${workflowId}'`,
      })) {
        return w.workflowId;
      }
      return undefined;
    }, 30_000);
    expect(listed).toBe(workflowId);
    const handle = stack.api.client.workflow.getHandle(workflowId);
    expect((await handle.describe()).status.name).toBe('RUNNING');
    expect(attemptProviderRefund).toHaveBeenCalledTimes(1);
    expect(JSON.stringify(await handle.fetchHistory())).toContain('activity bug: TypeError');
    expect(await stack.ledger('refund', paymentId)).toHaveLength(0);

    // The fix deployed: the parked call is asked again (a minute after it parked) and answers.
    deployed = 'fix';
    const settled = await eventually(
      () => call(stack.api.baseUrl, 'GET', `/refunds/${refundId}`, merchant.auth),
      (r) => r.body.status !== 'pending',
      90_000,
      500,
    );
    expect(settled.body).toMatchObject({ status: 'succeeded', paymentAmountRefunded: 4, paymentAmountRefundable: 6 });
    expect(attemptProviderRefund).toHaveBeenCalledTimes(2);
    expect(await stack.ledger('refund', paymentId)).toEqual([
      expect.objectContaining({ status: 'succeeded', amount: 4 }),
    ]);
    expect((await call(stack.api.baseUrl, 'GET', `/payments/${paymentId}`, merchant.auth)).body).toMatchObject({
      status: 'partially_refunded',
      amountRefunded: 4,
    });
    // The mark is cleared once nothing of the run is parked.
    const cleared = await eventually(
      async () => (await handle.describe()).typedSearchAttributes.get(StuckKey),
      (mark) => mark === undefined,
      20_000,
      250,
    );
    expect(cleared).toBeUndefined();
  }, 180_000);
});
