import { Runtime, type RuntimeOptions } from '@temporalio/worker';
import type { Logger } from '../logger';
import { temporalSdkLogger } from '../temporal/sdkLogger';
import { bindAddress, metricsUrl } from './address';
import {
  EVENT_DELIVERY_DURATION_BUCKETS,
  installWorkerMetrics,
  PROVIDER_DURATION_BUCKETS,
  WORKER_METRIC_NAMES,
} from './worker';

/** Seconds; the SDK's own buckets jump from 1 s to 5 s. */
const SCHEDULE_TO_START_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

/**
 * Installs the worker process's Temporal runtime: the SDK's log lines through our logger,
 * graceful shutdown on signals, and, unless `port` is 0, the core's Prometheus exporter on
 * `host:port`. That one endpoint serves the SDK's metrics (`temporal_*`: workflow task and
 * activity schedule-to-start and execution latency, slots, pollers, sticky cache) and ours
 * (src/metrics/worker.ts, recorded through the runtime's meter). Durations are in seconds.
 *
 * A port that cannot be bound (in use) does not stop the worker: it runs without metrics, with
 * an error line; the scraper's `up` for it is 0, which the worker-down alert reports.
 * Answers the URL to scrape, or null when there is none.
 */
export function installWorkerRuntime(opts: { logger: Logger; host: string; port: number }): string | null {
  const base: RuntimeOptions = {
    logger: temporalSdkLogger(opts.logger),
    // Graceful: on a signal the worker stops polling, lets running tasks finish, then run() resolves.
    shutdownSignals: ['SIGINT', 'SIGTERM'],
  };
  let url: string | null = null;
  if (opts.port > 0) {
    try {
      Runtime.install({
        ...base,
        telemetryOptions: {
          metrics: {
            prometheus: {
              bindAddress: bindAddress(opts.host, opts.port),
              useSecondsForDurations: true,
              histogramBucketOverrides: {
                [WORKER_METRIC_NAMES.providerDuration]: PROVIDER_DURATION_BUCKETS,
                [WORKER_METRIC_NAMES.eventDeliveryDuration]: EVENT_DELIVERY_DURATION_BUCKETS,
                // Finer than the SDK's defaults around 1 s: the alert on workflow-task p95 reads them.
                workflow_task_schedule_to_start_latency: SCHEDULE_TO_START_BUCKETS,
                activity_schedule_to_start_latency: SCHEDULE_TO_START_BUCKETS,
              },
            },
          },
        },
      });
      url = metricsUrl(opts.host, opts.port);
    } catch (err) {
      opts.logger.error(
        { port: opts.port, reason: (err as Error).message },
        'worker metrics endpoint not started; running without metrics',
      );
    }
  }
  if (!url) Runtime.install(base);
  installWorkerMetrics(Runtime.instance().metricMeter);
  return url;
}
