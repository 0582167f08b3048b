import { proxyActivities } from '@temporalio/workflow';
import type { Activities } from '../activities';
import type { SendResult } from '../activities/emails';

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
 */
export async function outboxEmailWorkflow(input: OutboxEmailInput): Promise<SendResult> {
  return mail.sendEmail(input.emailId);
}
