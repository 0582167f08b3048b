import { patched, proxyActivities, proxyLocalActivities } from '@temporalio/workflow';
import type { Activities } from '../../activities';
import { RENEWAL_LOCAL_STEPS } from '../patches';
import { attemptOptions } from '../providerActivities';

/**
 * How the subscription's steps call activities. Only provider attempts are local (a few seconds
 * including retries, no server round trip); everything that waits out database or SMTP trouble
 * is a regular activity, so a long outage never holds a workflow task.
 */
export const attempts = proxyLocalActivities<Activities>(attemptOptions);

/** Database-only state changes: retried until PostgreSQL answers. */
export const records = proxyActivities<Activities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute' },
});

/** Customer emails: retried for a day (the outbox row keeps the last error). */
export const mail = proxyActivities<Activities>({
  startToCloseTimeout: '30 seconds',
  scheduleToCloseTimeout: '1 day',
  retry: { initialInterval: '10 seconds', backoffCoefficient: 2, maximumInterval: '10 minutes' },
});

/**
 * Quick tries of database and SMTP steps inside the workflow task (RENEWAL_LOCAL_STEPS): one
 * attempt of a few seconds; each step is idempotent, so the fallback may follow a try whose effect
 * landed but whose answer was lost.
 */
const quick = proxyLocalActivities<Activities>({
  startToCloseTimeout: '4 seconds',
  scheduleToCloseTimeout: '5 seconds',
  retry: { maximumAttempts: 1 },
});

/**
 * A step tried quickly in the current workflow task, then, if that fails (an outage, a slow
 * SMTP server), as its regular activity. Runs started before RENEWAL_LOCAL_STEPS keep the regular
 * activity alone, so their histories replay.
 */
async function quickly<T>(local: () => Promise<T>, regular: () => Promise<T>): Promise<T> {
  if (!patched(RENEWAL_LOCAL_STEPS)) return regular();
  try {
    return await local();
  } catch {
    return regular();
  }
}

type OpenInvoiceInput = Parameters<Activities['openInvoice']>[0];

/** Opens (or finds) a period's invoice. */
export const openInvoice = (input: OpenInvoiceInput) =>
  quickly(
    () => quick.openInvoice(input),
    () => records.openInvoice(input),
  );

/** Sends an outbox email (sent once: the row is claimed, then marked sent). */
export const sendEmail = (emailId: string) =>
  quickly(
    () => quick.sendEmail(emailId),
    () => mail.sendEmail(emailId),
  );
