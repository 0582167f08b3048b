import type { KeyEnvironment } from '../db/entities';
import { SandboxProvider } from './sandbox/client';
import type { PaymentProvider } from './types';

export interface ProviderSettings {
  sandboxUrl: string;
  sandboxApiKey: string;
  sandboxWebhookSecret: string;
  timeoutMs: number;
}

/**
 * Which provider serves which key: test keys use the sandbox (processor `sandbox`); live keys
 * use the live provider configured for the merchant, and none is configured yet, so live
 * payments answer 500 `provider_not_configured`.
 */
export class ProviderRegistry {
  private readonly sandbox: SandboxProvider;

  constructor(settings: ProviderSettings) {
    this.sandbox = new SandboxProvider({
      baseUrl: settings.sandboxUrl.replace(/\/$/, ''),
      apiKey: settings.sandboxApiKey,
      webhookSecret: settings.sandboxWebhookSecret,
      timeoutMs: settings.timeoutMs,
    });
  }

  forEnvironment(environment: KeyEnvironment): PaymentProvider | null {
    return environment === 'test' ? this.sandbox : null;
  }

  byName(processor: string): PaymentProvider | null {
    return processor === this.sandbox.name ? this.sandbox : null;
  }
}

export function providerRegistryFromConfig(config: {
  sandboxUrl: string;
  SANDBOX_API_KEY: string;
  SANDBOX_WEBHOOK_SECRET: string;
  PROVIDER_TIMEOUT_MS: number;
}): ProviderRegistry {
  return new ProviderRegistry({
    sandboxUrl: config.sandboxUrl,
    sandboxApiKey: config.SANDBOX_API_KEY,
    sandboxWebhookSecret: config.SANDBOX_WEBHOOK_SECRET,
    timeoutMs: config.PROVIDER_TIMEOUT_MS,
  });
}
