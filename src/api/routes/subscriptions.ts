import { z } from 'zod';
import type { QuotaSettings } from '../../rules/quotas';
import type { EntityManager } from '@mikro-orm/postgresql';
import { AppError, errors } from '../../errors';
import { testClockNotFound } from '../../domain/testClocks';
import { isId } from '../../ids';
import { toMinor } from '../../rules/money';
import { SUBSCRIPTION_STATUSES } from '../../rules/subscriptionPlan';
import { findSubscriptionView } from '../../domain/subscriptions';
import { INVOICE_VIEW_STATUSES } from '../../domain/invoices';
import { DECLINE_TYPES } from '../../rules/declines';
import type { ProviderRegistry } from '../../providers/registry';
import type { SubscriptionGateway } from '../../temporal/subscriptionGateway';
import { cancelSubscription, createSubscription, withSubscriptionCustomer } from '../../app/subscriptions';
import { CANCEL_REASON_MAX_LENGTH } from '../../../workflows/subscriptionApi';
import { AUTH_ERRORS, defineRoute } from '../routing';
import {
  assertCallbackAllowed,
  checkAmount,
  currency,
  customer,
  customerIssues,
  externalId,
  httpUrl,
  majorAmount,
  metadata,
  optionalRecordId,
} from '../inputs';
import { timestamp } from '../schemas';

export interface SubscriptionSettings {
  taskQueue: string;
  /** Continue-as-new threshold for new subscriptions' workflows (tests lower it). */
  historyEventLimit?: number;
  /** Bounded wait for the first outcome (first charge, or the hosted page), as for payments. */
  paymentWaitMs: number;
  billingDaySeconds: number;
  subscriptionAuthorizationExpirySeconds: number;
  callbackRetryInitialSeconds: number;
}

const billingIntervalDays = z.number().int().min(1).max(3650).describe('whole days between charges, 1..3650');

const phaseBody = z
  .object({
    name: z.string().min(1).max(255),
    iterations: z.number().int().min(1).max(1000).describe('billing periods in this phase'),
    amount: z.number().describe('per period, major units; 0 is a free phase'),
    billingIntervalDays,
  })
  .strict();

export const createSubscriptionBody = z
  .object({
    amount: majorAmount.describe('evergreen amount per period, major units'),
    billingIntervalDays,
    currency,
    externalId,
    customer: customer.optional(),
    customerId: optionalRecordId(
      "a customer (`cus_...`) instead of `customer` (both: 400); its email, name and externalId are repeated, and each charge after the first uses the customer's default payment method at that moment",
    ),
    paymentMethodId: optionalRecordId(
      "one of the customer's payment methods (`pm_...`, with `customerId`) for the first charge. With neither it nor `cardToken`: the customer's default, or the hosted authorization when it has none",
    ),
    cardToken: z
      .string()
      .min(1)
      .max(255)
      .optional()
      .describe('saved-card token; without, the customer authorizes a card at `redirectUrl`'),
    phases: z.array(phaseBody).min(1).max(20).optional().describe('run in order before the evergreen phase'),
    retryScheduleDays: z
      .array(z.number().int().min(1).max(365))
      .max(10)
      .optional()
      .describe('billing days before each retry of a failed charge (default [1, 3, 5])'),
    description: z.string().max(1000).optional(),
    metadata: metadata.optional(),
    callbackUrl: httpUrl.optional(),
    returnUrl: httpUrl.optional(),
    testClock: z
      .string()
      .min(1)
      .max(64)
      .optional()
      .describe('`clk_...` (test keys only): the subscription lives on the test clock’s time'),
  })
  .strict()
  .transform((body, ctx) => {
    const amountMinor = checkAmount(body, ctx);
    const issues = customerIssues(body, { customerRequired: false });
    for (const issue of issues) ctx.addIssue({ code: 'custom', ...issue });
    const phases = (body.phases ?? []).map((phase, i) => {
      const parsed = toMinor(phase.amount, body.currency, { allowZero: true });
      if (!parsed.ok) {
        ctx.addIssue({ code: 'custom', path: ['phases', i, 'amount'], message: parsed.message });
        return undefined;
      }
      return { ...phase, amountMinor: parsed.minor };
    });
    if (amountMinor === undefined || issues.length > 0 || phases.some((p) => p === undefined)) return z.NEVER;
    return { ...body, amountMinor, phases: phases.map((p) => p!) };
  });

export type CreateSubscriptionBody = z.output<typeof createSubscriptionBody>;

const phaseSchema = z.object({
  id: z.string(),
  name: z.string(),
  order: z.number().int(),
  iterations: z.number().int().nullable(),
  amount: z.number(),
  billingIntervalDays: z.number().int(),
});

/** An invoice as the API shows it (PRODUCT.md "Lists"), also a subscription's `latestInvoice`. */
export const invoiceSchema = z
  .object({
    id: z.string(),
    subscriptionId: z.string(),
    status: z
      .enum(INVOICE_VIEW_STATUSES)
      .describe(
        '`requires_action`: its charge waits for the customer to authenticate at `hostedUrl`; `processing`: the processor decides its charge later; no other charge of the invoice starts meanwhile',
      ),
    amount: z.number(),
    currency: z.string(),
    periodStart: timestamp,
    periodEnd: timestamp,
    attempts: z.number().int(),
    nextAttemptAt: timestamp.nullable(),
    failureCode: z.string().nullable(),
    failureMessage: z.string().nullable(),
    declineType: z
      .enum(DECLINE_TYPES)
      .nullable()
      .describe('`hard`: never retried with this card (a new card is needed); `soft`: retried on schedule'),
    hostedUrl: z
      .string()
      .nullable()
      .describe('where the customer authenticates this invoice’s charge; null unless it waits for that'),
    paidAt: timestamp.nullable(),
    createdAt: timestamp,
  })
  .meta({ id: 'Invoice' });

