import { workflowInfo } from '@temporalio/workflow';

/**
 * The payment and refund workflows continue as new at a wait once a run has this many events
 * (their input's `historyEventLimit` overrides it; tests lower it). Far below Temporal's 51,200
 * limit and its 10,240 warning: a run is cheap to replay on any worker.
 */
export const DEFAULT_HISTORY_EVENT_LIMIT = 1000;

/** The run is long enough to hand over to a new one (our bound, or the server's suggestion). */
export function runIsLong(historyEventLimit: number | undefined): boolean {
  const info = workflowInfo();
  return info.continueAsNewSuggested || info.historyLength >= (historyEventLimit ?? DEFAULT_HISTORY_EVENT_LIMIT);
}
