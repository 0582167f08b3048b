import type { EntityManager } from '@mikro-orm/postgresql';
import {
  Invoice,
  Subscription,
  SubscriptionPhase,
  type InvoiceStatus,
  type PaymentStatus,
  type SubscriptionStatus,
} from '../db/entities';
import { PAYMENT_VIEW_COLUMNS, paymentViewOfRow, type PaymentView } from './payments';
import { presentSubscription, type SubscriptionResponse } from './subscriptions';
import type { InvoiceView } from './invoices';
import type { DeclineType } from '../rules/declines';
import type { RecordScope } from './scope';

/**
 * The lists of PRODUCT.md, "Lists": newest first, by keyset on (created_at, id) descending, on
 * the composite indexes of Migration20261128000000ListsAndRateLimits (never OFFSET: a page costs
 * the same at the first row as at the millionth). Every query is scoped by merchant and
 * environment. A page asks for one row more than it answers, to know whether there is a next one.
 */

export { Conditions, pageOf, positionOfRow, type ListPosition, type Page, type PageRequest } from './paging';
import { Conditions, pageOf, positionOfRow, type Page, type PageRequest } from './paging';

export interface PaymentFilters {
  status?: PaymentStatus;
  externalId?: string;
  /** Inclusive. */
  createdFrom?: Date;
  /** Exclusive. */
  createdTo?: Date;
}

export async function listPayments(
  em: EntityManager,
  scope: RecordScope,
  filters: PaymentFilters,
  page: PageRequest,
): Promise<Page<PaymentView>> {
  const where = new Conditions().add('merchant_id = ?', scope.merchantId).add('environment = ?', scope.environment);
  if (filters.status) where.add('status = ?', filters.status);
  if (filters.externalId !== undefined) where.add('external_id = ?', filters.externalId);
  if (filters.createdFrom) where.add('created_at >= ?', filters.createdFrom);
  if (filters.createdTo) where.add('created_at < ?', filters.createdTo);
  where.after('', page.after);
  const rows: Array<Record<string, unknown>> = await em
    .getConnection()
    .execute(`select ${PAYMENT_VIEW_COLUMNS} from payments where ${where} order by created_at desc, id desc limit ?`, [
      ...where.bindings,
      page.limit + 1,
    ]);
  return pageOf(rows, page.limit, positionOfRow, (kept) => kept.map(paymentViewOfRow));
}

export interface SubscriptionFilters {
  status?: SubscriptionStatus;
  externalId?: string;
}

/**
 * Subscriptions as GET /subscriptions/{id} shows them. One query picks the page (with each
 * subscription's latest invoice id, from the (subscription_id, period_index) index), then one
 * round trip loads the page's subscriptions, phases and latest invoices together: no query per item.
 */
export async function listSubscriptions(
  em: EntityManager,
  scope: RecordScope,
  filters: SubscriptionFilters,
  page: PageRequest,
): Promise<Page<SubscriptionResponse>> {
  const where = new Conditions().add('s.merchant_id = ?', scope.merchantId).add('s.environment = ?', scope.environment);
  if (filters.status) where.add('s.status = ?', filters.status);
  if (filters.externalId !== undefined) where.add('s.external_id = ?', filters.externalId);
  where.after('s.', page.after);
  const rows: Array<Record<string, unknown>> = await em.getConnection().execute(
    `select s.id, s.created_at,
            (select i.id from invoices i where i.subscription_id = s.id order by i.period_index desc limit 1) as latest_invoice_id
       from subscriptions s
      where ${where}
      order by s.created_at desc, s.id desc
      limit ?`,
    [...where.bindings, page.limit + 1],
  );
  const kept = rows.slice(0, page.limit);
  const ids = kept.map((r) => r.id as string);
  const invoiceIds = kept.map((r) => r.latest_invoice_id as string | null).filter((id): id is string => id !== null);
  const fork = em.fork();
  const [subscriptions, phases, invoices] =
    ids.length === 0
      ? [[], [], []]
      : await Promise.all([
          fork.find(Subscription, { id: { $in: ids }, merchant: scope.merchantId, environment: scope.environment }),
          fork.find(SubscriptionPhase, { subscription: { $in: ids } }, { orderBy: { position: 'asc' } }),
          invoiceIds.length ? fork.find(Invoice, { id: { $in: invoiceIds } }) : [],
        ]);
  const byId = new Map(subscriptions.map((s) => [s.id, s]));
  const invoiceById = new Map(invoices.map((i) => [i.id, i]));
  const phasesOf = new Map<string, SubscriptionPhase[]>();
  for (const p of phases) {
    const id = p.subscription.id;
    phasesOf.set(id, [...(phasesOf.get(id) ?? []), p]);
  }
  return pageOf(rows, page.limit, positionOfRow, () =>
    kept.flatMap((row) => {
      const s = byId.get(row.id as string);
      if (!s) return []; // deleted between the two queries (a discarded create)
      const latest = row.latest_invoice_id ? (invoiceById.get(row.latest_invoice_id as string) ?? null) : null;
      return [presentSubscription(s, phasesOf.get(s.id) ?? [], latest)];
    }),
  );
}

/** A subscription's invoices; the caller has found the subscription in the caller's scope. */
export async function listInvoices(
  em: EntityManager,
  subscription: { id: string; merchantId: string },
  page: PageRequest,
): Promise<Page<InvoiceView>> {
  const where = new Conditions()
    .add('subscription_id = ?', subscription.id)
    .add('merchant_id = ?', subscription.merchantId)
    .after('', page.after);
  const rows: Array<Record<string, unknown>> = await em.getConnection().execute(
    `select id, subscription_id, status, amount_minor, currency, period_start, period_end, attempts, next_attempt_at,
            failure_code, failure_message, decline_type, hosted_url, paid_at, created_at
       from invoices
      where ${where}
      order by created_at desc, id desc
      limit ?`,
    [...where.bindings, page.limit + 1],
  );
  const date = (v: unknown) => (v === null || v === undefined ? null : new Date(v as Date));
  return pageOf(rows, page.limit, positionOfRow, (kept) =>
    kept.map((row) => ({
      id: row.id as string,
      subscriptionId: row.subscription_id as string,
      status: row.status as InvoiceStatus,
      amountMinor: Number(row.amount_minor),
      currency: row.currency as string,
      periodStart: new Date(row.period_start as Date),
      periodEnd: new Date(row.period_end as Date),
      attempts: Number(row.attempts),
      nextAttemptAt: date(row.next_attempt_at),
      failureCode: row.failure_code as string | null,
      failureMessage: row.failure_message as string | null,
      declineType: row.decline_type as DeclineType | null,
      hostedUrl: row.hosted_url as string | null,
      paidAt: date(row.paid_at),
      createdAt: new Date(row.created_at as Date),
    })),
  );
}
