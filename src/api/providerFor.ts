import { AppError } from '../errors';
import type { ProviderRegistry } from '../providers/registry';
import type { PaymentProvider } from '../providers/types';

/** The provider that serves the caller's key environment; none configured: 500 provider_not_configured. */
export function providerFor(providers: ProviderRegistry, environment: 'test' | 'live'): PaymentProvider {
  const provider = providers.forEnvironment(environment);
  if (!provider) {
    throw new AppError(
      500,
      'provider_not_configured',
      `No active payment provider is configured for ${environment} keys.`,
    );
  }
  return provider;
}
