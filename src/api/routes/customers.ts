import { z } from 'zod';
import type { EntityManager } from '@mikro-orm/postgresql';
import { isId } from '../../ids';
import { errors } from '../../errors';
import { testClockNotFound } from '../../domain/testClocks';
import {
  createOrFindCustomer,
  customerNotFound,
  findCustomer,
  listCustomers,
  listPaymentMethods,
  paymentMethodNotFound,
  presentCustomer,
  presentPaymentMethod,
} from '../../domain/customers';
import {
  attachPaymentMethod,
  changeCustomer,
  removePaymentMethod,
  setupPaymentMethod,
  type CustomerUseCases,
} from '../../app/customers';
import type { SubscriptionGateway } from '../../temporal/subscriptionGateway';
import type { ProviderRegistry } from '../../providers/registry';
import type { Logger } from '../../logger';
import { CursorCodec } from '../cursor';
import { externalId, httpUrl, metadata } from '../inputs';
import { AUTH_ERRORS, defineRoute } from '../routing';
import { timestamp } from '../schemas';
import { page, type ListSettings } from './lists';

/** PRODUCT.md, "Customers and payment methods" (decision 0087). */
export const customerSchema = z
  .object({
    id: z.string().describe('`cus_...`'),
    externalId: z.string(),
    email: z.string().nullable(),
    name: z.string().nullable(),
    metadata: z.record(z.string(), z.string()).nullable(),
    defaultPaymentMethodId: z
      .string()
      .nullable()
      .describe('the payment method charged when a payment or subscription names neither a method nor a token'),
    testClock: z
      .string()
      .nullable()
      .describe('the test clock it lives on (its `createdAt` is the clock’s time), or null'),
    createdAt: timestamp,
    updatedAt: timestamp,
  })
  .meta({ id: 'Customer' });

const paymentMethodFields = {
  id: z.string().describe('`pm_...`'),
  customerId: z.string(),
  processor: z.string().describe('the processor that verified and keeps the card (`sandbox`, `stripe`)'),
  card: z.object({
    brand: z.string().nullable(),
    last4: z.string().nullable(),
    expMonth: z.number().int().nullable(),
    expYear: z.number().int().nullable(),
  }),
  createdAt: timestamp,
};

export const paymentMethodSchema = z.object(paymentMethodFields).meta({ id: 'PaymentMethod' });
const deletedPaymentMethodSchema = z
  .object({ ...paymentMethodFields, deleted: z.literal(true) })
  .meta({ id: 'DeletedPaymentMethod' });

const email = z.email().max(320);
const name = z.string().min(1).max(255);

export const createCustomerBody = z
  .object({
    externalId,
    email: email.optional(),
    name: name.optional(),
    metadata: metadata.optional(),
    testClock: z
      .string()
      .min(1)
      .max(64)
      .optional()
      .describe('`clk_...` (test keys only): the customer lives on the test clock’s time'),
  })
  .strict();

export const updateCustomerBody = z
  .object({
    email: email.nullable().optional(),
    name: name.nullable().optional(),
    metadata: metadata.nullable().optional().describe('replaces the whole metadata; null clears it'),
    defaultPaymentMethodId: z
      .string()
      .min(1)
      .max(64)
      .nullable()
      .optional()
      .describe('one of the customer’s payment methods (else 404), or null: no default'),
  })
  .strict();

export const attachPaymentMethodBody = z
  .object({
    cardToken: z
      .string()
      .min(1)
      .max(255)
      .describe('the card to verify and keep (sandbox test tokens; Stripe: `pm_...`); never a `pm_` id of ours'),
  })
  .strict();

export const setupPaymentMethodBody = z
  .object({
    returnUrl: httpUrl
      .optional()
      .describe('where the page sends the customer back (Stripe needs one; the sandbox goes without)'),
  })
  .strict();

export const listCustomersQuery = z
  .object({
    ...page,
    email: z.string().min(1).max(320).optional(),
    externalId: z.string().min(1).max(255).optional(),
  })
  .strict();

const customerParams = z.object({ customerId: z.string() });
const paymentMethodParams = z.object({ customerId: z.string(), paymentMethodId: z.string() });

const PROVIDER_ERRORS = [
  'provider_rejected',
  'provider_not_configured',
  'provider_invalid_response',
  'provider_unavailable',
] as const;

