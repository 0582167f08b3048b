import { AppError } from '../errors';
import { ProviderConfigurationError, type ProviderRegistry } from '../providers/registry';
import type { PaymentProvider } from '../providers/types';

/**
 * The provider a new record of the caller goes to: the merchant's configured one for the key's
 * environment (test without one: the built-in sandbox). None, or one that cannot be used (its
 * secrets do not decrypt; the registry logs why): `provider_not_configured`.
 */
export async function providerFor(
  providers: ProviderRegistry,
  caller: { merchantId: string; environment: 'test' | 'live' },
): Promise<PaymentProvider> {
  let provider: PaymentProvider | null;
  try {
    provider = await providers.forNewRecord(caller.merchantId, caller.environment);
  } catch (err) {
    if (!(err instanceof ProviderConfigurationError)) throw err;
    provider = null;
  }
  if (!provider) {
    throw new AppError(
      'provider_not_configured',
      `No active payment provider is configured for ${caller.environment} keys.`,
    );
  }
  return provider;
}

/**
 * The processor a create request's record has: a new record's (the caller's provider), or, when
 * no provider would take a new one (the configuration was removed), the record the request's
 * externalId already names, so a repeat of the request answers with it as before.
 */
export async function processorForCreate(
  providers: ProviderRegistry,
  caller: { merchantId: string; environment: 'test' | 'live' },
  existingProcessor: () => Promise<string | null>,
): Promise<string> {
  try {
    return (await providerFor(providers, caller)).name;
  } catch (err) {
    if (!(err instanceof AppError && err.code === 'provider_not_configured')) throw err;
    const processor = await existingProcessor();
    if (processor === null) throw err;
    return processor;
  }
}
