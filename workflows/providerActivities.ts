import { patched, proxyActivities, proxyLocalActivities, sleep, type ActivityOptions } from '@temporalio/workflow';
import type { Activities } from '../activities';
import { LOCAL_PROVIDER_ATTEMPT, PROVIDER_CALL_AFTER_COMMIT } from './patches';

/**
 * How workflows call the provider's activities, in one place for payments and refunds.
 *
 * One attempt: a few quick retries while the provider is unavailable, within the API's wait;
 * never retried on an ambiguous outcome (timeout, invalid response): that is reconciled.
 */
export const attemptOptions: ActivityOptions = {
  // Past the provider's own call timeout (PROVIDER_TIMEOUT_MS, 3 s); a worker that dies
  // mid-call is detected by this.
  startToCloseTimeout: '6 seconds',
  // All tries together stay short (about the API's wait). Running out is a timeout, not
  // `unavailable`: the workflow reconciles it, never assumes nothing was done.
  scheduleToCloseTimeout: '8 seconds',
  retry: {
    initialInterval: '200 ms',
    backoffCoefficient: 2,
    maximumAttempts: 3,
    nonRetryableErrorTypes: ['timeout', 'invalid_response'],
  },
};

/**
 * Since LOCAL_PROVIDER_ATTEMPT the attempt is a local activity: no round trip through the
 * server before the merchant's answer; its idempotency key makes the re-run after a worker
 * crash safe. Workflows started before keep the remote activity, so their histories replay.
 */
export function attemptActivities() {
  return patched(LOCAL_PROVIDER_ATTEMPT)
    ? proxyLocalActivities<Activities>(attemptOptions)
    : proxyActivities<Activities>(attemptOptions);
}

/**
 * Since PROVIDER_CALL_AFTER_COMMIT, called right before a local provider call: ends the current
 * workflow task (a 1 ms timer), so what led to the call is in the history before the provider
 * is asked. A local activity's side effect outlives a worker killed mid-task, but its marker
 * does not, and neither does an Update not yet accepted: a retried task that starts from a
 * committed decision reaches the same call again (same idempotency key, the provider answers
 * with what it did) rather than a different path (the request lost, a cancellation taken).
 */
export async function commitBeforeProviderCall(): Promise<void> {
  if (patched(PROVIDER_CALL_AFTER_COMMIT)) await sleep(1);
}

/** Asking the provider what happened: as long as it takes, backing off to once a minute. */
export const patientActivities = proxyActivities<Activities>({
  startToCloseTimeout: '15 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute' },
});
