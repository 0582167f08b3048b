import { z } from 'zod';
import type { EntityManager } from '@mikro-orm/postgresql';
import { AppError } from '../../errors';
import { isId } from '../../ids';
import { findRefundView, listPaymentRefunds } from '../../domain/refunds';
import type { RefundGateway } from '../../temporal/refundGateway';
import { createRefund } from '../../app/refunds';
import { AUTH_ERRORS, defineRoute } from '../routing';
import { currency, externalId, majorAmount } from '../inputs';
import { timestamp } from '../schemas';
import type { QuotaSettings } from '../../rules/quotas';

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

export function refundRoutes(deps: { em: EntityManager; refunds: RefundGateway; quotas?: Partial<QuotaSettings> }) {
  return [
    defineRoute({
      method: 'post',
      path: '/payments/{paymentId}/refund',
      operationId: 'createRefund',
      tag: 'Refunds',
      summary: 'Refund a captured payment in full or in part (the same externalId returns the existing refund).',
      description:
        'Checks, in order: 404, replay (same externalId on this payment), 400 (currency, amount), 409 `payment_not_refundable`, 409 `refund_in_flight`, 409 `charge_disputed` (a dispute of the payment is open), 422 `amount_exceeds_refundable`, 429 `quota_exceeded` (the payment has its maximum number of refunds, QUOTA_REFUNDS_PER_PAYMENT, default 100). The answer is the refund, terminal or `pending`.',
      params: paymentParams,
      body: createRefundBody,
      response: refundSchema,
      errors: [
        'validation_error',
        'external_id_conflict',
        ...AUTH_ERRORS,
        'not_found',
        'payment_not_refundable',
        'refund_in_flight',
        'charge_disputed',
        'amount_exceeds_refundable',
        'quota_exceeded',
        'provider_invalid_response',
        'provider_unavailable',
      ],
      handler: async ({ params, body, caller }) => {
        if (!isId('payment', params.paymentId)) throw paymentNotFound();
        return createRefund(deps, caller, params.paymentId, body);
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
      errors: [...AUTH_ERRORS, 'not_found'],
      handler: async ({ params, caller }) => {
        if (!isId('payment', params.paymentId)) throw paymentNotFound();
        const refunds = await listPaymentRefunds(deps.em, caller, params.paymentId);
        if (!refunds) throw paymentNotFound();
        return { refunds };
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
      errors: [...AUTH_ERRORS, 'not_found'],
      handler: async ({ params, caller }) => {
        const notFound = new AppError('not_found', 'Refund not found.');
        if (!isId('refund', params.refundId)) throw notFound;
        const refund = await findRefundView(deps.em, caller, params.refundId);
        if (!refund) throw notFound;
        return refund;
      },
    }),
  ];
}
