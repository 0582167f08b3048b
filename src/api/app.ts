import Koa from 'koa';
import Router from '@koa/router';
import { codecRoutes, type CodecSettings } from './routes/codec';
import type { MikroORM } from '@mikro-orm/postgresql';
import type { Client, Connection } from '@temporalio/client';
import type { Logger } from '../logger';
import { customerRoutes } from './routes/customers';
import { Authenticator } from '../auth/authenticator';
import type { ProviderRegistry } from '../providers/registry';
import type { OutcomeHintListener } from '../db/outcomeHints';
import type { AppState } from './context';
import { errorHandler } from './middleware/errorHandler';
import { httpMetrics } from '../metrics/api';
import { requestContext } from './middleware/requestContext';
import { authenticate } from './middleware/authenticate';
import { mountRoutes, type RouteDef } from './routing';
import { buildOpenApi } from './openapi';
import { apiKeyRoutes } from './routes/apiKeys';
import { healthRoutes } from './routes/health';
import { docsRoutes } from './routes/docs';
import { paymentRoutes, type PaymentSettings } from './routes/payments';
import { webhookRoutes } from './routes/webhooks';
import { refundRoutes, type RefundSettings } from './routes/refunds';
import { subscriptionRoutes, type SubscriptionSettings } from './routes/subscriptions';
import { listRoutes, type ListSettings } from './routes/lists';
import { rateLimiters, type RateLimitSettings } from './rateLimiter';
import { subscriptionPaymentMethodRoutes } from './routes/subscriptionPaymentMethod';
import { createPaymentGateway } from '../temporal/paymentGateway';
import { createRefundGateway } from '../temporal/refundGateway';
import { createSubscriptionGateway } from '../temporal/subscriptionGateway';
import { createDisputeGateway } from '../temporal/disputeGateway';
import { disputeRoutes } from './routes/disputes';
import { webhookEndpointRoutes } from './routes/webhookEndpoints';
import { testClockRoutes } from './routes/testClocks';
import { createTestClockGateway } from '../temporal/testClockGateway';
import { createSetupPageGateway } from '../temporal/setupPageGateway';
import { ProviderSecrets } from '../providers/secrets';
import { eventRoutes } from './routes/events';

export interface ApiSettings extends PaymentSettings, RefundSettings, SubscriptionSettings, ListSettings {
  authCacheTtlMs: number;
  publicBaseUrl?: string;
  /** Absent: no rate limits (tests that do not test them). */
  rateLimit?: RateLimitSettings;
  /** TRUST_PROXY_HOPS (absent: 0, X-Forwarded-For is not read). */
  trustProxyHops?: number;
  /** WORKFLOW_STUCK_AFTER_SECONDS, given to the payment, refund, dispute and subscription workflows (absent: an hour). */
  stuckAfterSeconds?: number;
  /** PROVIDER_SECRETS_KEY (base64): webhook endpoint secrets are stored encrypted with it. */
  secretsKey?: string;
  /** PROVIDER_SECRETS_PREVIOUS_KEYS: keys that still decrypt (decision 0080). */
  secretsPreviousKeys?: string;
  /** A card setup page's first look at the processor, doubling to hourly (absent: 60 s; tests lower it). */
  setupPagePollSeconds?: number;
}

export interface AppDeps {
  orm: MikroORM;
  client: Client;
  /** The client's connection, for the readiness probe. */
  temporal: Connection;
  providers: ProviderRegistry;
  logger: Logger;
  settings: ApiSettings;
  /** Hints of settled payment attempts (absent: the API waits for the workflow's Update). */
  outcomes?: OutcomeHintListener;
  /** The Temporal UI's codec endpoint (decision 0078); absent: not served. */
  codec?: CodecSettings;
  /** Routes mounted after the product's own, through the same pipeline (used by tests). */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- heterogeneous route list
  extraRoutes?: RouteDef<any, any, any>[];
}

/** The API's side of each workflow (src/temporal/): routes start and ask workflows only through these. */
export function apiGateways(deps: Pick<AppDeps, 'client' | 'settings' | 'outcomes'>) {
  const { client, settings, outcomes } = deps;
  return {
    payments: createPaymentGateway({ client, settings, ...(outcomes ? { outcomes } : {}) }),
    refunds: createRefundGateway({ client, settings, ...(outcomes ? { outcomes } : {}) }),
    subscriptions: createSubscriptionGateway({ client, settings }),
    disputes: createDisputeGateway({ client, settings }),
    testClocks: createTestClockGateway({ client, settings }),
    setupPages: createSetupPageGateway({ client, settings }),
  };
}

