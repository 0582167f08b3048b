import { z } from 'zod';
import type { EntityManager } from '@mikro-orm/postgresql';
import { DISPUTE_STATUSES, PAYMENT_STATUSES, type Subscription } from '../../db/entities';
import { AppError } from '../../errors';
import { isId } from '../../ids';
import { SUBSCRIPTION_STATUSES } from '../../rules/subscriptionPlan';
import { presentPayment } from '../../domain/payments';
import { presentInvoice } from '../../domain/invoices';
import { listInvoices, listPayments, listSubscriptions, type ListPosition, type Page } from '../../domain/lists';
import { CursorCodec, MAX_CURSOR_LENGTH, type CursorBinding } from '../cursor';
import type { Caller } from '../context';
import { AUTH_ERRORS, defineRoute } from '../routing';
import { paymentSchema } from './payments';
import { invoiceSchema, subscriptionSchema } from './subscriptions';
import { disputeSchema } from './disputes';
import { listDisputes } from '../../domain/disputes';

/** PRODUCT.md, "Lists". */
export interface ListSettings {
  /** Signs list cursors (CURSOR_SECRET); the same in every API process. */
  cursorSecret: string;
}

export const DEFAULT_LIST_LIMIT = 20;
export const MAX_LIST_LIMIT = 100;

/** The paging fields of every list's query. */
export const page = {
  limit: z.coerce
    .number()
    .int()
    .min(1)
    .max(MAX_LIST_LIMIT)
    .default(DEFAULT_LIST_LIMIT)
    .describe(`items per page, 1..${MAX_LIST_LIMIT} (default ${DEFAULT_LIST_LIMIT})`),
  cursor: z
    .string()
    .min(1)
    .max(MAX_CURSOR_LENGTH)
    .optional()
    .describe("the previous page's `nextCursor`, as it was (opaque; valid only with the same filters)"),
};

export const isoInstant = z.iso
  .datetime({ offset: true })
  .transform((v) => new Date(v))
  .describe('ISO 8601 timestamp with a time zone (e.g. 2026-11-22T01:27:32.384Z)');

export const listPaymentsQuery = z
  .object({
    ...page,
    status: z.enum(PAYMENT_STATUSES).optional(),
    externalId: z.string().min(1).max(255).optional(),
    createdFrom: isoInstant.optional().describe('payments created at or after this instant'),
    createdTo: isoInstant.optional().describe('payments created before this instant'),
  })
  .strict();

export const listSubscriptionsQuery = z
  .object({
    ...page,
    status: z.enum(SUBSCRIPTION_STATUSES).optional(),
    externalId: z.string().min(1).max(255).optional(),
  })
  .strict();

export const listInvoicesQuery = z.object(page).strict();

export const listDisputesQuery = z
  .object({
    ...page,
    status: z.enum(DISPUTE_STATUSES).optional(),
    paymentId: z.string().min(1).max(255).optional(),
  })
  .strict();

const nextCursor = z.string().nullable().describe('pass as `cursor` for the next page; null on the last page');

const subscriptionParams = z.object({ subscriptionId: z.string() });

const PAGINATION =
  'Newest first (by creation time, then id). A page holds at most `limit` items; `nextCursor` fetches the next one and is null on the last. Walking with cursors never shows an item twice nor skips one, however many are created meanwhile (new items appear on a walk started afterwards). A cursor is bound to its list, its filters and the caller: another one, or one altered, is 400 `validation_error`.';

