import type { EntityManager } from '@mikro-orm/postgresql';
import { AppError } from '../errors';
import { newId } from '../ids';
import type { Logger } from '../logger';
import {
  addPaymentMethod,
  customerNotFound,
  deletePaymentMethod,
  findCustomer,
  presentCustomer,
  presentPaymentMethod,
  updateCustomer,
  type CustomerFields,
  type CustomerResponse,
  type PaymentMethodResponse,
} from '../domain/customers';
import { providerFor } from '../domain/providerFor';
import type { RecordScope } from '../domain/scope';
import { ProviderError } from '../providers/errors';
import { ProviderConfigurationError, type ProviderRegistry } from '../providers/registry';
import type { AttachPaymentMethodResult, PaymentProvider, ProviderPayment } from '../providers/types';
import { CustomerRecord, PaymentMethod } from '../db/entities';
import type { SubscriptionGateway } from '../temporal/subscriptionGateway';
import { tellSubscriptionsOfCard } from './cardNews';
import { keepSetupCard } from './setupPages';
import type { SetupPage } from '../rules/setupPages';
import { isId } from '../ids';
import { rejectionErrorCode } from '../rules/providerFailures';

/**
 * The payment method use cases the API's routes call: the processor verifies and keeps the card
 * (no money moves, so the API asks it directly, as for dispute evidence), then the domain keeps
 * our record of it.
 */
export interface CustomerUseCases {
  em: EntityManager;
  providers: ProviderRegistry;
  logger?: Logger;
  /** Tells the customer's subscriptions of a new card (decision 0088); absent: nobody is told. */
  subscriptions?: Pick<SubscriptionGateway, 'customerCard'>;
  /** Starts a setup page's workflow, which keeps its card if no webhook comes (decision 0089). */
  setupPages?: { start(page: SetupPage & { merchantId: string }): Promise<unknown> };
}

/**
 * PATCH /customers/{id}: the fields sent replace the customer's; a default named that can be
 * charged is a new card for the customer's subscriptions (decision 0088).
 */
export async function changeCustomer(
  deps: CustomerUseCases,
  caller: RecordScope,
  customerId: string,
  patch: CustomerFields & { defaultPaymentMethodId?: string | null },
): Promise<CustomerResponse> {
  const customer = await updateCustomer(deps.em, caller, customerId, patch);
  if (patch.defaultPaymentMethodId) {
    const method = await deps.em
      .fork()
      .findOne(PaymentMethod, { id: patch.defaultPaymentMethodId, customer: customer.id, deletedAt: null });
    if (method) await tellSubscriptionsOfCard(deps, method);
  }
  return presentCustomer(customer);
}

/**
 * POST /customers/{id}/payment-methods: a new payment method for each attach (even of a token
 * attached before); the first one the customer has (no default) becomes its default.
 */
export async function attachPaymentMethod(
  deps: CustomerUseCases,
  caller: RecordScope,
  customerId: string,
  cardToken: string,
): Promise<PaymentMethodResponse> {
  const customer = await findCustomer(deps.em, caller, customerId);
  if (!customer) throw customerNotFound();
  const provider = await providerFor(deps.providers, caller);
  const id = newId('paymentMethod');
  let result: AttachPaymentMethodResult;
  try {
    result = await provider.attachPaymentMethod({
      idempotencyKey: id,
      cardToken,
      customer: {
        id: customer.id,
        email: customer.email,
        name: customer.name,
        providerCustomerId: customer.providerCustomers[provider.name] ?? null,
      },
      metadata: { customerId: customer.id, paymentMethodId: id, merchantId: caller.merchantId },
    });
  } catch (err) {
    throw attachTrouble(err);
  }
  if (result.status === 'declined') {
    throw new AppError('card_declined', `The processor declined the card: ${result.message}`, {
      declineCode: result.declineCode,
    });
  }
  const pm = await addPaymentMethod(deps.em, customer.id, {
    id,
    processor: provider.name,
    reference: result.reference,
    providerCustomerId: result.providerCustomerId,
    card: result.card,
  });
  if (!pm) throw customerNotFound();
  await tellSubscriptionsOfCard(deps, pm);
  return presentPaymentMethod(pm);
}

/**
 * An attach the processor did not answer: nothing of ours was kept, so every failure is answered
 * as it is and the merchant may simply attach again (a card kept at the processor after a lost
 * answer is never charged: no record names it).
 */
function attachTrouble(err: unknown): AppError {
  if (!(err instanceof ProviderError)) throw err;
  switch (err.kind) {
    case 'rejected': {
      const code = rejectionErrorCode(err.code ?? '');
      return new AppError(
        code,
        code === 'invalid_card_token'
          ? 'The card token is not valid.'
          : `The processor refused the card: ${err.message}`,
      );
    }
    case 'misconfigured':
      return new AppError('provider_not_configured', 'The payment provider is not configured correctly.');
    case 'invalid_response':
      return new AppError('provider_invalid_response', 'The processor answered something invalid; nothing was kept.');
    default:
      return new AppError(
        'provider_unavailable',
        'The processor is unreachable or did not answer in time; nothing was kept. Retry.',
      );
  }
}

