import { allHandlersFinished, condition, continueAsNew } from '@temporalio/workflow';
import type { RefundWorkflowInput } from '../refundApi';
import type { RefundState } from './state';

/**
 * Phase 2's wait before the next poll: none after an ambiguous answer; otherwise until a webhook
 * or the poll's time, after which the interval doubles. Since BOUNDED_HISTORIES the poll's time is
 * kept in the state (a continued run keeps it), a long run hands over before waiting, and one that
 * grows long while waiting wakes to do so: false then (no poll yet, the caller turns again).
 */
export async function waitForPoll(s: RefundState): Promise<boolean> {
  if (s.ambiguous) return true;
  if (!s.bounded) {
    await condition(() => s.providerEvent, `${s.pollSeconds} seconds`);
    s.backOff();
    return true;
  }
  const pollAtMs = (s.nextPollAtMs ??= Date.now() + s.pollSeconds * 1000);
  await handOverIfLong(s);
  const waitMs = pollAtMs - Date.now();
  if (!s.providerEvent && waitMs > 0) {
    await condition(() => s.providerEvent || s.isLong(), waitMs);
    if (!s.providerEvent && Date.now() < pollAtMs) return false; // woken as the run grew long
  }
  s.nextPollAtMs = null;
  s.backOff();
  return true;
}

/** A long run hands its state to a new one here, once every handler has finished. */
async function handOverIfLong(s: RefundState): Promise<void> {
  if (!s.isLong()) return;
  await condition(allHandlersFinished);
  await continueAsNew<(input: RefundWorkflowInput) => Promise<unknown>>({ ...s.input, resume: s.cursor() });
}