export const subscriptionSchema = z
  .object({
    id: z.string(),
    externalId: z.string(),
    amount: z.number(),
    currency: z.string(),
    billingIntervalDays: z.number().int(),
    status: z.enum(SUBSCRIPTION_STATUSES),
    currentPeriodStart: timestamp.nullable(),
    currentPeriodEnd: timestamp.nullable(),
    phases: z.array(phaseSchema),
    redirectUrl: z.string().nullable(),
    createdAt: timestamp,
    updatedAt: timestamp,
    cancelledAt: timestamp.nullable(),
    cancellationReason: z.string().nullable(),
    environment: z.enum(['test', 'live']),
    processor: z.string(),
    customer: z
      .object({ email: z.string(), name: z.string().optional(), externalId: z.string().optional() })
      .nullable(),
    customerId: z
      .string()
      .nullable()
      .describe(
        'the customer (`cus_...`) named at creation with `customerId`, whose default pays its later periods; else null',
      ),
    description: z.string().nullable(),
    metadata: z.record(z.string(), z.string()).nullable(),
    callbackUrl: z.string().nullable(),
    returnUrl: z.string().nullable(),
    retryScheduleDays: z.array(z.number().int()),
    latestInvoice: invoiceSchema
      .nullable()
      .describe('the latest period’s invoice, as the invoice list shows it (`hostedUrl` and `declineType` included)'),
    testClock: z.string().nullable().describe('the test clock it lives on (its dates are the clock’s time), or null'),
  })
  .meta({ id: 'Subscription' });

const subscriptionParams = z.object({ subscriptionId: z.string() });

const cancelQuery = z
  .object({
    reason: z
      .string()
      .min(1)
      .max(CANCEL_REASON_MAX_LENGTH)
      .optional()
      .describe('recorded as cancellationReason (default merchant_request)'),
    notify: z
      .enum(['true', 'false'])
      .optional()
      .describe('email the customer (default true)')
      .transform((v) => v !== 'false'),
  })
  .strict();

const notFound = () => new AppError('not_found', 'Subscription not found.');

export function subscriptionRoutes(deps: {
  em: EntityManager;
  providers: ProviderRegistry;
  subscriptions: SubscriptionGateway;
  quotas?: Partial<QuotaSettings>;
}) {
  return [
    defineRoute({
      method: 'post',
      path: '/subscriptions',
      operationId: 'createSubscription',
      tag: 'Subscriptions',
      summary: 'Create a subscription (saved-card token, or card authorized by the customer at `redirectUrl`).',
      description:
        'With `cardToken` the first charge is made at once and the answer is `active` (or `past_due` when declined or awaiting the customer’s authentication, `pending` when the processor decides later; a free first phase activates without a charge). Without, the answer is `pending` with a `redirectUrl` where the customer authorizes a card. The same externalId with the same amount and currency returns the existing subscription.',
      body: createSubscriptionBody,
      response: subscriptionSchema,
      errors: [
        'validation_error',
        'invalid_card_token',
        'external_id_conflict',
        ...AUTH_ERRORS,
        'provider_not_configured',
        'provider_invalid_response',
        'provider_unavailable',
        'service_unavailable',
        'quota_exceeded',
        'not_found',
        'test_clock_advancing',
        'test_clock_full',
      ],
      handler: async ({ body, caller }) => {
        assertCallbackAllowed(body.callbackUrl, caller.environment);
        // Live keys never see a clock (PRODUCT.md "Test clocks").
        if (body.testClock !== undefined && caller.environment !== 'test') {
          throw errors.validation('Invalid request body: testClock: test clocks are for test keys only.', {
            issues: [{ path: 'testClock', code: 'test_only', message: 'test clocks are for test keys only' }],
          });
        }
        if (body.testClock !== undefined && !isId('testClock', body.testClock)) throw testClockNotFound();
        return createSubscription(deps, caller, await withSubscriptionCustomer(deps.em, caller, body));
      },
    }),
    defineRoute({
      method: 'get',
      path: '/subscriptions/{subscriptionId}',
      operationId: 'getSubscription',
      tag: 'Subscriptions',
      summary: 'Retrieve a subscription (from PostgreSQL; workers need not be up).',
      params: subscriptionParams,
      response: subscriptionSchema,
      errors: [...AUTH_ERRORS, 'not_found'],
      handler: async ({ params, caller }) => {
        if (!isId('subscription', params.subscriptionId)) throw notFound();
        const view = await findSubscriptionView(deps.em, params.subscriptionId, caller);
        if (!view) throw notFound();
        return view;
      },
    }),
    defineRoute({
      method: 'delete',
      path: '/subscriptions/{subscriptionId}',
      operationId: 'cancelSubscription',
      tag: 'Subscriptions',
      summary: 'Cancel a subscription now and for good; answers it in its resulting state.',
      description:
        'Query: `reason` (recorded as `cancellationReason`, default `merchant_request`), `notify` (`true`|`false`, default true: email the customer). The current period stays valid (`currentPeriodEnd` unchanged), no proration, open invoices are voided; a charge already in flight finishes first and no new one starts. A cancelled subscription is answered unchanged.',
      params: subscriptionParams,
      query: cancelQuery,
      response: subscriptionSchema,
      errors: [...AUTH_ERRORS, 'not_found', 'service_unavailable'],
      handler: async ({ params, query, caller }) => {
        if (!isId('subscription', params.subscriptionId)) throw notFound();
        return cancelSubscription(deps, caller, params.subscriptionId, query);
      },
    }),
  ];
}