const nextCursor = z.string().nullable().describe('pass as `cursor` for the next page; null on the last page');

export function customerRoutes(deps: {
  em: EntityManager;
  providers: ProviderRegistry;
  settings: ListSettings & { publicBaseUrl?: string };
  logger?: Logger;
  /** Tells the customer's subscriptions of a new card (decision 0088). */
  subscriptions?: Pick<SubscriptionGateway, 'customerCard'>;
  /** Watches each setup page in case its webhook never comes (decision 0089). */
  setupPages?: CustomerUseCases['setupPages'];
}) {
  const codec = new CursorCodec(deps.settings.cursorSecret);
  const useCases: CustomerUseCases = {
    em: deps.em,
    providers: deps.providers,
    ...(deps.logger ? { logger: deps.logger } : {}),
    ...(deps.subscriptions ? { subscriptions: deps.subscriptions } : {}),
    ...(deps.setupPages ? { setupPages: deps.setupPages } : {}),
  };
  const checkCustomerId = (id: string) => {
    if (!isId('customer', id)) throw customerNotFound();
  };
  return [
    defineRoute({
      method: 'post',
      path: '/customers',
      operationId: 'createCustomer',
      tag: 'Customers',
      summary: 'Create a customer, or return the one this externalId names.',
      description:
        'externalId is unique per merchant and environment: a replay with the same fields answers the same customer; with other fields, 400 `external_id_conflict`.',
      body: createCustomerBody,
      response: customerSchema,
      errors: [
        'validation_error',
        'external_id_conflict',
        'concurrent_request',
        'not_found',
        'test_clock_advancing',
        ...AUTH_ERRORS,
      ],
      handler: async ({ body, caller }) => {
        // Live keys never see a clock (PRODUCT.md "Test clocks"), as on POST /subscriptions.
        if (body.testClock !== undefined && caller.environment !== 'test') {
          throw errors.validation('Invalid request body: testClock: test clocks are for test keys only.', {
            issues: [{ path: 'testClock', code: 'test_only', message: 'test clocks are for test keys only' }],
          });
        }
        if (body.testClock !== undefined && !isId('testClock', body.testClock)) throw testClockNotFound();
        return presentCustomer(await createOrFindCustomer(deps.em, caller, body));
      },
    }),
    defineRoute({
      method: 'get',
      path: '/customers',
      operationId: 'listCustomers',
      tag: 'Customers',
      summary: "List the caller's customers (its merchant and its key's environment), newest first.",
      description:
        'Newest first (by creation time, then id); `nextCursor` fetches the next page (null on the last). Filters: `email` and `externalId` (exact).',
      query: listCustomersQuery,
      response: z.object({ customers: z.array(customerSchema), nextCursor }),
      errors: ['validation_error', ...AUTH_ERRORS],
      handler: async ({ query, caller }) => {
        const binding = {
          list: 'customers',
          merchantId: caller.merchantId,
          environment: caller.environment,
          filters: { email: query.email, externalId: query.externalId },
        };
        const result = await listCustomers(
          deps.em,
          caller,
          { email: query.email, externalId: query.externalId },
          { limit: query.limit, after: query.cursor === undefined ? undefined : codec.decode(query.cursor, binding) },
        );
        return { customers: result.items, nextCursor: result.next ? codec.encode(result.next, binding) : null };
      },
    }),
    defineRoute({
      method: 'get',
      path: '/customers/{customerId}',
      operationId: 'getCustomer',
      tag: 'Customers',
      summary: 'Retrieve a customer.',
      params: customerParams,
      response: customerSchema,
      errors: [...AUTH_ERRORS, 'not_found'],
      handler: async ({ params, caller }) => {
        checkCustomerId(params.customerId);
        const customer = await findCustomer(deps.em, caller, params.customerId);
        if (!customer) throw customerNotFound();
        return presentCustomer(customer);
      },
    }),
    defineRoute({
      method: 'patch',
      path: '/customers/{customerId}',
      operationId: 'updateCustomer',
      tag: 'Customers',
      summary: "Change a customer's email, name, metadata or default payment method.",
      description:
        'Fields sent replace the current ones (`null` clears one). `defaultPaymentMethodId` must name one of the customer’s payment methods (else 404).',
      params: customerParams,
      body: updateCustomerBody,
      response: customerSchema,
      errors: ['validation_error', ...AUTH_ERRORS, 'not_found'],
      handler: async ({ params, body, caller }) => {
        checkCustomerId(params.customerId);
        if (body.defaultPaymentMethodId && !isId('paymentMethod', body.defaultPaymentMethodId)) {
          throw paymentMethodNotFound();
        }
        return changeCustomer(useCases, caller, params.customerId, body);
      },
    }),
    defineRoute({
      method: 'post',
      path: '/customers/{customerId}/payment-methods',
      operationId: 'attachPaymentMethod',
      tag: 'Customers',
      summary: 'Verify a card with the processor and keep it for the customer.',
      description:
        'Each attach is a new payment method, even of a token attached before. The first one a customer without a default gets becomes its default. No money moves: no authentication, no ledger entry. An unknown token: 400 `invalid_card_token`; a declined verification: 402 `card_declined` with `details.declineCode`.',
      params: customerParams,
      body: attachPaymentMethodBody,
      response: paymentMethodSchema,
      errors: [
        'validation_error',
        'invalid_card_token',
        'card_declined',
        ...AUTH_ERRORS,
        'not_found',
        ...PROVIDER_ERRORS,
      ],
      handler: async ({ params, body, caller }) => {
        checkCustomerId(params.customerId);
        return attachPaymentMethod(useCases, caller, params.customerId, body.cardToken);
      },
    }),
    defineRoute({
      method: 'post',
      path: '/customers/{customerId}/payment-methods/setup',
      operationId: 'setupPaymentMethod',
      tag: 'Customers',
      summary: 'A hosted page where the customer enters a card, kept for the customer.',
      description:
        "Answers the page's `redirectUrl`, and the `paymentMethodId` the card will have. No money moves. When the customer completes the page, the processor's webhook adds the card (the customer's default when it has none); if the webhook never comes, the platform asks the processor itself, within minutes, for 25 hours.",
      params: customerParams,
      body: setupPaymentMethodBody,
      response: z.object({ redirectUrl: z.string(), paymentMethodId: z.string() }),
      errors: ['validation_error', ...AUTH_ERRORS, 'not_found', ...PROVIDER_ERRORS],
      handler: async ({ params, body, caller, ctx }) => {
        checkCustomerId(params.customerId);
        return setupPaymentMethod(useCases, caller, params.customerId, {
          ...(body.returnUrl ? { returnUrl: body.returnUrl } : {}),
          // Without PUBLIC_BASE_URL, the address this request reached (Koa's `origin` is null here).
          webhookBaseUrl: (deps.settings.publicBaseUrl ?? `${ctx.protocol}://${ctx.host}`).replace(/\/$/, ''),
        });
      },
    }),
    defineRoute({
      method: 'get',
      path: '/customers/{customerId}/payment-methods',
      operationId: 'listPaymentMethods',
      tag: 'Customers',
      summary: "The customer's payment methods (not deleted), newest first.",
      params: customerParams,
      response: z.object({ paymentMethods: z.array(paymentMethodSchema) }),
      errors: [...AUTH_ERRORS, 'not_found'],
      handler: async ({ params, caller }) => {
        checkCustomerId(params.customerId);
        const customer = await findCustomer(deps.em, caller, params.customerId);
        if (!customer) throw customerNotFound();
        const methods = await listPaymentMethods(deps.em, customer);
        return { paymentMethods: methods.map(presentPaymentMethod) };
      },
    }),
    defineRoute({
      method: 'delete',
      path: '/customers/{customerId}/payment-methods/{paymentMethodId}',
      operationId: 'deletePaymentMethod',
      tag: 'Customers',
      summary: 'Delete a payment method (the processor stops keeping the card).',
      description:
        "Answers the payment method as it was, with `deleted: true`; a later use of it is 404. Deleting the default leaves the customer without one. The customer's last card a subscription can charge is kept while a subscription of the customer still charges (409 `payment_method_in_use`).",
      params: paymentMethodParams,
      response: deletedPaymentMethodSchema,
      errors: [...AUTH_ERRORS, 'not_found', 'payment_method_in_use'],
      handler: async ({ params, caller }) => {
        checkCustomerId(params.customerId);
        if (!isId('paymentMethod', params.paymentMethodId)) throw paymentMethodNotFound();
        return removePaymentMethod(useCases, caller, params.customerId, params.paymentMethodId);
      },
    }),
  ];
}
