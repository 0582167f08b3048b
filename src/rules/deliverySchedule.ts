/**
 * When event deliveries are tried again, given up, paused and disabled (PRODUCT.md, "Events to
 * merchants" and "Events, webhook endpoints and deliveries"; decision 0069). Pure: the delivery
 * step (activities/eventDeliveries.ts) asks these.
 */

/** One attempt, name resolution included (PRODUCT.md: 10 s). */
export const DELIVERY_ATTEMPT_TIMEOUT_MS = 10_000;

/** A delivery is tried for 3 days from when it was written, then it is `failed` for good. */
export const DELIVERY_GIVE_UP_SECONDS = 3 * 86_400;

/** An endpoint whose every delivery failed for 3 days is disabled. */
export const ENDPOINT_DISABLE_AFTER_SECONDS = 3 * 86_400;

/** The retry schedule's ceiling: at most hourly. */
const MAX_RETRY_SECONDS = 3_600;

/** PRODUCT.md's default of EVENT_DELIVERY_CONCURRENCY_PER_MERCHANT. */
export const DEFAULT_DELIVERY_CONCURRENCY_PER_MERCHANT = 4;

/**
 * The wait after a delivery's `attempts`-th failed attempt: `initialSeconds`, doubling, at most
 * hourly (the callback schedule, the same for endpoints).
 */
export function retryDelaySeconds(attempts: number, initialSeconds: number): number {
  const doublings = Math.max(0, attempts - 1);
  // 2^12 hours is past any ceiling: stop doubling before the number grows unbounded.
  return Math.min(initialSeconds * 2 ** Math.min(doublings, 24), MAX_RETRY_SECONDS);
}

/** Whether a delivery written at `createdAt` that just failed at `now` is given up. */
export function givesUp(createdAt: Date, now: Date): boolean {
  return now.getTime() - createdAt.getTime() >= DELIVERY_GIVE_UP_SECONDS * 1000;
}

/** Whether an endpoint failing since `failingSince` is disabled at `now`. */
export function endpointDisabled(failingSince: Date, now: Date): boolean {
  return now.getTime() - failingSince.getTime() >= ENDPOINT_DISABLE_AFTER_SECONDS * 1000;
}

/** Failures in a row to one host of one merchant before its deliveries pause. */
export const HOST_PAUSE_AFTER_FAILURES = 5;

/** The longest pause of a failing host. */
const MAX_HOST_PAUSE_SECONDS = 600;

/**
 * How long a host's deliveries wait after `failures` failures in a row (0: not paused): from
 * the fifth, 30 s, doubling with each failed try after a pause, at most 10 minutes. A pause
 * defers deliveries without spending their attempts; the first to go after it is the probe.
 */
export function hostPauseSeconds(failures: number): number {
  if (failures < HOST_PAUSE_AFTER_FAILURES) return 0;
  return Math.min(30 * 2 ** Math.min(failures - HOST_PAUSE_AFTER_FAILURES, 10), MAX_HOST_PAUSE_SECONDS);
}