export function listRoutes(deps: { em: EntityManager; settings: ListSettings }) {
  const codec = new CursorCodec(deps.settings.cursorSecret);

  /** The position a request's cursor names (none: the first page). */
  const after = (cursor: string | undefined, binding: CursorBinding): ListPosition | undefined =>
    cursor === undefined ? undefined : codec.decode(cursor, binding);
  const next = (result: Page<unknown>, binding: CursorBinding): string | null =>
    result.next ? codec.encode(result.next, binding) : null;
  const bind = (list: string, caller: Caller, extra: Omit<CursorBinding, 'list' | 'merchantId' | 'environment'>) => ({
    list,
    merchantId: caller.merchantId,
    environment: caller.environment,
    ...extra,
  });

  return [
    defineRoute({
      method: 'get',
      path: '/payments',
      operationId: 'listPayments',
      tag: 'Payments',
      summary: "List the caller's payments (its merchant and its key's environment), newest first.",
      description: `${PAGINATION} Filters: \`status\`, \`externalId\`, \`createdFrom\` (inclusive) and \`createdTo\` (exclusive).`,
      query: listPaymentsQuery,
      response: z.object({ payments: z.array(paymentSchema), nextCursor }),
      errors: ['validation_error', ...AUTH_ERRORS],
      handler: async ({ query, caller }) => {
        const binding = bind('payments', caller, {
          filters: {
            status: query.status,
            externalId: query.externalId,
            createdFrom: query.createdFrom?.toISOString(),
            createdTo: query.createdTo?.toISOString(),
          },
        });
        const result = await listPayments(
          deps.em,
          caller,
          {
            status: query.status,
            externalId: query.externalId,
            createdFrom: query.createdFrom,
            createdTo: query.createdTo,
          },
          { limit: query.limit, after: after(query.cursor, binding) },
        );
        return { payments: result.items.map(presentPayment), nextCursor: next(result, binding) };
      },
    }),
    defineRoute({
      method: 'get',
      path: '/subscriptions',
      operationId: 'listSubscriptions',
      tag: 'Subscriptions',
      summary: "List the caller's subscriptions (its merchant and its key's environment), newest first.",
      description: `${PAGINATION} Filters: \`status\`, \`externalId\`.`,
      query: listSubscriptionsQuery,
      response: z.object({ subscriptions: z.array(subscriptionSchema), nextCursor }),
      errors: ['validation_error', ...AUTH_ERRORS],
      handler: async ({ query, caller }) => {
        const binding = bind('subscriptions', caller, {
          filters: { status: query.status, externalId: query.externalId },
        });
        const result = await listSubscriptions(
          deps.em,
          caller,
          { status: query.status, externalId: query.externalId },
          { limit: query.limit, after: after(query.cursor, binding) },
        );
        return { subscriptions: result.items, nextCursor: next(result, binding) };
      },
    }),
    defineRoute({
      method: 'get',
      path: '/disputes',
      operationId: 'listDisputes',
      tag: 'Disputes',
      summary: "List the caller's disputes (its merchant and its key's environment), newest first.",
      description: `${PAGINATION} Filters: \`status\`, \`paymentId\`.`,
      query: listDisputesQuery,
      response: z.object({ disputes: z.array(disputeSchema), nextCursor }),
      errors: ['validation_error', ...AUTH_ERRORS],
      handler: async ({ query, caller }) => {
        const binding = bind('disputes', caller, {
          filters: { status: query.status, paymentId: query.paymentId },
        });
        const result = await listDisputes(
          deps.em,
          caller,
          { status: query.status, paymentId: query.paymentId },
          { limit: query.limit, after: after(query.cursor, binding) },
        );
        return { disputes: result.items, nextCursor: next(result, binding) };
      },
    }),
    defineRoute({
      method: 'get',
      path: '/subscriptions/{subscriptionId}/invoices',
      operationId: 'listInvoices',
      tag: 'Subscriptions',
      summary: "List a subscription's invoices (one per billing period), newest first.",
      description: PAGINATION,
      params: subscriptionParams,
      query: listInvoicesQuery,
      response: z.object({ invoices: z.array(invoiceSchema), nextCursor }),
      errors: ['validation_error', ...AUTH_ERRORS, 'not_found'],
      handler: async ({ params, query, caller }) => {
        const notFound = () => new AppError('not_found', 'Subscription not found.');
        if (!isId('subscription', params.subscriptionId)) throw notFound();
        const row: Record<string, unknown> | undefined = await deps.em
          .getConnection()
          .execute(
            'select id, status, cancellation_reason from subscriptions where id = ? and merchant_id = ? and environment = ?',
            [params.subscriptionId, caller.merchantId, caller.environment],
            'get',
          );
        if (!row) throw notFound();
        const subscription: Pick<Subscription, 'status' | 'cancellationReason'> = {
          status: row.status as Subscription['status'],
          cancellationReason: row.cancellation_reason as string | null,
        };
        const binding = bind('invoices', caller, { parentId: params.subscriptionId });
        const result = await listInvoices(
          deps.em,
          { id: params.subscriptionId, merchantId: caller.merchantId },
          { limit: query.limit, after: after(query.cursor, binding) },
        );
        return {
          invoices: result.items.map((invoice) => presentInvoice(invoice, subscription)),
          nextCursor: next(result, binding),
        };
      },
    }),
  ];
}
