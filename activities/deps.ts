import type { MikroORM } from '@mikro-orm/postgresql';
import type { Logger } from '../src/logger';
import type { ProviderRegistry } from '../src/providers/registry';
import type { KeyEnvironment } from '../src/db/entities';
import type { Plan } from '../src/rules/subscriptionPlan';
import type { ResolveHost } from '../src/net/pinnedPost';
import type { SubscriptionRecordForRevival } from '../src/rules/subscriptionCollection';
import type { CardNewsGateway } from '../src/app/cardNews';

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
  /** How activities start workflows (the orphan sweeper): the gateways of src/temporal/, built by the worker. */
  starters: WorkflowStarters;
  /**
   * NODE_ENV=production (default false: development and tests): test-environment subscription
   * emails go to the merchant, never to customer.email (decision 0066).
   */
  productionProfile?: boolean;
  /** Deliveries of events (decision 0069): per-merchant concurrency and the retry schedule's start. */
  deliveries?: { concurrencyPerMerchant?: number; retryInitialSeconds?: number };
  /** nodemailer transport URL for customer emails (default: the local catcher). */
  smtpUrl?: string;
  mailFrom?: string;
}

/** What a start came to: started (or already running), or closed for good (never started again). */
export type StartAnswer = 'started' | 'closed';

/**
 * What a revive came to (decision 0059): a new run for a live record, one running already, or
 * none running and none this code can resume where the record is (`skipped`).
 */
export type ReviveAnswer = 'started' | 'running' | 'skipped';

/**
 * The workflow starts the sweeper needs, in plain types: the gateways of src/temporal/ satisfy it
 * (the worker hands them in), so activities import neither the gateways nor workflows/.
 */
export interface WorkflowStarters {
  payment: {
    start(payment: {
      id: string;
      externalId: string;
      expiresAt: Date;
      callbackUrl: string | null;
      merchant: { id: string };
      amountMinor: number;
      currency: string;
      environment: KeyEnvironment;
    }): Promise<StartAnswer>;
    /** A live payment whose workflow ended: a new run, which asks the provider first. */
    revive(payment: Parameters<WorkflowStarters['payment']['start']>[0]): Promise<ReviveAnswer>;
  };
  refund: {
    start(refund: {
      id: string;
      externalId: string;
      paymentId: string;
      merchantId: string;
      amountMinor: number;
      currency: string;
      callbackUrl: string | null;
    }): Promise<StartAnswer>;
    /** A pending refund whose workflow ended: a new run, which asks the provider first. */
    revive(refund: Parameters<WorkflowStarters['refund']['start']>[0]): Promise<ReviveAnswer>;
  };
  subscription: {
    start(subscription: {
      id: string;
      merchantId: string;
      externalId: string;
      currency: string;
      environment?: string;
      cardToken: string | null;
      callbackUrl: string | null;
      plan: Plan;
      testClock?: { id: string } | null;
      clockCreatedAt?: Date | null;
    }): Promise<StartAnswer>;
    /**
     * A test clock's advance reached `nowMs` (decision 0090): answered once the subscription is
     * quiet, with its next due time (clock time); `again`: ask again (its run handed over);
     * `closed`: no run to ask.
     */
    clockTime(subscriptionId: string, nowMs: number): Promise<{ nextDueMs: number | null } | 'again' | 'closed'>;
    /** A customer's new card (decision 0088): ends a wait for a new card. */
    customerCard: CardNewsGateway['customerCard'];
    /**
     * A live subscription whose workflow ended: a new run, taken up where its record (`read` once
     * no run is found running; null: discarded) says.
     */
    revive(
      subscription: Parameters<WorkflowStarters['subscription']['start']>[0],
      read: () => Promise<SubscriptionRecordForRevival | null>,
      cancelNow?: undefined,
      /** On a test clock: the clock's time (a clock subscription is revived only with it). */
      clockNowMs?: number,
    ): Promise<ReviveAnswer>;
  };
  outboxEmail: { start(email: { emailId: string; merchantId: string }): Promise<StartAnswer> };
  dispute: {
    start(dispute: {
      id: string;
      paymentId: string;
      merchantId: string;
      amountMinor: number;
      currency: string;
      createdAt: Date;
      evidenceDueBy: Date;
      callbackUrl: string | null;
    }): Promise<StartAnswer>;
    /** An open dispute whose workflow ended: a new run. */
    revive(dispute: Parameters<WorkflowStarters['dispute']['start']>[0]): Promise<ReviveAnswer>;
  };
  /** A merchant's event delivery workflow (decision 0069), woken (started if none runs). */
  eventDeliveries: { wake(merchantId: string): Promise<StartAnswer> };
}
