import type { MikroORM } from '@mikro-orm/postgresql';
import type { Logger } from '../src/logger';
import type { ProviderRegistry } from '../src/providers/registry';
import type { Client } from '@temporalio/client';
import type { ResolveHost } from '../src/net/pinnedPost';

/** What activities are built from: passed in by the worker, so tests can build them too. */
export interface ActivityDeps {
  orm: MikroORM;
  logger: Logger;
  providers: ProviderRegistry;
  /** Where providers send their webhooks: this service's public base URL. */
  publicBaseUrl: string;
  /** Timeout of one merchant callback POST. */
  callbackTimeoutMs?: number;
  /**
   * Test-environment callbacks may target loopback / private addresses (default true: development
   * and tests). Production passes false unless ALLOW_PRIVATE_CALLBACKS; live ones never may.
   */
  privateTestCallbacks?: boolean;
  /** Resolves callback hosts (default: the system resolver); the delivery connects to the address it answered. */
  resolveHost?: ResolveHost;
  /** Temporal client, for activities that start workflows (the orphan-payment sweeper). */
  client: Client;
  taskQueue: string;
  callbackRetryInitialSeconds: number;
  /** First status poll of a pending refund the sweeper starts (the API's REFUND_POLL_INITIAL_SECONDS). */
  refundPollInitialSeconds?: number;
  /** Billing day and authorization wait of subscriptions the sweeper starts (the API's settings). */
  billingDaySeconds?: number;
  subscriptionAuthorizationExpirySeconds?: number;
  /** nodemailer transport URL for customer emails (default: the local catcher). */
  smtpUrl?: string;
  mailFrom?: string;
}
