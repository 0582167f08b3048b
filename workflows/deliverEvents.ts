import { log, patched, proxyActivities } from '@temporalio/workflow';
import type { Activities } from '../activities';
import { EVENT_DELIVERY_QUEUE } from './patches';

const lookups = proxyActivities<Activities>({
  startToCloseTimeout: '30 seconds',
  retry: { maximumInterval: '1 minute' },
});

/**
 * Delivered a resource's undelivered merchant events (the outbox), each retried on any non-2xx
 * or timeout: first after `initialSeconds`, doubling, at most hourly, for up to 3 days. Since
 * EVENT_DELIVERY_QUEUE the delivery workflow does (decision 0069): nothing to do here.
 */
export async function deliverEvents(resourceId: string, initialSeconds: number): Promise<void> {
  if (patched(EVENT_DELIVERY_QUEUE)) return;
  const eventIds = await lookups.undeliveredEventIds(resourceId);
  await deliverEventIds(eventIds, initialSeconds);
}

/** Delivers the given outbox events, in order, with the retry policy above. */
export async function deliverEventIds(eventIds: string[], initialSeconds: number): Promise<void> {
  if (eventIds.length === 0) return;
  const delivery = proxyActivities<Activities>({
    startToCloseTimeout: '30 seconds',
    scheduleToCloseTimeout: '3 days',
    retry: { initialInterval: `${initialSeconds} seconds`, backoffCoefficient: 2, maximumInterval: '1 hour' },
  });
  for (const id of eventIds) {
    try {
      await delivery.deliverMerchantEvent(id);
    } catch (err) {
      // Gave up after 3 days; the outbox row keeps attempts and the last error for operators.
      log.warn('merchant event not delivered', {
        eventId: id,
        error: err instanceof Error ? err.message : String(err),
      });
    }
  }
}
