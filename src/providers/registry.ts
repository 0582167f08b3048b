import type { MikroORM } from '@mikro-orm/postgresql';
import { KEY_ENVIRONMENTS, MerchantProvider, type KeyEnvironment, type Processor } from '../db/entities';
import type { Logger } from '../logger';
import { SandboxProvider } from './sandbox/client';
import { instrumentProvider } from './instrumented';
import { limitProvider, type ProviderCallLimiter } from './callLimits';
import { StripeProvider } from './stripe/client';
import { stripeKeyMode } from './stripe/mapping';
import { ProviderSecrets, type ProviderSecretField } from './secrets';
import type { PaymentProvider } from './types';

/** What a Stripe adapter is built from: one merchant's account for one environment. */
export interface StripeProviderSettings {
  secretKey: string;
  webhookSecret: string | null;
  apiBase: string;
  timeoutMs: number;
}

export type StripeProviderFactory = (settings: StripeProviderSettings) => PaymentProvider;

export interface ProviderSettings {
  sandboxUrl: string;
  sandboxApiKey: string;
  sandboxWebhookSecret: string;
  timeoutMs: number;
  /** Where merchants' configurations are read (table merchant_providers). */
  orm: MikroORM;
  /** PROVIDER_SECRETS_KEY (base64). Unset: a configuration with secrets cannot be used. */
  secretsKey?: string;
  /** PROVIDER_SECRETS_PREVIOUS_KEYS (comma-separated base64): keys that still decrypt. */
  secretsPreviousKeys?: string;
  /** STRIPE_API_BASE. */
  stripeApiBase?: string;
  /** Builds the Stripe adapter (default: src/providers/stripe; tests may put a stand-in). */
  stripe?: StripeProviderFactory;
  /**
   * How long a merchant's configuration, once read, is used without reading it again (default
   * 15 s). API and worker processes also drop an entry as soon as a change commits (`forget`,
   * fed by LISTEN); this bound is what is left when that notification is lost.
   */
  cacheTtlMs?: number;
  /** Where unusable configurations are reported (operator-visible). */
  logger?: Logger;
  /**
   * Per-merchant limits on the calls made to an existing record's provider (`forRecord`: the
   * worker's activities; decision 0085). Unset: none (the API's registry).
   */
  callLimiter?: ProviderCallLimiter;
}

/** The record a provider is resolved for: what served it, for whom. */
export interface RecordProviderRef {
  merchantId: string;
  environment: KeyEnvironment;
  processor: string;
}

/**
 * A configuration exists but cannot be used: its secrets do not decrypt (another or no
 * PROVIDER_SECRETS_KEY). Only an operator can fix it; nothing was sent to any provider.
 */
export class ProviderConfigurationError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ProviderConfigurationError';
  }
}

export const PROVIDER_CACHE_TTL_MS = 15_000;
/** Merchants whose resolution is kept; the oldest entry goes first beyond it. */
const CACHE_MAX_ENTRIES = 10_000;

interface Resolved {
  /** The configured processor; null without a configuration. */
  processor: Processor | null;
  provider: PaymentProvider | null;
  /** Changes with every change of the row (its secrets are re-encrypted with a new IV). */
  version: string | null;
}

const UNCONFIGURED: Resolved = { processor: null, provider: null, version: null };

/**
 * Which provider serves what (PRODUCT.md, "Providers"). A new record takes its merchant's
 * configured provider for the key's environment, or without one the built-in sandbox (test)
 * or none (live: 500 `provider_not_configured`). An existing record keeps the processor that
 * served it: `sandbox` is always the built-in sandbox; `stripe` is the merchant's current Stripe
 * configuration for that environment, and none once it was removed or moved to another
 * processor (the record then behaves as one whose provider is missing).
 *
 * Configurations are read from PostgreSQL and kept per (merchant, environment) for
 * `cacheTtlMs`; a built adapter is reused while the row is unchanged.
 */
