import { z } from 'zod';
import { UniqueConstraintViolationException } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Client } from '@temporalio/client';
import { Merchant, Subscription, SubscriptionPhase } from '../../db/entities';
import { AppError } from '../../errors';
import { isId } from '../../ids';
import { toMinor } from '../../rules/money';
import { DEFAULT_RETRY_SCHEDULE_DAYS, SUBSCRIPTION_STATUSES } from '../../rules/subscriptionPlan';
import {
  findSubscriptionView,
  insertSubscription,
  planOf,
  type SubscriptionResponse,
} from '../../domain/subscriptions';
import { INVOICE_VIEW_STATUSES } from '../../domain/invoices';
import type { ProviderRegistry } from '../../providers/registry';
import { temporalReachable } from '../../temporal/reachability';
import { providerTrouble, workflowServiceUnavailable } from '../temporalOutcome';
import { SubscriptionGateway } from '../../temporal/subscriptionGateway';
import { CANCEL_REASON_MAX_LENGTH, type StartOutcome } from '../../../workflows/subscriptionApi';
import type { Caller } from '../context';
import { AUTH_ERRORS, defineRoute } from '../routing';
import { processorForCreate } from '../providerFor';
import { providerRejection } from '../providerRejection';
import {
  assertCallbackAllowed,
  checkAmount,
  currency,
  customer,
  externalId,
  httpUrl,
  majorAmount,
  metadata,
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
  })
  .strict()
  .transform((body, ctx) => {
    const amountMinor = checkAmount(body, ctx);
    const phases = (body.phases ?? []).map((phase, i) => {
      const parsed = toMinor(phase.amount, body.currency, { allowZero: true });
      if (!parsed.ok) {
        ctx.addIssue({ code: 'custom', path: ['phases', i, 'amount'], message: parsed.message });
        return undefined;
      }
      return { ...phase, amountMinor: parsed.minor };
    });
    if (amountMinor === undefined || phases.some((p) => p === undefined)) return z.NEVER;
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
    description: z.string().nullable(),
    metadata: z.record(z.string(), z.string()).nullable(),
    callbackUrl: z.string().nullable(),
    returnUrl: z.string().nullable(),
    retryScheduleDays: z.array(z.number().int()),
    latestInvoice: z
      .object({
        id: z.string(),
        status: z.enum(INVOICE_VIEW_STATUSES),
        amount: z.number(),
        periodStart: timestamp,
        periodEnd: timestamp,
        attempts: z.number().int(),
        nextAttemptAt: timestamp.nullable(),
        failureCode: z.string().nullable(),
        failureMessage: z.string().nullable(),
        paidAt: timestamp.nullable(),
      })
      .nullable(),
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

function conflict(existing: Subscription, body: CreateSubscriptionBody): AppError | undefined {
  if (existing.amountMinor === body.amountMinor && existing.currency === body.currency) return undefined;
  return new AppError(
    'external_id_conflict',
    'A subscription with this externalId exists with another amount or currency.',
    { subscriptionId: existing.id },
  );
}

export function subscriptionRoutes(deps: {
  em: EntityManager;
  client: Client;
  providers: ProviderRegistry;
  settings: SubscriptionSettings;
}) {
  const { client, providers, settings } = deps;

  const gateway = new SubscriptionGateway(client, { ...settings, waitMs: settings.paymentWaitMs });

  /**
   * Inserts the subscription with its phases and commits, or finds the one this externalId
   * already names. Its workflow is started after the commit (a workflow never looks for a row
   * that is not there); a commit whose start never happened is picked up by the sweeper.
   */
  async function createOrFind(
    caller: Caller,
    body: CreateSubscriptionBody,
    processor: string,
  ): Promise<{ subscription: Subscription; phases: SubscriptionPhase[] | null }> {
    return deps.em.fork().transactional(async (tx) => {
      const existing = await tx.findOne(Subscription, { merchant: caller.merchantId, externalId: body.externalId });
      if (existing) {
        // externalIds stay unique per merchant across environments (one unique key): the other
        // environment's subscription is refused without being named or described.
        if (existing.environment !== caller.environment) {
          throw new AppError('external_id_conflict', 'This externalId is used by a record of the other environment.');
        }
        const mismatch = conflict(existing, body);
        if (mismatch) throw mismatch;
        return { subscription: existing, phases: null };
      }
      const { subscription, phases } = insertSubscription(tx, tx.getReference(Merchant, caller.merchantId), {
        merchantId: caller.merchantId,
        environment: caller.environment,
        processor,
        externalId: body.externalId,
        amountMinor: body.amountMinor,
        currency: body.currency,
        billingIntervalDays: body.billingIntervalDays,
        ...(body.cardToken ? { cardToken: body.cardToken } : {}),
        ...(body.customer ? { customer: body.customer } : {}),
        ...(body.description ? { description: body.description } : {}),
        ...(body.metadata ? { metadata: body.metadata } : {}),
        ...(body.callbackUrl ? { callbackUrl: body.callbackUrl } : {}),
        ...(body.returnUrl ? { returnUrl: body.returnUrl } : {}),
        retryScheduleDays: body.retryScheduleDays ?? DEFAULT_RETRY_SCHEDULE_DAYS,
        phases: body.phases.map((p) => ({
          name: p.name,
          iterations: p.iterations,
          amountMinor: p.amountMinor,
          billingIntervalDays: p.billingIntervalDays,
        })),
      });
      await tx.flush();
      return { subscription, phases };
    });
  }

  /** Starts the workflow (unless it runs) and waits, bounded, for the subscription's first outcome. */
  async function firstOutcome(
    subscription: Subscription,
    phases: SubscriptionPhase[] | null,
  ): Promise<StartOutcome | 'no_answer'> {
    const stored =
      phases ??
      (await deps.em
        .fork()
        .find(SubscriptionPhase, { subscription: subscription.id }, { orderBy: { position: 'asc' } }));
    return gateway.startAndAwaitFirstOutcome({
      ...subscription,
      merchantId: subscription.merchant.id,
      plan: planOf(subscription, stored),
    });
  }

  return [
    defineRoute({
      method: 'post',
      path: '/subscriptions',
      operationId: 'createSubscription',
      tag: 'Subscriptions',
      summary: 'Create a subscription (saved-card token, or card authorized by the customer at `redirectUrl`).',
      description:
        'With `cardToken` the first charge is made at once and the answer is `active` (or `past_due` when declined; a free first phase activates without a charge). Without, the answer is `pending` with a `redirectUrl` where the customer authorizes a card. The same externalId with the same amount and currency returns the existing subscription.',
      body: createSubscriptionBody,
      response: subscriptionSchema,
      errors: {
        400: ['validation_error', 'invalid_card_token', 'external_id_conflict'],
        ...AUTH_ERRORS,
        500: ['provider_not_configured'],
        502: ['provider_invalid_response'],
        503: ['provider_unavailable', 'service_unavailable'],
      },
      handler: async ({ body, caller }) => {
        assertCallbackAllowed(body.callbackUrl, caller.environment);
        const processor = await processorForCreate(providers, caller, async () => {
          const existing = await deps.em
            .fork()
            .findOne(
              Subscription,
              { merchant: caller.merchantId, externalId: body.externalId, environment: caller.environment },
              { fields: ['processor'] },
            );
          return existing?.processor ?? null;
        });
        // Two identical requests at once: the loser's insert violates the unique externalId and,
        // once more, finds the winner's subscription.
        const { subscription, phases } = await createOrFind(caller, body, processor).catch((err: unknown) => {
          if (err instanceof UniqueConstraintViolationException) return createOrFind(caller, body, processor);
          throw err;
        });
        const outcome: StartOutcome | 'no_answer' =
          subscription.status === 'created' ? await firstOutcome(subscription, phases) : { kind: 'settled' };
        const view = await findSubscriptionView(deps.em, subscription.id, caller);
        if (!view) {
          if (outcome !== 'no_answer' && outcome.kind === 'rejected') throw providerRejection(outcome);
          throw new AppError('concurrent_request', 'A request with this externalId is being processed; retry.');
        }
        if (view.status !== 'created') return view;
        if (outcome === 'no_answer' && !(await temporalReachable(client))) {
          throw workflowServiceUnavailable(
            'The subscription is recorded; the workflow service did not answer, and its first step is taken as soon as it is reachable. Repeat the request to see the result.',
            { subscription: view },
          );
        }
        throw troubleOf(outcome, view);
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
      errors: { ...AUTH_ERRORS, 404: ['not_found'] },
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
      errors: { ...AUTH_ERRORS, 404: ['not_found'], 503: ['service_unavailable'] },
      handler: async ({ params, query, caller }) => {
        if (!isId('subscription', params.subscriptionId)) throw notFound();
        const before = await findSubscriptionView(deps.em, params.subscriptionId, caller);
        if (!before) throw notFound();
        if (before.status === 'cancelled') return before;
        const result = await gateway.cancel(params.subscriptionId, {
          reason: query.reason ?? 'merchant_request',
          notify: query.notify,
        });
        const after = await findSubscriptionView(deps.em, params.subscriptionId, caller);
        if (!after) throw notFound();
        if (after.status === 'cancelled') return after;
        if (result === 'accepted') {
          throw workflowServiceUnavailable(
            'The cancellation is accepted and takes effect as soon as the workers resume; repeat the request to see the result.',
            { subscription: after, cancellation: 'accepted' },
          );
        }
        if (result === 'no_answer') {
          throw workflowServiceUnavailable(
            'The workflow service did not answer in time; nothing was decided yet. Repeat the request to see the result.',
            { subscription: after },
          );
        }
        return after; // a closed workflow: the record says what became of the subscription
      },
    }),
  ];
}

/** A subscription still `created` after the wait: the first charge's outcome will follow. */
function troubleOf(outcome: StartOutcome | 'no_answer', view: SubscriptionResponse): AppError {
  if (outcome !== 'no_answer' && outcome.kind === 'provider_invalid') {
    return providerTrouble(
      outcome.kind,
      'The payment provider returned an invalid response; the subscription exists and its first charge will be confirmed.',
      { subscription: view },
    );
  }
  return new AppError(
    'provider_unavailable',
    'The payment provider did not answer in time; the subscription exists and its first step is retried automatically. Retry with the same externalId to see it.',
    { subscription: view },
  );
}
