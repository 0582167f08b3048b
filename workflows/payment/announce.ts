import { log, patched, proxyActivities, startChild } from '@temporalio/workflow';
import { EVENT_DELIVERY_QUEUE } from '../patches';
import type { Activities } from '../../activities';
import { merchantEventsWorkflowSummary } from '../../src/rules/workflowSummaries';
import { merchantEventsWorkflow } from '../merchantEvents';
import { paymentWorkflowId } from '../paymentApi';
import { MerchantIdKey } from '../searchAttributes';
import type { PaymentState } from './state';

const lookups = proxyActivities<Activities>({
  startToCloseTimeout: '30 seconds',
  retry: { maximumInterval: '1 minute' },
});

/**
 * A payment that moved to `requires_action` or `processing` tells its merchant now, not when it
 * settles (that may be days later): its undelivered events go to a delivery workflow of their
 * own (abandoned child, as a subscription's do), so a failing endpoint never holds the payment
 * up. Only these moves set `announce`: runs of older code never reach this step.
 */
export async function announce(s: PaymentState): Promise<void> {
  s.announce = false;
  // Since EVENT_DELIVERY_QUEUE the merchant's delivery workflow delivers them (decision 0069).
  if (patched(EVENT_DELIVERY_QUEUE)) return;
  if (s.input.callbacks === false) return;
  const eventIds = await lookups.undeliveredEventIds(s.paymentId);
  if (eventIds.length === 0) return;
  try {
    await startChild(merchantEventsWorkflow, {
      workflowId: `${paymentWorkflowId(s.paymentId)}-events-${eventIds[0]}`,
      args: [{ eventIds, callbackRetryInitialSeconds: s.input.callbackRetryInitialSeconds }],
      parentClosePolicy: 'ABANDON',
      typedSearchAttributes: [{ key: MerchantIdKey, value: s.input.merchantId }],
      ...merchantEventsWorkflowSummary({
        merchantId: s.input.merchantId,
        eventIds,
        resourceId: s.paymentId,
        startedBy: 'payment',
      }),
    });
  } catch (err) {
    // Typically started already by an earlier run of this step (same id); else the sweeper relays it.
    log.warn('callback workflow not started', { eventIds, error: (err as Error).message });
  }
}
