import { z } from 'zod';
import type { EntityManager } from '@mikro-orm/postgresql';
import { UniqueConstraintViolationException } from '@mikro-orm/core';
import {
  WithStartWorkflowOperation,
  WorkflowExecutionAlreadyStartedError,
  WorkflowUpdateFailedError,
  type Client,
} from '@temporalio/client';
import { Payment, Refund } from '../../db/entities';
import { AppError } from '../../errors';
import { isId } from '../../ids';
import { createRefund, findRefundWithPayment, presentRefund, type RefundCreation } from '../../domain/refunds';
import { refundWorkflowV2 } from '../../../workflows/refund';
import { refundOutcomeUpdate, type RefundOutcome } from '../../../workflows/refundApi';
import { refundWorkflowStartOptions } from '../../temporal/refundWorkflowOptions';
import { AUTH_ERRORS, defineRoute } from '../routing';
import { currency, externalId, majorAmount } from '../inputs';
import { timestamp } from '../schemas';
import { isDeadlineExceeded, isTemporalUnreachable, isUpdateAborted } from '../../temporal/grpcErrors';
import { firstOfAnswerAndHint, providerTrouble, workflowServiceUnavailable } from '../temporalOutcome';
import { temporalReachable } from '../../temporal/reachability';
import type { OutcomeHintListener, RefundOutcomeHint } from '../../db/outcomeHints';

export interface RefundSettings {
  taskQueue: string;
  refundWaitMs: number;
  callbackRetryInitialSeconds: number;
  refundPollInitialSeconds: number;
}

export const createRefundBody = z
  .object({
    externalId,
    amount: majorAmount.optional().describe('major units; omitted: the whole remaining refundable balance'),
    currency: currency.optional().describe("if sent, must be the payment's currency"),
    reason: z.string().max(500).optional(),
  })
  .strict();

export const refundSchema = z
  .object({
    id: z.string(),
    paymentId: z.string(),
    externalId: z.string(),
    amount: z.number(),
    currency: z.string(),
    status: z.enum(['pending', 'succeeded', 'failed']),
    failureCode: z.string().nullable(),
    failureMessage: z.string().nullable(),
    providerRefundId: z.string().nullable(),
    paymentAmountRefunded: z.number(),
    paymentAmountRefundable: z.number(),
    reason: z.string().nullable(),
    createdAt: timestamp,
    updatedAt: timestamp,
  })
  .meta({ id: 'Refund' });

const paymentParams = z.object({ paymentId: z.string() });
const refundParams = z.object({ refundId: z.string() });
const paymentNotFound = () => new AppError('not_found', 'Payment not found.');

