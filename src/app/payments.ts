import { quotasOf, type QuotaSettings } from '../rules/quotas';
import type { EntityManager } from '@mikro-orm/postgresql';
import { PROVIDER_OUTCOME } from '../rules/providerFailures';
import { AppError } from '../errors';
import type { ProviderRegistry } from '../providers/registry';
import {
  createOrFindPayment,
  existingPaymentProcessor,
  findPaymentView,
  presentPayment,
  type PaymentRequest,
  type PaymentResponse,
} from '../domain/payments';
import { processorForCreate } from '../domain/providerFor';
import { customerNotFound, findCustomer, findPaymentMethod, paymentMethodNotFound } from '../domain/customers';
import { isId } from '../ids';
import { Payment } from '../db/entities';
import type { RecordScope } from '../domain/scope';
import type { PaymentGateway } from '../temporal/paymentGateway';
import { providerRejection } from './providerRejection';
import { providerTrouble, workflowServiceUnavailable } from './workflowTrouble';

/**
 * The payment use cases the API's routes call: the domain (PostgreSQL) and the payment's
 * workflow (its gateway) together, and what their outcome is answered as.
 */
export interface PaymentUseCases {
  em: EntityManager;
  providers: ProviderRegistry;
  payments: Pick<PaymentGateway, 'submit'>;
  settings: { paymentExpirySeconds: number; quotas?: Partial<QuotaSettings> };
}

const serviceUnavailableNoRecord = () =>
  workflowServiceUnavailable(
    'The workflow service is temporarily unavailable; nothing was decided. Retry with the same externalId.',
    {},
  );

/** What POST /payments may name instead of `customer` (PRODUCT.md, "Customers and payment methods"). */
export type PaymentRequestWithCustomer = Omit<PaymentRequest, 'customer' | 'customerId' | 'paymentMethodId'> & {
  customer?: PaymentRequest['customer'];
  customerId?: string;
  paymentMethodId?: string;
};

/**
 * A create naming `customerId`: its `customer` repeats the customer's email, name and externalId;
 * `paymentMethodId` is charged by its processor reference (the token flow); with neither it nor a
 * `cardToken`, the customer's default is, unless there is none or `saveCardEnabled` asks for the
 * hosted page. Another merchant's or environment's customer, or a method that is not the
 * customer's (or deleted): 404.
 */
export async function withCustomer(
  em: EntityManager,
  caller: RecordScope,
  body: PaymentRequestWithCustomer,
): Promise<PaymentRequest> {
  const customerId = body.customerId;
  if (customerId === undefined) {
    const { customerId: _customerId, paymentMethodId: _paymentMethodId, customer, ...rest } = body;
    return { ...rest, customer: customer! };
  }
  try {
    return await resolveCustomer(em, caller, { ...body, customerId });
  } catch (err) {
    // A repeat of a create whose method was deleted since (or whose customer changed): the payment
    // its externalId names answers, as every repeat does.
    if (!(err instanceof AppError && err.code === 'not_found')) throw err;
    const existing = await em
      .fork()
      .findOne(Payment, { merchant: caller.merchantId, environment: caller.environment, externalId: body.externalId });
    if (!existing || existing.customerId !== body.customerId) throw err;
    const { customerId: _customerId, paymentMethodId: _paymentMethodId, customer: _customer, ...rest } = body;
    return { ...rest, customer: existing.customer };
  }
}