export class ProviderRegistry {
  /** The built-in sandbox, instrumented like every provider the registry hands out. */
  readonly sandbox: PaymentProvider;
  private readonly orm: MikroORM;
  /**
   * PROVIDER_SECRETS_KEY's cipher (null when unset): it also seals merchants' signing secrets
   * (src/domain/signingSecrets.ts, decision 0067).
   */
  readonly secrets: ProviderSecrets | null;
  private readonly stripeFactory: StripeProviderFactory;
  private readonly stripeApiBase: string;
  private readonly timeoutMs: number;
  private readonly cacheTtlMs: number;
  private readonly logger: Logger | undefined;
  private readonly callLimiter: ProviderCallLimiter | undefined;
  private readonly cache = new Map<string, { expiresAt: number; resolved: Promise<Resolved> }>();

  constructor(settings: ProviderSettings) {
    this.sandbox = instrumentProvider(
      new SandboxProvider({
        baseUrl: settings.sandboxUrl.replace(/\/$/, ''),
        apiKey: settings.sandboxApiKey,
        webhookSecret: settings.sandboxWebhookSecret,
        timeoutMs: settings.timeoutMs,
      }),
    );
    this.orm = settings.orm;
    this.secrets = settings.secretsKey
      ? ProviderSecrets.fromBase64(settings.secretsKey, settings.secretsPreviousKeys)
      : null;
    this.stripeFactory = settings.stripe ?? ((s) => new StripeProvider(s));
    this.stripeApiBase = (settings.stripeApiBase ?? 'https://api.stripe.com').replace(/\/$/, '');
    this.timeoutMs = settings.timeoutMs;
    this.cacheTtlMs = settings.cacheTtlMs ?? PROVIDER_CACHE_TTL_MS;
    this.logger = settings.logger;
    this.callLimiter = settings.callLimiter?.enabled ? settings.callLimiter : undefined;
  }

  /**
   * Drops the cached resolution of one configuration: its next use reads the row. Called by the
   * process's listener when `providers:set`/`providers:remove` commits (decision 0081).
   */
  forget(merchantId: string, environment: KeyEnvironment): void {
    this.cache.delete(`${merchantId}:${environment}`);
  }

  /** Drops every cached resolution (the change listener reconnected: changes may have been missed). */
  forgetAll(): void {
    this.cache.clear();
  }

  /** The provider that needs no merchant configuration (the sandbox's webhook route). */
  builtIn(processor: string): PaymentProvider | null {
    return processor === this.sandbox.name ? this.sandbox : null;
  }

  /** The provider a new payment or subscription of this merchant and key environment goes to. */
  async forNewRecord(merchantId: string, environment: KeyEnvironment): Promise<PaymentProvider | null> {
    const configured = await this.configured(merchantId, environment);
    if (configured.processor) return configured.provider;
    return environment === 'test' ? this.sandbox : null;
  }

  /** The provider of an existing record: the processor it was created with, never another. */
  async forRecord(record: RecordProviderRef): Promise<PaymentProvider | null> {
    const provider = await this.recordProvider(record);
    // Each call admitted for the record's merchant first (a refused one sends nothing).
    return provider && this.callLimiter ? limitProvider(provider, record.merchantId, this.callLimiter) : provider;
  }

  private async recordProvider(record: RecordProviderRef): Promise<PaymentProvider | null> {
    if (record.processor === this.sandbox.name) return this.sandbox;
    const configured = await this.configured(record.merchantId, record.environment);
    return configured.processor === record.processor ? configured.provider : null;
  }

  /** The merchant's Stripe providers (test and/or live): who may have signed a Stripe webhook. */
  async stripeWebhookCandidates(
    merchantId: string,
  ): Promise<Array<{ environment: KeyEnvironment; provider: PaymentProvider }>> {
    const candidates: Array<{ environment: KeyEnvironment; provider: PaymentProvider }> = [];
    for (const environment of KEY_ENVIRONMENTS) {
      const configured = await this.configured(merchantId, environment);
      if (configured.processor === 'stripe' && configured.provider) {
        candidates.push({ environment, provider: configured.provider });
      }
    }
    return candidates;
  }

  private configured(merchantId: string, environment: KeyEnvironment): Promise<Resolved> {
    const key = `${merchantId}:${environment}`;
    const now = Date.now();
    const hit = this.cache.get(key);
    if (hit && hit.expiresAt > now) return hit.resolved;
    const resolved = this.load(merchantId, environment, hit?.resolved);
    this.cache.delete(key); // re-inserted last: the Map's order is the eviction order
    this.cache.set(key, { expiresAt: now + this.cacheTtlMs, resolved });
    // A failed read (database down, secrets unusable) is not kept: the next call reads again.
    resolved.catch(() => {
      if (this.cache.get(key)?.resolved === resolved) this.cache.delete(key);
    });
    if (this.cache.size > CACHE_MAX_ENTRIES) {
      const oldest = this.cache.keys().next().value;
      if (oldest !== undefined) this.cache.delete(oldest);
    }
    return resolved;
  }

