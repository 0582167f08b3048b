import { isCancellation, log, patched, proxyActivities } from '@temporalio/workflow';
import type { Activities } from '../activities';
import type { SendResult } from '../activities/emails';
import { EMAIL_GIVE_UP_QUIETLY } from './patches';

/** The subscription's own policy for customer emails: retried for a day (the outbox row keeps the last error). */
const mail = proxyActivities<Activities>({
  startToCloseTimeout: '30 seconds',
  scheduleToCloseTimeout: '1 day',
  retry: { initialInterval: '10 seconds', backoffCoefficient: 2, maximumInterval: '10 minutes' },
});

export interface OutboxEmailInput {
  emailId: string;
}

/**
 * Sends one outbox email the orphan sweeper found never attempted (the run that recorded it
 * lost it, e.g. a local activity whose worker died before its workflow task completed). The
 * send claims the row first, so a late send by the original run is never a second email.
 * After a day of failed sends it gives up without failing (EMAIL_GIVE_UP_QUIETLY): the row keeps
 * its attempts and last error for operators, and nothing else depends on this run.
 */
export async function outboxEmailWorkflow(input: OutboxEmailInput): Promise<SendResult | 'gave_up'> {
  try {
    return await mail.sendEmail(input.emailId);
  } catch (err) {
    if (isCancellation(err) || !patched(EMAIL_GIVE_UP_QUIETLY)) throw err;
    log.warn('outbox email not sent after a day of tries', {
      emailId: input.emailId,
      error: err instanceof Error ? err.message : String(err),
    });
    return 'gave_up';
  }
}
