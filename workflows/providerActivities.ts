import { patched, proxyActivities, proxyLocalActivities, sleep, type ActivityOptions } from '@temporalio/workflow';
import type { Activities } from '../activities';
import { AMBIGUOUS_FAILURES } from '../src/rules/providerFailures';
import {
  LOCAL_PROVIDER_ATTEMPT,
  PROVIDER_CALL_AFTER_COMMIT,
  PROVIDER_CALL_AS_ACTIVITY,
  type HasChange,
} from './patches';

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
    nonRetryableErrorTypes: [...AMBIGUOUS_FAILURES],
  },
};

/**
 * Since LOCAL_PROVIDER_ATTEMPT the attempt is a local activity: no round trip through the
 * server before the merchant's answer; its idempotency key makes the re-run after a worker
 * crash safe. Workflows started before keep the remote activity, so their histories replay.
 */
export function attemptActivities(hasChange: HasChange = patched) {
  return hasChange(LOCAL_PROVIDER_ATTEMPT)
    ? proxyLocalActivities<Activities>(attemptOptions)
    : proxyActivities<Activities>(attemptOptions);
}

/** An attempt whose request the run's start committed (START_ATTEMPT_LOCAL), in the same task. */
export const localAttempts = proxyLocalActivities<Activities>(attemptOptions);

/** The committed provider calls as regular activities (PROVIDER_CALL_AS_ACTIVITY). */
export const remoteAttempts = proxyActivities<Activities>(attemptOptions);

/**
 * Called right before a provider call that must not run before the decision to make it is in
 * the history (a payment attempt, an invoice charge); answers how to make the call: `activity`
 * (remoteAttempts) or `local` (the caller's local activities). Not the proxy itself: an
 * activities proxy is "thenable" (any property is an activity), so no promise may resolve to one.
 *
 * A local activity's side effect outlives a worker killed mid-task, but its marker does not, and
 * neither does an Update not yet accepted: a retried task must start from a committed decision,
 * so that it reaches the same call again (same idempotency key, the provider answers with what it
 * did) rather than another path (the request lost, a cancellation taken).
 * - Since PROVIDER_CALL_AS_ACTIVITY: the call is a regular activity, scheduled by the workflow
 *   task that decided on it, which thereby completes first.
 * - Runs started under PROVIDER_CALL_AFTER_COMMIT: a 1 ms timer ends the task, then the given
 *   local activities; older runs: the given local activities at once.
 */
export async function commitBeforeProviderCall(hasChange: HasChange = patched): Promise<'activity' | 'local'> {
  if (hasChange(PROVIDER_CALL_AS_ACTIVITY)) return 'activity';
  if (hasChange(PROVIDER_CALL_AFTER_COMMIT)) await sleep(1);
  return 'local';
}

/**
 * The heartbeat timeout of the questions to the provider (reconciliation, expiry): a lookup of
 * several calls heartbeats between them what it learned, and a retried attempt resumes from it
 * (activities/lookupProgress.ts, decision 0064); a worker lost mid-question is noticed after this
 * rather than the full start-to-close. Each provider call is bounded by PROVIDER_TIMEOUT_MS (3 s).
 * Activity options are not part of what a replay compares: histories recorded without it replay.
 */
export const LOOKUP_HEARTBEAT_TIMEOUT = '10 seconds';

/** Asking the provider what happened: as long as it takes, backing off to once a minute. */
export const patientActivities = proxyActivities<Activities>({
  startToCloseTimeout: '15 seconds',
  heartbeatTimeout: LOOKUP_HEARTBEAT_TIMEOUT,
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute' },
});