  private async load(merchantId: string, environment: KeyEnvironment, previous?: Promise<Resolved>): Promise<Resolved> {
    const row = await this.orm.em.fork().findOne(MerchantProvider, { merchant: merchantId, environment });
    if (!row) return UNCONFIGURED;
    const version = [row.processor, row.updatedAt.getTime(), row.secretKeyCiphertext, row.webhookSecretCiphertext].join(
      '|',
    );
    const before = previous ? await previous.catch(() => null) : null;
    if (before?.version === version) return before;
    return { processor: row.processor, provider: this.build(row, merchantId, environment), version };
  }

  private build(row: MerchantProvider, merchantId: string, environment: KeyEnvironment): PaymentProvider | null {
    switch (row.processor) {
      case 'sandbox':
        return this.sandbox;
      case 'stripe': {
        const secretKey = this.reveal(row.secretKeyCiphertext, merchantId, environment, 'secret_key');
        if (secretKey === null) {
          throw this.unusable(merchantId, environment, 'its stripe configuration has no secret key');
        }
        // Refused when configured (decision 0058); a row stored before, or altered, is refused here.
        if (stripeKeyMode(secretKey) !== environment) {
          throw this.unusable(merchantId, environment, `its Stripe key is not a ${environment}-mode key`);
        }
        const provider = this.stripeFactory({
          secretKey,
          webhookSecret: this.reveal(row.webhookSecretCiphertext, merchantId, environment, 'webhook_secret'),
          apiBase: this.stripeApiBase,
          timeoutMs: this.timeoutMs,
        });
        // Records store the provider's name as their processor: it must be the configured one.
        if (provider.name !== row.processor) {
          throw new Error(`the stripe factory built a provider named ${provider.name}`);
        }
        return instrumentProvider(provider);
      }
    }
  }

  private reveal(
    stored: string | null,
    merchantId: string,
    environment: KeyEnvironment,
    field: ProviderSecretField,
  ): string | null {
    if (stored === null) return null;
    if (!this.secrets) throw this.unusable(merchantId, environment, 'PROVIDER_SECRETS_KEY is not set');
    try {
      return this.secrets.decrypt(stored, { merchantId, environment, field });
    } catch {
      throw this.unusable(
        merchantId,
        environment,
        `its ${field} does not decrypt (another PROVIDER_SECRETS_KEY, or the row was altered)`,
      );
    }
  }

  private unusable(merchantId: string, environment: KeyEnvironment, why: string): ProviderConfigurationError {
    this.logger?.error({ merchantId, environment }, `provider configuration unusable: ${why}`);
    return new ProviderConfigurationError(
      `The provider configuration of ${merchantId} (${environment}) is unusable: ${why}.`,
    );
  }
}

export function providerRegistryFromConfig(
  config: {
    sandboxUrl: string;
    SANDBOX_API_KEY: string;
    SANDBOX_WEBHOOK_SECRET: string;
    PROVIDER_TIMEOUT_MS: number;
    PROVIDER_SECRETS_KEY?: string;
    PROVIDER_SECRETS_PREVIOUS_KEYS?: string;
    STRIPE_API_BASE: string;
  },
  orm: MikroORM,
  options: { stripe?: StripeProviderFactory; logger?: Logger; callLimiter?: ProviderCallLimiter } = {},
): ProviderRegistry {
  return new ProviderRegistry({
    sandboxUrl: config.sandboxUrl,
    sandboxApiKey: config.SANDBOX_API_KEY,
    sandboxWebhookSecret: config.SANDBOX_WEBHOOK_SECRET,
    timeoutMs: config.PROVIDER_TIMEOUT_MS,
    orm,
    secretsKey: config.PROVIDER_SECRETS_KEY,
    secretsPreviousKeys: config.PROVIDER_SECRETS_PREVIOUS_KEYS,
    stripeApiBase: config.STRIPE_API_BASE,
    ...options,
  });
}