export function refundRoutes(deps: {
  em: EntityManager;
  client: Client;
  settings: RefundSettings;
  outcomes?: OutcomeHintListener;
}) {
  const { client, settings, outcomes } = deps;

  /**
   * One round trip: Update-with-Start of `refund-<id>` (the refund is committed), waiting
   * (bounded) for its first outcome; a replay of a closed workflow reads the row.
   */
  async function awaitOutcome(
    { refund, payment }: RefundCreation,
    merchantId: string,
  ): Promise<RefundOutcome | RefundOutcomeHint | 'no_answer' | 'unreachable'> {
    const op = new WithStartWorkflowOperation(
      refundWorkflowV2,
      refundWorkflowStartOptions(
        {
          id: refund.id,
          externalId: refund.externalId,
          paymentId: payment.id,
          merchantId,
          amountMinor: refund.amountMinor,
          currency: refund.currency,
          callbackUrl: payment.callbackUrl,
        },
        settings,
      ),
    );
    const ask = () => client.workflow.executeUpdateWithStart(refundOutcomeUpdate, { startWorkflowOperation: op });
    try {
      return await client.withDeadline(Date.now() + settings.refundWaitMs, () =>
        // The hint comes when the refund's settlement commits, before the workflow task that
        // completes the Update: the answer is then the refund it carries (or read from PostgreSQL).
        outcomes ? firstOfAnswerAndHint(ask, outcomes.waitForRefund(refund.id)) : ask(),
      );
    } catch (err) {
      // Closed, or settled (the Update's validator rejects it): PostgreSQL has the outcome.
      if (err instanceof WorkflowExecutionAlreadyStartedError || err instanceof WorkflowUpdateFailedError) {
        return { kind: 'settled' };
      }
      // No answer in time with Temporal there: the refund is in flight (200 pending).
      // An Update aborted with its workflow task (a worker died mid-task) has no outcome either.
      if (isDeadlineExceeded(err) || isUpdateAborted(err)) {
        return (await temporalReachable(client)) ? 'no_answer' : 'unreachable';
      }
      if (isTemporalUnreachable(err)) return 'unreachable';
      throw err;
    }
  }

  /** The refund as answered, read in one plain statement with its payment. */
  const loadRefundView = async (refundId: string) => {
    const refund = await findRefundWithPayment(deps.em, refundId);
    return presentRefund(refund!, refund!.payment);
  };

  return [
    defineRoute({
      method: 'post',
      path: '/payments/{paymentId}/refund',
      operationId: 'createRefund',
      tag: 'Refunds',
      summary: 'Refund a captured payment in full or in part (the same externalId returns the existing refund).',
      description:
        'Checks, in order: 404, replay (same externalId on this payment), 400 (currency, amount), 409 `payment_not_refundable`, 409 `refund_in_flight`, 422 `amount_exceeds_refundable`. The answer is the refund, terminal or `pending`.',
      params: paymentParams,
      body: createRefundBody,
      response: refundSchema,
      errors: {
        400: ['validation_error', 'external_id_conflict'],
        ...AUTH_ERRORS,
        404: ['not_found'],
        409: ['payment_not_refundable', 'refund_in_flight'],
        422: ['amount_exceeds_refundable'],
        502: ['provider_invalid_response'],
        503: ['provider_unavailable'],
      },
      handler: async ({ params, body, caller }) => {
        if (!isId('payment', params.paymentId)) throw paymentNotFound();
        const create = () => createRefund(deps.em.fork(), caller, params.paymentId, body);
        // The same externalId sent for two payments at once: the loser's insert violates the
        // unique (merchant, externalId); once more, it sees the winner (replay or conflict).
        const created = await create().catch((err: unknown) => {
          if (err instanceof UniqueConstraintViolationException) return create();
          throw err;
        });
        // Committed, slot reserved. If the workflow cannot be started now (Temporal unreachable,
        // this process dies), the orphan sweeper starts it: the refund proceeds either way.
        const outcome = await awaitOutcome(created, caller.merchantId);
        // A hint sent by the settlement itself carries the refund as it committed.
        const settled = typeof outcome === 'object' && 'refund' in outcome ? outcome.refund : undefined;
        const view = settled ?? (await loadRefundView(created.refund.id));
        if (outcome === 'unreachable' && view.status === 'pending') {
          throw workflowServiceUnavailable(
            'The workflow service is temporarily unavailable; the refund is recorded and will proceed. Retry with the same externalId to see it.',
            { refund: view },
          );
        }
        if (typeof outcome !== 'object') return view;
        if (outcome.kind === 'provider_unavailable') {
          throw providerTrouble(
            outcome.kind,
            'The payment provider is unreachable; the refund failed and nothing was refunded.',
            { refund: view },
          );
        }
        if (outcome.kind === 'provider_invalid' && view.status === 'pending') {
          throw providerTrouble(
            outcome.kind,
            'The payment provider returned an invalid response; the refund stays pending until the provider confirms it.',
            { refund: view },
          );
        }
        return view;
      },
    }),
    defineRoute({
      method: 'get',
      path: '/payments/{paymentId}/refunds',
      operationId: 'listRefunds',
      tag: 'Refunds',
      summary: "List a payment's refunds, newest first (possibly empty).",
      params: paymentParams,
      response: z.object({ refunds: z.array(refundSchema) }),
      errors: { ...AUTH_ERRORS, 404: ['not_found'] },
      handler: async ({ params, caller }) => {
        if (!isId('payment', params.paymentId)) throw paymentNotFound();
        const em = deps.em.fork();
        const payment = await em.findOne(Payment, {
          id: params.paymentId,
          merchant: caller.merchantId,
          environment: caller.environment,
        });
        if (!payment) throw paymentNotFound();
        const refunds = await em.find(Refund, { payment: payment.id }, { orderBy: { createdAt: 'desc', id: 'desc' } });
        return { refunds: refunds.map((r) => presentRefund(r, payment)) };
      },
    }),
    defineRoute({
      method: 'get',
      path: '/refunds/{refundId}',
      operationId: 'getRefund',
      tag: 'Refunds',
      summary: 'Retrieve a refund.',
      params: refundParams,
      response: refundSchema,
      errors: { ...AUTH_ERRORS, 404: ['not_found'] },
      handler: async ({ params, caller }) => {
        const notFound = new AppError('not_found', 'Refund not found.');
        if (!isId('refund', params.refundId)) throw notFound;
        const refund = await deps.em
          .fork()
          .findOne(
            Refund,
            { id: params.refundId, merchant: caller.merchantId, payment: { environment: caller.environment } },
            { populate: ['payment'] },
          );
        if (!refund) throw notFound;
        return presentRefund(refund, refund.payment);
      },
    }),
  ];
}
