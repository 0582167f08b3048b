import {
  allHandlersFinished,
  condition,
  continueAsNew,
  proxyActivities,
  setHandler,
  workflowInfo,
} from '@temporalio/workflow';
import type { Activities } from '../activities';
import { deliveriesDueSignal, type EventDeliveriesInput } from './eventDeliveriesApi';

/** A step delivers for up to 50 s, heartbeating; a lost worker is noticed within 30 s. */
const deliveries = proxyActivities<Activities>({
  startToCloseTimeout: '2 minutes',
  heartbeatTimeout: '30 seconds',
  retry: { initialInterval: '1 second', maximumInterval: '30 seconds' },
});

/** The emails of a disabled endpoint: retried for a day, as every outbox email is. */
const mail = proxyActivities<Activities>({
  startToCloseTimeout: '30 seconds',
  scheduleToCloseTimeout: '1 day',
  retry: { initialInterval: '10 seconds', backoffCoefficient: 2, maximumInterval: '10 minutes' },
});

/** With nothing pending, a run waits this long for new deliveries before it ends. */
const IDLE_MS = 60_000;
/** Rounds of a run before it continues as new (about a dozen history events each). */
const ROUNDS_PER_RUN = 200;

/**
 * Delivers one merchant's events (decision 0069), on the delivery task queue only: each round a
 * step delivers what is due (at most EVENT_DELIVERY_CONCURRENCY_PER_MERCHANT at once), then the
 * run sleeps until the next delivery is due or the kicker says new ones are. A merchant whose
 * endpoint hangs fills only its own step; nothing here shares slots with money movements.
 */
export async function eventDeliveriesWorkflow(input: EventDeliveriesInput): Promise<void> {
  let due = false;
  setHandler(deliveriesDueSignal, () => {
    due = true;
  });
  for (let round = 0; round < ROUNDS_PER_RUN; round++) {
    due = false;
    const step = await deliveries.deliverDueEvents(input.merchantId);
    for (const emailId of step.emailIds) {
      // A send that gives up leaves the outbox row's error for operators; deliveries go on.
      await mail.sendEmail(emailId).catch(() => undefined);
    }
    if (step.nextDueAt === null) {
      if (!(await condition(() => due, IDLE_MS))) {
        await condition(allHandlersFinished);
        return;
      }
      continue;
    }
    const waitMs = Date.parse(step.nextDueAt) - Date.now();
    if (waitMs > 0) await condition(() => due, waitMs);
    if (workflowInfo().continueAsNewSuggested) break;
  }
  await condition(allHandlersFinished);
  await continueAsNew<typeof eventDeliveriesWorkflow>(input);
}