async function resolveCustomer(
  em: EntityManager,
  caller: RecordScope,
  body: PaymentRequestWithCustomer & { customerId: string },
): Promise<PaymentRequest> {
  const { customerId, paymentMethodId, customer: _given, ...rest } = body;
  if (!isId('customer', customerId)) throw customerNotFound();
  const customer = await findCustomer(em, caller, customerId);
  if (!customer) throw customerNotFound();
  const snapshot = {
    email: customer.email,
    ...(customer.name !== null ? { name: customer.name } : {}),
    externalId: customer.externalId,
  };
  const methodId =
    paymentMethodId ??
    (body.cardToken === undefined && !body.saveCardEnabled
      ? (customer.defaultPaymentMethodId ?? undefined)
      : undefined);
  if (methodId === undefined) return { ...rest, customer: snapshot, customerId: customer.id };
  const method = isId('paymentMethod', methodId) ? await findPaymentMethod(em, customer, methodId) : null;
  if (!method) throw paymentMethodNotFound();
  return {
    ...rest,
    customer: snapshot,
    customerId: customer.id,
    paymentMethodId: method.id,
    cardToken: method.providerReference,
    paymentMethodProcessor: method.processor,
  };
}

/**
 * POST /payments: creates the payment (or finds the one its externalId names), submits it to its
 * workflow (Update-with-Start) and answers its outcome, or the error that says what is left.
 */
export async function createPayment(
  deps: PaymentUseCases,
  caller: RecordScope,
  body: PaymentRequest,
): Promise<PaymentResponse> {
  const { em, providers, payments, settings } = deps;
  const processor = await processorForCreate(providers, caller, () =>
    existingPaymentProcessor(em, caller, body.externalId),
  );
  if (body.paymentMethodProcessor !== undefined && body.paymentMethodProcessor !== processor) {
    throw new AppError(
      'validation_error',
      `The payment method is kept by ${body.paymentMethodProcessor}; new payments of this key go to ${processor}.`,
      {
        issues: [
          {
            path: 'paymentMethodId',
            code: 'processor_mismatch',
            message: 'The payment method is of another processor.',
          },
        ],
      },
    );
  }
  for (let round = 0; round < 3; round++) {
    const payment = await createOrFindPayment(em, caller, body, {
      processor,
      expirySeconds: settings.paymentExpirySeconds,
      openHostedLimit: quotasOf(settings.quotas).openHostedPayments,
    });
    if (payment.status !== 'created') return presentPayment(payment);

    const outcome = await payments.submit(payment);
    // The hint of the statement that applied the attempt carries the payment as it committed.
    if (typeof outcome === 'object' && 'payment' in outcome && outcome.payment) return outcome.payment;
    const current = await findPaymentView(em, payment.id, caller);
    if (!current) {
      if (outcome === 'unreachable') throw serviceUnavailableNoRecord();
      if (typeof outcome === 'object' && outcome.kind === 'rejected') throw providerRejection(outcome);
      continue; // discarded by a concurrent request's rejection: create afresh
    }
    const data = presentPayment(current);
    if (outcome === 'closed' || current.status !== 'created') return data;
    if (outcome === 'unreachable') {
      // Its workflow may or may not have started. If it did, it makes this request's attempt
      // (attemptOnStart); if not, the sweeper gives it one that attempts nothing without a
      // repeat of this request. A repeat answers with the outcome either way.
      throw workflowServiceUnavailable(
        'The workflow service is temporarily unavailable; the payment is not settled yet. Retry with the same externalId.',
        { payment: data },
      );
    }
    if (outcome === 'no_answer') {
      throw new AppError(
        'provider_unavailable',
        'The payment provider did not answer in time; the outcome will follow. Retry with the same externalId.',
        { payment: data },
      );
    }
    switch (outcome.kind) {
      case PROVIDER_OUTCOME.unavailable:
        throw providerTrouble(
          outcome.kind,
          'The payment provider is temporarily unreachable; nothing was charged. Retry with the same externalId.',
          { payment: data },
        );
      case PROVIDER_OUTCOME.timeout:
        throw providerTrouble(outcome.kind, 'The payment provider did not answer in time; the outcome will follow.', {
          payment: data,
        });
      case PROVIDER_OUTCOME.invalid:
        throw providerTrouble(
          outcome.kind,
          'The payment provider returned an invalid response; the outcome will follow.',
          { payment: data },
        );
      default:
        return data;
    }
  }
  throw new AppError('concurrent_request', 'Concurrent requests with this externalId; retry.');
}
