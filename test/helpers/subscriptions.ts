import { Invoice } from '../../src/db/entities';
import { call, eventually } from './http';
import type { LedgerEntry, PaymentStack, TestMerchant } from './stack';

/** A subscription as the API answers it, loosely typed so assertions can read nested fields. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type SubscriptionBody = Record<string, any>;

/** The subscription endpoints of one merchant on one stack, and what tests observe around them. */
export function subscriptionClient(stack: PaymentStack, merchant: TestMerchant) {
  const base = stack.api.baseUrl;
  let counter = 0;
  const client = {
    create: (body: Record<string, unknown>) =>
      call<SubscriptionBody>(base, 'POST', '/subscriptions', merchant.auth, {
        amount: 10,
        currency: 'USD',
        billingIntervalDays: 1,
        externalId: `sub-${Date.now()}-${++counter}`,
        customer: { email: 'customer@example.com', name: 'Ada' },
        ...body,
      }),
    get: (id: string) => call<SubscriptionBody>(base, 'GET', `/subscriptions/${id}`, merchant.auth),
    cancel: (id: string, query = '') =>
      call<SubscriptionBody>(base, 'DELETE', `/subscriptions/${id}${query}`, merchant.auth),
    /** The subscription's invoices, oldest period first (PostgreSQL). */
    invoices: (id: string) =>
      stack.orm.em.fork().find(Invoice, { subscription: id }, { orderBy: { periodIndex: 'asc' } }),
    /** Sandbox ledger captures of this subscription (metadata.subscriptionId). */
    captures: (id: string): Promise<LedgerEntry[]> => stack.ledger('capture', id, 'subscriptionId'),
    /** Waits until the API shows the subscription matching `check`. */
    until: (id: string, check: (s: SubscriptionBody) => boolean, timeoutMs = 20_000) =>
      eventually(() => client.get(id).then((r) => r.body), check, timeoutMs, 100),
    /** Waits until `n` invoices are paid. */
    untilPaid: (id: string, n: number, timeoutMs = 20_000) =>
      eventually(
        () => client.invoices(id),
        (list) => list.filter((i) => i.status === 'paid').length >= n,
        timeoutMs,
        100,
      ),
    /** Emails caught for this subscription (its id is in every body). */
    mail: (id: string) => stack.mail().filter((e) => e.text.includes(id)),
  };
  return client;
}

/** Money invariant 1 on the ledger: no invoice captured twice, each capture tied to a paid invoice. */
export function succeededByInvoice(captures: LedgerEntry[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const c of captures) {
    if (c.status !== 'succeeded') continue;
    const invoiceId = c.metadata.invoiceId ?? '(none)';
    counts.set(invoiceId, (counts.get(invoiceId) ?? 0) + 1);
  }
  return counts;
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
