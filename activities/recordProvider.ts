import { ApplicationFailure } from '@temporalio/activity';
import type { KeyEnvironment, Merchant } from '../src/db/entities';
import { ProviderConfigurationError, type ProviderRegistry } from '../src/providers/registry';
import type { PaymentProvider } from '../src/providers/types';
import { PROVIDER_NOT_CONFIGURED } from '../src/rules/providerFailures';

/**
 * The provider of an existing record (its merchant, environment and the processor that served
 * it; see ProviderRegistry.forRecord); null when that processor is no longer configured. A
 * configuration that exists but cannot be used (its secrets do not decrypt) is retried until an
 * operator fixes it: it says nothing about the record, so nothing is decided from it.
 */
export async function recordProvider(
  providers: ProviderRegistry,
  record: { merchant: Pick<Merchant, 'id'>; environment: KeyEnvironment; processor: string },
): Promise<PaymentProvider | null> {
  try {
    return await providers.forRecord({
      merchantId: record.merchant.id,
      environment: record.environment,
      processor: record.processor,
    });
  } catch (err) {
    if (err instanceof ProviderConfigurationError) {
      throw ApplicationFailure.retryable(err.message, PROVIDER_NOT_CONFIGURED);
    }
    throw err;
  }
}
