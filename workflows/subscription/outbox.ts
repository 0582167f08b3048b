import { log, patched, startChild, upsertSearchAttributes, workflowInfo } from '@temporalio/workflow';
import { EVENT_DELIVERY_QUEUE } from '../patches';
import type { Outbox, SubscriptionStatus } from '../../src/rules/subscriptionPlan';
import { merchantEventsWorkflowSummary } from '../../src/rules/workflowSummaries';
import { merchantEventsWorkflow } from '../merchantEvents';
import { ExternalIdKey, MerchantIdKey, SubscriptionStatusKey } from '../searchAttributes';
import { subscriptionWorkflowId } from '../subscriptionApi';
import { sendEmail } from './activities';
import type { SubscriptionState } from './state';

/** The workflow's status follows the record's; operators filter on the search attribute. */
export function setStatus(s: SubscriptionState, next: SubscriptionStatus): void {
  if (next === s.status) return;
  s.status = next;
  if (next !== 'created') s.firstOutcome = { kind: 'settled' };
  upsertSearchAttributes([{ key: SubscriptionStatusKey, value: next }]);
}

/**
 * Follows a recorded change: its status, then its emails and merchant events, in the background
 * (a send never holds up billing; `pendingSends` lets a run finish them before it closes).
 */
export function follow(s: SubscriptionState, outbox: Outbox | null | undefined): void {
  if (!outbox) return;
  setStatus(s, outbox.status);
  for (const emailId of outbox.emailIds) {
    s.unconfirmedEmails++;
    const sent = sendEmail(emailId).then(() => {
      s.unconfirmedEmails--;
    });
    inBackground(s, sent, 'email not sent (gave up after a day; the outbox row says why)', { emailId });
  }
  // Since EVENT_DELIVERY_QUEUE the merchant's delivery workflow delivers them (decision 0069).
  if (s.input.callbacks && outbox.eventIds.length > 0 && !patched(EVENT_DELIVERY_QUEUE)) {
    const subscriptionId = s.input.subscriptionId;
    const externalId = s.input.externalId ?? workflowInfo().typedSearchAttributes.get(ExternalIdKey);
    inBackground(
      s,
      startChild(merchantEventsWorkflow, {
        workflowId: `${subscriptionWorkflowId(subscriptionId)}-events-${outbox.eventIds[0]}`,
        args: [{ eventIds: outbox.eventIds, callbackRetryInitialSeconds: s.input.callbackRetryInitialSeconds }],
        // A merchant endpoint failing for days never holds the subscription up.
        parentClosePolicy: 'ABANDON',
        typedSearchAttributes: [
          { key: MerchantIdKey, value: s.input.merchantId },
          ...(externalId ? [{ key: ExternalIdKey, value: externalId }] : []),
        ],
        // The UI's summary (user metadata: not compared on replay).
        ...merchantEventsWorkflowSummary({
          merchantId: s.input.merchantId,
          eventIds: outbox.eventIds,
          resourceId: subscriptionId,
          startedBy: 'subscription',
        }),
      }),
      // Typically: started already by an earlier run of this step (same id).
      'callback workflow not started',
      { eventIds: outbox.eventIds },
    );
  }
}

function inBackground(s: SubscriptionState, work: Promise<unknown>, failure: string, facts: object): void {
  s.pendingSends++;
  void work
    .catch((err: unknown) => log.warn(failure, { ...facts, error: (err as Error).message }))
    .finally(() => s.pendingSends--);
}
