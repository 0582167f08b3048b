import { noopMetricMeter, type MetricCounter, type MetricHistogram, type MetricMeter } from '@temporalio/common';

/**
 * The worker's own metrics (docs/observability.md). They are recorded through the Temporal
 * runtime's metric meter, so the one Prometheus endpoint the SDK's core serves on
 * WORKER_METRICS_PORT carries both the SDK's metrics (`temporal_*`) and these.
 *
 * Process-wide, like any metrics registry: `installWorkerMetrics` is called once by the worker
 * process (src/main/worker.ts); until then (tests, the API, the CLI) every recording is a no-op.
 *
 * Money movements are counted where the database transition happens (src/domain/*), after its
 * transaction committed, and only when the row actually moved: a retried activity, a repeated
 * webhook or a reconciliation that finds the outcome already recorded counts nothing.
 */

export const PAYMENT_OUTCOMES = ['succeeded', 'failed', 'voided', 'rejected'] as const;
export const REFUND_OUTCOMES = ['succeeded', 'failed'] as const;
export const SUBSCRIPTION_CHARGE_OUTCOMES = ['succeeded', 'failed'] as const;
/**
 * What one delivery attempt of an event (to a record's callbackUrl or a webhook endpoint) came to:
 * a 2xx answer; a failure retried later (or the last one, 3 days after the event); refused (a
 * target that may not be called, never retried). Deliveries deferred (their host paused) or
 * cancelled (endpoint disabled, event pruned) are not attempts and are not counted.
 */
export const EVENT_DELIVERY_OUTCOMES = ['succeeded', 'failed', 'refused'] as const;
export const EMAIL_OUTCOMES = ['sent', 'failed'] as const;
export const PROVIDER_OPERATIONS = [
  'createPayment',
  'findPayment',
  'cancelPayment',
  'createRefund',
  'findRefund',
  'findDispute',
  'submitDisputeEvidence',
  'acceptDispute',
  'attachPaymentMethod',
  'detachPaymentMethod',
] as const;

export type PaymentOutcome = (typeof PAYMENT_OUTCOMES)[number];
export type RefundOutcome = (typeof REFUND_OUTCOMES)[number];
export type SubscriptionChargeOutcome = (typeof SUBSCRIPTION_CHARGE_OUTCOMES)[number];
export type EventDeliveryOutcome = (typeof EVENT_DELIVERY_OUTCOMES)[number];
export type EmailOutcome = (typeof EMAIL_OUTCOMES)[number];
export type ProviderOperation = (typeof PROVIDER_OPERATIONS)[number];

/** Metric names: the contract of the dashboard and the alert rules (ops/). */
export const WORKER_METRIC_NAMES = {
  payments: 'payments_total',
  refunds: 'refunds_total',
  subscriptionCharges: 'subscription_charges_total',
  providerDuration: 'provider_call_duration_seconds',
  providerErrors: 'provider_call_errors_total',
  ambiguous: 'provider_ambiguous_outcomes_total',
  reconcileRetries: 'reconciliation_retries_total',
  providerCallsLimited: 'provider_calls_limited_total',
  eventDeliveries: 'event_deliveries_total',
  eventDeliveryDuration: 'event_delivery_duration_seconds',
  emails: 'emails_total',
  processStart: 'process_start_time_seconds',
} as const;

