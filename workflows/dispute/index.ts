import {
  allHandlersFinished,
  condition,
  continueAsNew,
  patched,
  proxyActivities,
  setHandler,
} from '@temporalio/workflow';
import type { Activities } from '../../activities';
import { deliverEvents } from '../deliverEvents';
import { DISPUTE_UNTIL_KNOWN } from '../patches';
import { runIsLong } from '../runBound';
import { untilKnown } from '../untilKnown';
import type { DisputeCheck } from '../../activities/disputes';
import { disputeEventSignal, type DisputeCursor, type DisputeWorkflowInput } from '../disputeApi';

/** After the deadline the processor is asked at growing intervals: from a minute, doubling to a day. */
const FIRST_CHECK_SECONDS = 60;
const MAX_CHECK_SECONDS = 86_400;

const activities = proxyActivities<Activities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute' },
});

/**
 * One dispute (PRODUCT.md, "Processor lifecycle"; decision 0056), started once its row is
 * committed. It follows the processor and never decides anything itself:
 * - `dispute.evidence_due_soon` when a seventh of the evidence window is left (if still
 *   `needs_response`);
 * - the processor's decision: a webhook (signal) makes it ask the processor at once; without one
 *   it asks at the evidence deadline, then at growing intervals (a minute, doubling to a day)
 *   until the dispute is closed. An answer it cannot use (processor down, unsupported) is asked
 *   again at once until there is one (marked `Stuck` past `stuckAfterSeconds`; behind
 *   DISPUTE_UNTIL_KNOWN): the dispute stays where it is; the workflow never fails on it.
 * - each change's events delivered to the payment's callbackUrl.
 * A long run continues as new at its wait (bounded history).
 */
export async function disputeWorkflow(input: DisputeWorkflowInput): Promise<{ closed: boolean }> {
  const s = new DisputeState(input);
  setHandler(disputeEventSignal, () => {
    s.providerEvent = true;
  });
  await deliver(s);
  for (;;) {
    if (!s.reminded && Date.now() >= s.remindAtMs) {
      await activities.disputeEvidenceDueSoon(s.input.disputeId);
      s.reminded = true;
      await deliver(s);
    }
    const checkAtMs = s.checkAtMs();
    if (s.providerEvent || Date.now() >= checkAtMs) {
      const afterDeadline = Date.now() >= s.input.evidenceDueByMs;
      s.providerEvent = false;
      let found: DisputeCheck = await activities.checkDispute(s.input.disputeId);
      if (found === 'unknown' && patched(DISPUTE_UNTIL_KNOWN)) {
        // No answer to go by: asked again at once until there is one (Stuck past stuckAfterSeconds).
        found = await untilKnown((q) => q.askDispute(s.input.disputeId), s.input.stuckAfterSeconds, {
          historyEventLimit: s.input.historyEventLimit,
          // The new run looks at once (providerEvent), and so asks again.
          continueAsNew: () => handOver(s, { providerEvent: true }),
        });
      }
      await deliver(s);
      if (found === 'closed') break;
      if (afterDeadline && Date.now() >= checkAtMs) s.backOff();
      continue;
    }
    if (s.isLong()) {
      await condition(allHandlersFinished);
      await handOver(s);
    }
    const wakeAtMs = s.reminded ? checkAtMs : Math.min(checkAtMs, s.remindAtMs);
    await condition(() => s.providerEvent || s.isLong(), Math.max(1, wakeAtMs - Date.now()));
  }
  await condition(allHandlersFinished);
  return { closed: true };
}

function handOver(s: DisputeState, override: Partial<DisputeCursor> = {}): Promise<never> {
  return continueAsNew<typeof disputeWorkflow>({ ...s.input, resume: { ...s.cursor(), ...override } });
}

async function deliver(s: DisputeState): Promise<void> {
  if (s.input.callbacks) await deliverEvents(s.input.disputeId, s.input.callbackRetryInitialSeconds);
}

class DisputeState {
  readonly input: DisputeWorkflowInput;
  /** When a seventh of the evidence window is left. */
  readonly remindAtMs: number;
  reminded: boolean;
  providerEvent: boolean;
  checkSeconds: number;
  nextCheckAtMs: number | null;

  constructor(input: DisputeWorkflowInput) {
    this.input = input;
    const window = Math.max(0, input.evidenceDueByMs - input.openedAtMs);
    this.remindAtMs = input.evidenceDueByMs - Math.floor(window / 7);
    const resume = input.resume;
    this.reminded = resume?.reminded ?? false;
    // A new run looks once at once: the dispute may have moved between its commit and this start.
    this.providerEvent = resume?.providerEvent ?? true;
    this.checkSeconds = resume?.checkSeconds ?? FIRST_CHECK_SECONDS;
    this.nextCheckAtMs = resume?.nextCheckAtMs ?? null;
  }

  /** The next unprompted check: the deadline, then each growing interval after it. */
  checkAtMs(): number {
    return this.nextCheckAtMs ?? this.input.evidenceDueByMs;
  }

  backOff(): void {
    this.nextCheckAtMs = Date.now() + this.checkSeconds * 1000;
    this.checkSeconds = Math.min(this.checkSeconds * 2, MAX_CHECK_SECONDS);
  }

  isLong(): boolean {
    return runIsLong(this.input.historyEventLimit);
  }

  cursor(): DisputeCursor {
    return {
      reminded: this.reminded,
      providerEvent: this.providerEvent,
      checkSeconds: this.checkSeconds,
      nextCheckAtMs: this.nextCheckAtMs,
      runs: (this.input.resume?.runs ?? 0) + 1,
    };
  }
}
