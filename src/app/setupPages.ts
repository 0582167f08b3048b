import type { EntityManager } from '@mikro-orm/postgresql';
import type { Logger } from '../logger';
import { addPaymentMethod } from '../domain/customers';
import type { ProviderRegistry } from '../providers/registry';
import { CustomerRecord } from '../db/entities';
import { tellSubscriptionsOfCard, type CardNewsGateway } from './cardNews';
import type { SetupPage, SetupPageAnswer } from '../rules/setupPages';

/** What a look at a setup page uses: the database, the processor, the subscriptions to tell. */
type SetupPageDeps = {
  em: EntityManager;
  providers: ProviderRegistry;
  logger?: Logger;
  subscriptions?: CardNewsGateway;
};

/**
 * Asks the processor what became of a setup page and keeps its card for the customer, once
 * (the payment method id is the page's: a second look or a webhook keeps nothing more). The page's
 * workflow calls it when no webhook comes; the webhook, having read the customer, calls
 * {@link keepSetupCard}.
 */
export async function lookAtSetupPage(deps: SetupPageDeps, page: SetupPage): Promise<SetupPageAnswer> {
  const customer = await deps.em.fork().findOne(CustomerRecord, { id: page.customerId });
  if (!customer) return 'ended';
  return keepSetupCard(deps, customer, page);
}

/**
 * {@link lookAtSetupPage} of the page's customer, read already. The customer's subscriptions
 * waiting for a card are told of it (decision 0088).
 */
export async function keepSetupCard(
  deps: SetupPageDeps,
  customer: CustomerRecord,
  page: SetupPage,
): Promise<SetupPageAnswer> {
  const provider = await deps.providers.forRecord({
    merchantId: customer.merchant.id,
    environment: customer.environment,
    processor: page.processor,
  });
  // The processor's credentials removed meanwhile: nobody to ask now, maybe later.
  if (!provider) return 'pending';
  const pp = await provider.findPayment({ transactionId: page.transactionId });
  if (!pp) return 'pending';
  if (pp.status === 'failed' || pp.status === 'canceled') return 'ended';
  if (pp.status !== 'succeeded') return 'pending';
  // Completed without a card to keep: nothing more will come of it.
  if (!pp.savedCardToken) return 'ended';
  const added = await addPaymentMethod(deps.em, customer.id, {
    id: page.paymentMethodId,
    processor: page.processor,
    reference: pp.savedCardToken,
    providerCustomerId: null,
    card: pp.savedCard,
  });
  if (added) await tellSubscriptionsOfCard(deps, added);
  return 'added';
}
