import { createTestMerchant, startPaymentStack, type PaymentStack, type TestMerchant } from '../helpers/stack';
import { call, eventually } from '../helpers/http';
import { setupPageWorkflowId } from '../../src/temporal/setupPageGateway';

/**
 * A customer's card setup page whose webhook never comes (decision 0089): the webhook is only a
 * hint, so the page's workflow asks the processor at growing intervals (here from 1 s) and keeps
 * the card itself, once. The sandbox's page is completed in its store, as the customer's Pay would,
 * but without the webhook that Pay sends.
 */
describe('a card setup page without its webhook (sandbox, Temporal, PostgreSQL)', () => {
  let stack: PaymentStack;
  let merchant: TestMerchant;
  let seq = 0;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  type Body = Record<string, any>;
  const api = (method: string, path: string, body?: unknown) =>
    call<Body>(stack.api.baseUrl, method, path, merchant.auth, body);
  const newCustomer = async () => {
    const res = await api('POST', '/customers', {
      externalId: `setup-${Date.now()}-${++seq}`,
      email: 'ada@example.com',
    });
    expect(res.status).toBe(200);
    return res.body.id as string;
  };
  /** A setup page of a new customer: the customer, the card's id to be, the sandbox's page id. */
  const newPage = async () => {
    const customerId = await newCustomer();
    const res = await api('POST', `/customers/${customerId}/payment-methods/setup`, {});
    expect(res.status).toBe(200);
    const redirectUrl = res.body.redirectUrl as string;
    return {
      customerId,
      redirectUrl,
      paymentMethodId: res.body.paymentMethodId as string,
      transactionId: redirectUrl.split('/').pop()!,
    };
  };
  const methodsOf = async (customerId: string) =>
    (await api('GET', `/customers/${customerId}/payment-methods`)).body.paymentMethods as Body[];
  const watchOf = (paymentMethodId: string) =>
    stack.api.client.workflow.getHandle(setupPageWorkflowId(paymentMethodId)).result() as Promise<string>;

  beforeAll(async () => {
    stack = await startPaymentStack('setup-page-without-webhook', { setupPagePollSeconds: 1 });
    merchant = await createTestMerchant(stack.orm, 'Setup page without webhook merchant');
  });
  afterAll(() => stack.close());

  it('completed, no webhook: the workflow asks the processor and keeps the card (the default), which then pays', async () => {
    const page = await newPage();
    // Completed at the processor; its webhook lost.
    stack.sandboxStore.checkoutAct(page.transactionId, 'pay');
    expect(await watchOf(page.paymentMethodId)).toBe('added');
    expect(await methodsOf(page.customerId)).toEqual([
      expect.objectContaining({ id: page.paymentMethodId, customerId: page.customerId, processor: 'sandbox' }),
    ]);
    expect((await api('GET', `/customers/${page.customerId}`)).body.defaultPaymentMethodId).toBe(page.paymentMethodId);
    // No money moved for the setup; the kept card then pays.
    expect(await stack.ledger('capture', page.customerId, 'customerId')).toEqual([]);
    const payment = await api('POST', '/payments', {
      amount: 3,
      currency: 'EUR',
      externalId: `setup-pay-${++seq}`,
      customerId: page.customerId,
    });
    expect(payment.body).toMatchObject({ status: 'succeeded', paymentMethodId: page.paymentMethodId });
  });

  it('declined on the page: the workflow ends without a card', async () => {
    const page = await newPage();
    stack.sandboxStore.checkoutAct(page.transactionId, 'decline');
    expect(await watchOf(page.paymentMethodId)).toBe('ended');
    expect(await methodsOf(page.customerId)).toEqual([]);
  });

  it('the webhook and the workflow both: the card is kept once', async () => {
    const page = await newPage();
    // The customer's Pay: the sandbox sends its webhook, which keeps the card at once.
    const paid = await fetch(`${page.redirectUrl}/pay`, { method: 'POST' });
    expect(paid.status).toBeLessThan(400);
    await eventually(
      () => methodsOf(page.customerId),
      (list) => list.length > 0,
    );
    // The workflow's look finds it kept already, and keeps nothing more.
    expect(await watchOf(page.paymentMethodId)).toBe('added');
    expect((await methodsOf(page.customerId)).map((m) => m.id)).toEqual([page.paymentMethodId]);
  });

  it('still open: the workflow keeps looking, at growing intervals', async () => {
    const page = await newPage();
    const handle = stack.api.client.workflow.getHandle(setupPageWorkflowId(page.paymentMethodId));
    // Looks at 1, 3 and 7 s: three asked, the page still open.
    await eventually(
      async () =>
        ((await handle.fetchHistory()).events ?? []).filter((e) => e.activityTaskCompletedEventAttributes).length,
      (looks) => looks >= 3,
      15_000,
    );
    expect((await handle.describe()).status.name).toBe('RUNNING');
    expect(await methodsOf(page.customerId)).toEqual([]);
    // The customer finishes late: the next look keeps the card.
    stack.sandboxStore.checkoutAct(page.transactionId, 'pay');
    expect(await watchOf(page.paymentMethodId)).toBe('added');
    expect((await methodsOf(page.customerId)).map((m) => m.id)).toEqual([page.paymentMethodId]);
  }, 60_000);
});
