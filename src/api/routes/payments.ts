import { z } from 'zod';
import type { EntityManager } from '@mikro-orm/postgresql';
import { AppError } from '../../errors';
import { PAYMENT_STATUSES } from '../../db/entities';
import { isId } from '../../ids';
import { findPaymentView, presentPayment } from '../../domain/payments';
import type { ProviderRegistry } from '../../providers/registry';
import type { PaymentGateway } from '../../temporal/paymentGateway';
import { createPayment, withCustomer } from '../../app/payments';
import { AUTH_ERRORS, defineRoute } from '../routing';
import {
  customerIssues,
  checkAmount,
  currency,
  customer,
  externalId,
  freeForm,
  httpUrl,
  assertCallbackAllowed,
  majorAmount,
  metadata,
  optionalRecordId,
} from '../inputs';
import { timestamp } from '../schemas';
import type { QuotaSettings } from '../../rules/quotas';

export interface PaymentSettings {
  taskQueue: string;
  paymentWaitMs: number;
  paymentExpirySeconds: number;
  callbackRetryInitialSeconds: number;
  /** A processing payment's first question to the provider without a webhook, then doubling up to daily. */
  processingPollSeconds?: number;
  /** Per-merchant quotas (decision 0079); absent ones take their defaults. */
  quotas?: Partial<QuotaSettings>;
}

export const createPaymentBody = z
  .object({
    amount: majorAmount,
    currency,
    externalId,
    customer: customer.optional().describe('required unless `customerId` names one of the merchant’s customers'),
    customerId: optionalRecordId(
      'a customer (`cus_...`) instead of `customer` (both: 400); its email, name and externalId are repeated',
    ),
    paymentMethodId: optionalRecordId(
      "one of the customer's payment methods (`pm_...`, with `customerId`): the token flow with that card. With neither it nor `cardToken`: the customer's default (token flow), or the hosted flow when it has none or `saveCardEnabled` is true",
    ),
    billing: z.optional(freeForm),
    callbackUrl: httpUrl.optional(),
    cardToken: z
      .string()
      .min(1)
      .max(255)
      .optional()
      .describe('saved-card token flow; a bad token gives 400 invalid_card_token'),
    description: z.string().max(1000).optional(),
    metadata: metadata.optional(),
    returnUrl: httpUrl.optional(),
    saveCardEnabled: z.boolean().optional(),
  })
  .strict()
  .transform((body, ctx) => {
    const amountMinor = checkAmount(body, ctx);
    const issues = customerIssues(body);
    for (const issue of issues) ctx.addIssue({ code: 'custom', ...issue });
    return amountMinor === undefined || issues.length > 0 ? z.NEVER : { ...body, amountMinor };
  });

export type CreatePaymentBody = z.output<typeof createPaymentBody>;

export const paymentSchema = z
  .object({
    id: z.string(),
    externalId: z.string(),
    amount: z.number(),
    amountRefunded: z.number(),
    amountRefundable: z.number().describe('max(0, amount - amountRefunded - the refund in flight - amountDisputed)'),
    amountDisputed: z.number().describe('the sum of its open, lost and accepted disputes'),
    disputed: z.boolean().describe('one of its disputes is open: refunds are refused (409 `charge_disputed`)'),
    currency: z.string(),
    status: z
      .enum(PAYMENT_STATUSES)
      .describe(
        '`requires_action`: the customer authenticates at `nextAction.url` (3-D Secure), voided at `expiresAt` if not; `processing`: the processor decides later (no expiry).',
      ),
    processor: z.string(),
    providerTransactionId: z.string().nullable(),
    redirectUrl: z.string().nullable(),
    nextAction: z
      .object({ type: z.literal('redirect'), url: z.string() })
      .nullable()
      .describe('While `requires_action`: where to send the customer to authenticate; else null.'),
    createdAt: timestamp,
    updatedAt: timestamp,
    expiresAt: timestamp,
    environment: z.enum(['test', 'live']),
    customer: z
      .object({ email: z.string().nullable(), name: z.string().optional(), externalId: z.string().optional() })
      .describe(
        'as sent; with `customerId`, the email, name and externalId of that customer (`email` null when it has none)',
      ),
    customerId: z.string().nullable().describe('the customer (`cus_...`) the payment was made for, else null'),
    paymentMethodId: z.string().nullable().describe("the customer's saved payment method charged, else null"),
    description: z.string().nullable(),
    metadata: z.record(z.string(), z.string()).nullable(),
    billing: z.record(z.string(), z.unknown()).nullable(),
    callbackUrl: z.string().nullable(),
    returnUrl: z.string().nullable(),
    saveCardEnabled: z.boolean(),
    failureCode: z.string().nullable(),
    failureMessage: z.string().nullable(),
  })
  .meta({ id: 'Payment' });

const paymentIdParams = z.object({ paymentId: z.string() });

export function paymentRoutes(deps: {
  em: EntityManager;
  providers: ProviderRegistry;
  payments: PaymentGateway;
  settings: PaymentSettings;
}) {
  return [
    defineRoute({
      method: 'post',
      path: '/payments',
      operationId: 'createPayment',
      tag: 'Payments',
      summary: 'Create a payment (hosted page, or saved-card token) or return the one this externalId names.',
      description:
        'With `cardToken` the answer carries the outcome (`succeeded` or `failed`), or `requires_action` (send the customer to `nextAction.url` to authenticate; the outcome follows as an event) or `processing` (the processor decides later; the outcome follows as an event); without, the payment is `created` with a `redirectUrl` for the customer. The same externalId with the same amount and currency returns the existing payment.',
      body: createPaymentBody,
      response: paymentSchema,
      errors: [
        'validation_error',
        'invalid_card_token',
        'external_id_conflict',
        ...AUTH_ERRORS,
        'provider_not_configured',
        'provider_invalid_response',
        'provider_unavailable',
        'quota_exceeded',
        'not_found',
      ],
      handler: async ({ body, caller }) => {
        assertCallbackAllowed(body.callbackUrl, caller.environment);
        return createPayment(deps, caller, await withCustomer(deps.em, caller, body));
      },
    }),
    defineRoute({
      method: 'get',
      path: '/payments/{paymentId}',
      operationId: 'getPayment',
      tag: 'Payments',
      summary: 'Retrieve a payment.',
      params: paymentIdParams,
      response: paymentSchema,
      errors: [...AUTH_ERRORS, 'not_found'],
      handler: async ({ params, caller }) => {
        if (!isId('payment', params.paymentId)) throw new AppError('not_found', 'Payment not found.');
        const payment = await findPaymentView(deps.em, params.paymentId, caller);
        if (!payment) throw new AppError('not_found', 'Payment not found.');
        return presentPayment(payment);
      },
    }),
  ];
}
