import type { RefundCursor, RefundOutcome, RefundWorkflowInput } from '../refundApi';
import { BOUNDED_HISTORIES, STATUS_SEARCH_ATTRIBUTES, type HasChange } from '../patches';
import { runIsLong } from '../runBound';

/** The longest a refund the provider holds `pending` waits between two polls. */
const MAX_POLL_SECONDS = 3600;

/**
 * Everything one run of a refund's workflow knows, in one object: the steps read and change it,
 * the handlers read it, and continue-as-new hands phase 2's part to the next run (`cursor`).
 *
 * The constructor asks `hasChange` in the order the run always has (each `patched()` call writes a
 * marker in a run of the old type): STATUS_SEARCH_ATTRIBUTES, then BOUNDED_HISTORIES.
 */
export class RefundState {
  readonly input: RefundWorkflowInput;
  /** Whether a change applies to this run (`patched`, or every V2 change without a marker). */
  readonly hasChange: HasChange;
  readonly refundId: string;
  /** RefundStatus upsert and the settled validator (STATUS_SEARCH_ATTRIBUTES). */
  readonly statusAttribute: boolean;
  /** Polls on a deadline kept across runs, continue-as-new at the wait (BOUNDED_HISTORIES). */
  readonly bounded: boolean;
  /** The first outcome, once known; a continued run gave it already (a repeat gets it at once). */
  first: RefundOutcome | undefined;
  settled = false;
  /** A provider webhook not looked at yet. */
  providerEvent: boolean;
  /** The last answer was ambiguous: ask the provider at once. */
  ambiguous: boolean;
  /** The poll interval reached (it doubles to an hour) and when the next poll is due (epoch ms). */
  pollSeconds: number;
  nextPollAtMs: number | null;

  constructor(input: RefundWorkflowInput, hasChange: HasChange) {
    const resume = input.resume;
    this.input = input;
    this.hasChange = hasChange;
    this.refundId = input.refundId;
    this.first = resume?.first;
    this.providerEvent = resume?.providerEvent ?? false;
    this.statusAttribute = hasChange(STATUS_SEARCH_ATTRIBUTES);
    this.bounded = hasChange(BOUNDED_HISTORIES);
    this.ambiguous = resume?.ambiguous ?? false;
    this.pollSeconds = resume?.pollSeconds ?? input.pollInitialSeconds;
    this.nextPollAtMs = resume?.nextPollAtMs ?? null;
  }

  /** The run is long enough to hand over to a new one (our bound, or the server's suggestion). */
  isLong(): boolean {
    return runIsLong(this.input.historyEventLimit);
  }

  /** The next poll waits twice as long, up to an hour. */
  backOff(): void {
    this.pollSeconds = Math.min(this.pollSeconds * 2, MAX_POLL_SECONDS);
  }

  /** What the next run needs to go on polling exactly where this one stopped (phase 2). */
  cursor(): RefundCursor {
    return {
      first: this.first!,
      pollSeconds: this.pollSeconds,
      nextPollAtMs: this.nextPollAtMs!,
      ambiguous: this.ambiguous,
      providerEvent: this.providerEvent,
      runs: (this.input.resume?.runs ?? 0) + 1,
    };
  }
}