export function allRoutes(
  deps: Pick<AppDeps, 'orm' | 'client' | 'providers' | 'settings' | 'outcomes'> & Partial<Pick<AppDeps, 'logger'>>,
  gateways = apiGateways(deps),
) {
  const em = deps.orm.em;
  const { payments, refunds, subscriptions, disputes, testClocks, setupPages } = gateways;
  return [
    ...apiKeyRoutes(em),
    ...paymentRoutes({ em, providers: deps.providers, payments, settings: deps.settings }),
    ...refundRoutes({ em, refunds, ...(deps.settings.quotas ? { quotas: deps.settings.quotas } : {}) }),
    ...subscriptionRoutes({
      em,
      providers: deps.providers,
      subscriptions,
      ...(deps.settings.quotas ? { quotas: deps.settings.quotas } : {}),
    }),
    ...listRoutes({ em, settings: deps.settings }),
    ...customerRoutes({
      em,
      providers: deps.providers,
      settings: deps.settings,
      subscriptions,
      setupPages,
      ...(deps.logger ? { logger: deps.logger } : {}),
    }),
    ...subscriptionPaymentMethodRoutes({ em, subscriptions }),
    ...disputeRoutes({ em, providers: deps.providers, disputes }),
    ...webhookEndpointRoutes({
      em,
      secrets: deps.settings.secretsKey
        ? ProviderSecrets.fromBase64(deps.settings.secretsKey, deps.settings.secretsPreviousKeys)
        : null,
    }),
    ...eventRoutes({ em, settings: deps.settings }),
    ...testClockRoutes({ em, settings: deps.settings, testClocks, subscriptions }),
  ];
}

export function createApp(deps: AppDeps): Koa<AppState> {
  const app = new Koa<AppState>();
  // X-Forwarded-For is read only behind proxies the operator vouches for, and only their entries.
  const hops = deps.settings.trustProxyHops ?? 0;
  app.proxy = hops > 0;
  app.maxIpsCount = hops;
  // The error middleware answers every error; Koa's default handler would print stacks.
  app.silent = true;

  // providers:set / providers:remove take effect for the next request (decision 0081).
  deps.outcomes?.followProviderChanges({
    changed: (merchantId, environment) => deps.providers.forget(merchantId, environment),
    resync: () => deps.providers.forgetAll(),
  });
  const gateways = apiGateways(deps);
  const routes = [...allRoutes(deps, gateways), ...(deps.extraRoutes ?? [])];
  const authenticator = new Authenticator(deps.orm.em, deps.settings.authCacheTtlMs, deps.logger);
  const connection = deps.temporal;

  const limits = rateLimiters(deps.orm.em, deps.settings.rateLimit, deps.logger);
  const health = healthRoutes(
    {
      database: async () => {
        await deps.orm.em.getConnection().execute('select 1');
      },
      temporal: async () => {
        await connection.withDeadline(Date.now() + 2000, () => connection.healthService.check({}));
      },
    },
    limits.unauthenticated,
  );
  const docs = docsRoutes(buildOpenApi(routes, deps.settings.publicBaseUrl));
  const webhooks = webhookRoutes({
    ...gateways,
    em: deps.orm.em,
    providers: deps.providers,
    logger: deps.logger,
    ...(limits.unauthenticated ? { limiter: limits.unauthenticated } : {}),
  });
  const api = new Router<AppState>();
  mountRoutes(api, routes, authenticate(authenticator, limits));

  app.use(httpMetrics());
  app.use(requestContext(deps.logger));
  app.use(errorHandler());
  // The merchant API first: its requests (nearly all of them) are not matched against the
  // other routers on the way. No path is in two routers, so the order changes no answer.
  app.use(api.routes());
  app.use(health.routes());
  app.use(docs.routes());
  app.use(webhooks.routes());
  if (deps.codec) app.use(codecRoutes(deps.codec).routes());
  app.use(api.allowedMethods({ throw: true }));
  return app;
}