/** Bucket bounds (seconds) of the provider call histogram: PROVIDER_TIMEOUT_MS defaults to 3 s. */
export const PROVIDER_DURATION_BUCKETS = [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/** Bucket bounds (seconds) of the delivery attempt histogram: an attempt is cut at 10 s. */
export const EVENT_DELIVERY_DURATION_BUCKETS = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/** A counter with one fixed label, its series made up front (so each reads 0 before its first event). */
class LabelledCounter<L extends string> {
  private readonly series = new Map<string, MetricCounter>();

  constructor(
    private readonly counter: MetricCounter,
    private readonly label: string,
    values: readonly L[],
  ) {
    for (const value of values) this.of(value).add(0);
  }

  private of(value: string): MetricCounter {
    let series = this.series.get(value);
    if (!series) {
      series = this.counter.withTags({ [this.label]: value });
      this.series.set(value, series);
    }
    return series;
  }

  inc(value: L | string): void {
    this.of(value).add(1);
  }
}

class WorkerMetrics {
  readonly payments: LabelledCounter<PaymentOutcome>;
  readonly refunds: LabelledCounter<RefundOutcome>;
  readonly subscriptionCharges: LabelledCounter<SubscriptionChargeOutcome>;
  readonly eventDeliveries: LabelledCounter<EventDeliveryOutcome>;
  readonly emails: LabelledCounter<EmailOutcome>;
  readonly ambiguous: LabelledCounter<string>;
  readonly reconcileRetries: LabelledCounter<string>;
  readonly providerCallsLimited: LabelledCounter<'rate' | 'concurrency'>;
  private readonly providerDuration: MetricHistogram;
  private readonly providerErrors: MetricCounter;
  private readonly deliveryDuration = new Map<string, MetricHistogram>();
  private readonly eventDeliveryDuration: MetricHistogram;
  private readonly durationSeries = new Map<string, MetricHistogram>();
  private readonly errorSeries = new Map<string, MetricCounter>();

  constructor(meter: MetricMeter) {
    const counter = (name: string, description: string) => meter.createCounter(name, undefined, description);
    const n = WORKER_METRIC_NAMES;
    this.payments = new LabelledCounter(
      counter(n.payments, 'Payments settled, by outcome (rejected: refused by the provider, nothing kept)'),
      'outcome',
      PAYMENT_OUTCOMES,
    );
    this.refunds = new LabelledCounter(counter(n.refunds, 'Refunds settled, by outcome'), 'outcome', REFUND_OUTCOMES);
    this.subscriptionCharges = new LabelledCounter(
      counter(n.subscriptionCharges, 'Subscription invoice charge attempts recorded, by outcome'),
      'outcome',
      SUBSCRIPTION_CHARGE_OUTCOMES,
    );
    this.eventDeliveries = new LabelledCounter(
      counter(n.eventDeliveries, 'Event delivery attempts (callbackUrls and webhook endpoints), by outcome'),
      'outcome',
      EVENT_DELIVERY_OUTCOMES,
    );
    this.eventDeliveryDuration = meter.createHistogram(
      n.eventDeliveryDuration,
      'float',
      's',
      'Event delivery attempt duration (name resolution to answer; cut at 10 s), by outcome',
    );
    this.emails = new LabelledCounter(counter(n.emails, 'Customer email sends, by outcome'), 'outcome', EMAIL_OUTCOMES);
    this.ambiguous = new LabelledCounter(
      counter(n.ambiguous, 'Provider attempts whose outcome is unknown and goes to reconciliation, by reason'),
      'reason',
      [],
    );
    this.reconcileRetries = new LabelledCounter(
      counter(n.reconcileRetries, 'Reconciliation tries that could not learn the outcome yet (retried), by reason'),
      'reason',
      [],
    );
    this.providerCallsLimited = new LabelledCounter(
      counter(
        n.providerCallsLimited,
        "Provider calls refused before they were sent, over their merchant's limit in this process (retried later), by limit",
      ),
      'limit',
      ['rate', 'concurrency'],
    );
    this.providerDuration = meter.createHistogram(
      n.providerDuration,
      'float',
      's',
      'Provider API call duration, failed calls included',
    );
    this.providerErrors = counter(n.providerErrors, 'Failed provider API calls, by error kind');
    // As prom-client's default metric of the same name: a restart shows as a new value (the SDK's
    // exporter serves no process metrics of its own).
    meter
      .createGauge(n.processStart, 'float', 's', 'Start time of the process since the Unix epoch')
      .set(Math.round(Date.now() / 1000 - process.uptime()));
  }

  eventDelivery(outcome: EventDeliveryOutcome, seconds: number): void {
    this.eventDeliveries.inc(outcome);
    let duration = this.deliveryDuration.get(outcome);
    if (!duration) {
      duration = this.eventDeliveryDuration.withTags({ outcome });
      this.deliveryDuration.set(outcome, duration);
    }
    duration.record(seconds);
  }

  providerCall(processor: string, operation: ProviderOperation, seconds: number, errorKind: string | null): void {
    const key = `${processor}|${operation}`;
    let duration = this.durationSeries.get(key);
    if (!duration) {
      duration = this.providerDuration.withTags({ processor, operation });
      this.durationSeries.set(key, duration);
    }
    duration.record(seconds);
    if (errorKind === null) return;
    const errorKey = `${key}|${errorKind}`;
    let errors = this.errorSeries.get(errorKey);
    if (!errors) {
      errors = this.providerErrors.withTags({ processor, operation, kind: errorKind });
      this.errorSeries.set(errorKey, errors);
    }
    errors.add(1);
  }
}

let current = new WorkerMetrics(noopMetricMeter);

/** Records the worker metrics through `meter` (the Temporal runtime's) from now on. */
export function installWorkerMetrics(meter: MetricMeter): void {
  current = new WorkerMetrics(meter);
}

/** What the worker counts. Cheap: a map lookup and one native call per event. */
export const workerMetrics = {
  payment: (outcome: PaymentOutcome) => current.payments.inc(outcome),
  refund: (outcome: RefundOutcome) => current.refunds.inc(outcome),
  subscriptionCharge: (outcome: SubscriptionChargeOutcome) => current.subscriptionCharges.inc(outcome),
  /** One delivery attempt of an event, with how long it took. */
  eventDelivery: (outcome: EventDeliveryOutcome, seconds: number) => current.eventDelivery(outcome, seconds),
  email: (outcome: EmailOutcome) => current.emails.inc(outcome),
  /** An attempt ended without a known outcome (timeout, invalid answer, an earlier call outstanding). */
  ambiguous: (reason: string) => current.ambiguous.inc(reason),
  reconcileRetry: (reason: string) => current.reconcileRetries.inc(reason),
  /** A provider call refused over its merchant's limit (decision 0085), retried later. */
  providerCallLimited: (limit: 'rate' | 'concurrency') => current.providerCallsLimited.inc(limit),
  providerCall: (processor: string, operation: ProviderOperation, seconds: number, errorKind: string | null) =>
    current.providerCall(processor, operation, seconds, errorKind),
};