/**
 * POST /customers/{id}/payment-methods/setup: a hosted page where the customer enters a card
 * (the processor's setup mode: no money moves). The card is added by the processor's webhook
 * (`addSetupCard`), or by the page's workflow when none comes (decision 0089), under the payment
 * method id chosen here, which is also the processor's idempotency key and travels in its metadata.
 */
export async function setupPaymentMethod(
  deps: CustomerUseCases,
  caller: RecordScope,
  customerId: string,
  options: { returnUrl?: string; webhookBaseUrl: string },
): Promise<{ redirectUrl: string; paymentMethodId: string }> {
  const customer = await findCustomer(deps.em, caller, customerId);
  if (!customer) throw customerNotFound();
  const provider = await providerFor(deps.providers, caller);
  const id = newId('paymentMethod');
  let pp: ProviderPayment;
  try {
    pp = await provider.createPayment({
      idempotencyKey: id,
      amountMinor: 0,
      currency: 'USD',
      mode: 'setup',
      ...(options.returnUrl ? { returnUrl: options.returnUrl } : {}),
      webhookUrl: `${options.webhookBaseUrl}/webhooks/${provider.name}`,
      metadata: { customerId: customer.id, paymentMethodId: id, merchantId: caller.merchantId },
    });
  } catch (err) {
    throw attachTrouble(err);
  }
  if (!pp.redirectUrl) {
    throw new AppError('provider_invalid_response', 'The processor gave no page for the customer; nothing was kept.');
  }
  // The webhook is only a hint: the page's workflow asks the processor too, and keeps the card
  // if no webhook comes. A start that fails leaves the webhook to do it (the page is the
  // processor's, already made): the merchant still gets its page.
  const page = {
    customerId: customer.id,
    paymentMethodId: id,
    processor: provider.name,
    transactionId: pp.transactionId,
  };
  try {
    await deps.setupPages?.start({ ...page, merchantId: caller.merchantId });
  } catch (err) {
    deps.logger?.warn({ err, ...page }, 'setup page workflow not started: only the webhook keeps its card');
  }
  return { redirectUrl: pp.redirectUrl, paymentMethodId: id };
}

/**
 * A processor's webhook about a card setup page (`metadata.customerId` and `paymentMethodId`):
 * the processor is asked what became of it (the webhook is only a hint), and a saved card is
 * kept for the customer under the payment method id of the setup, once. `scope`: the merchant and
 * environment whose secret verified the webhook (Stripe); the customer must be theirs.
 */
export async function addSetupCard(
  deps: CustomerUseCases,
  processor: string,
  event: { transactionId: string; metadata: Record<string, string> },
  scope?: RecordScope,
): Promise<'added' | 'ignored'> {
  const { customerId, paymentMethodId, merchantId } = event.metadata;
  if (!customerId || !paymentMethodId || !isId('customer', customerId) || !isId('paymentMethod', paymentMethodId)) {
    return 'ignored';
  }
  const customer = await deps.em.fork().findOne(CustomerRecord, { id: customerId });
  if (!customer || (merchantId !== undefined && customer.merchant.id !== merchantId)) return 'ignored';
  if (scope && (customer.merchant.id !== scope.merchantId || customer.environment !== scope.environment)) {
    return 'ignored';
  }
  const answer = await keepSetupCard(deps, customer, {
    customerId: customer.id,
    paymentMethodId,
    processor,
    transactionId: event.transactionId,
  });
  return answer === 'added' ? 'added' : 'ignored';
}

/**
 * DELETE /customers/{id}/payment-methods/{pmId}: ours is deleted at once; the processor is then
 * asked to stop keeping the card (best effort: a failure there is logged, the card is never
 * charged again since no record names it).
 */
export async function removePaymentMethod(
  deps: CustomerUseCases,
  caller: RecordScope,
  customerId: string,
  pmId: string,
): Promise<PaymentMethodResponse & { deleted: true }> {
  const pm = await deletePaymentMethod(deps.em, caller, customerId, pmId);
  let provider: PaymentProvider | null = null;
  try {
    provider = await deps.providers.forRecord({
      merchantId: caller.merchantId,
      environment: caller.environment,
      processor: pm.processor,
    });
    await provider?.detachPaymentMethod(pm.providerReference);
  } catch (err) {
    if (!(err instanceof ProviderError) && !(err instanceof ProviderConfigurationError)) throw err;
    deps.logger?.warn({ err, paymentMethodId: pm.id }, 'the processor was not told to detach the card');
  }
  return { ...presentPaymentMethod(pm), deleted: true };
}
