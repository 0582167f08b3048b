import { proxyActivities, proxyLocalActivities } from '@temporalio/workflow';
import type { Activities } from '../../activities';
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

export { patientActivities as patient } from '../providerActivities';
